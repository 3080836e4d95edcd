"""``mcoder show``: one rollout batch, read by a person.

``collect`` joins what the stages wrote (rollouts, verdicts, the loop's per-sample training
record, the problems) into ``Shown`` samples and applies the filters; ``terminal`` renders a
summary line per group or each sample in full with rich; ``html`` writes the same as one
self-contained page with the pass@k table and the training plots.
"""
