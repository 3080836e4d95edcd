"""Stage 5: pass@k by platform and difficulty, comparisons against a baseline, training plots."""
