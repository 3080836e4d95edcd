"""Files of other tools that mcoder reads and writes, shared by the stages that meet them.

``lcb_results``: LiveCodeBench's per-problem evaluation file (read by ``dataset``, ``judge``,
``bench`` and ``show``, written by ``bench``); ``buckets``: a problem's difficulty and platform as
the tables and that file name them.
"""
