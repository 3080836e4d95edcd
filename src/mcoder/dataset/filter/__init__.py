"""Dataset step 3 of 4, filter: from converted problems to the ones worth training on.

``steps`` holds the step (``FilterConfig`` and the filters it turns on, cheapest first); the
other modules are the filters that need more than a few lines: ``special_judge`` (statements
that accept several outputs), ``dedup`` (exact and MinHash near-duplicates) and ``decontam``
(benchmark overlap). The difficulty band (the pass rate from the target model's verdicts) is
``difficulty/measured.py``.
"""
