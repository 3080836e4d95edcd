"""Problem difficulty, measured and predicted (``mcoder dataset difficulty``, and the build's
band filter).

``measured``: pass rates from a target model's verdicts, kept to a band (a filter step);
``predict``: a model rates each problem on weighted dimensions; ``calibrate``: the rating mapped
to a pass rate; ``select``: problems kept by their predicted pass rate.
"""
