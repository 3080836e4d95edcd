"""Dataset step 4 of 4 (the paper's verify): reference solutions through the judge; only the
tests they pass are kept. ``step`` holds it.
"""
