"""Stage 3, filter: from converted problems to the ones worth training on.

``steps`` holds the stage (``FilterConfig`` and the steps it turns on, cheapest first); the
other modules are the steps that need more than a few lines: ``special_judge`` (statements that
accept several outputs), ``dedup`` (exact and MinHash near-duplicates), ``decontam`` (benchmark
overlap) and ``difficulty`` (the pass-rate band from the target model's verdicts).
"""
