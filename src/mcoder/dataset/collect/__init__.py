"""Dataset step 1 of 4 (the paper's collect): find the source files and read their rows.

``sources``: local files and folders (JSONL, JSON, parquet, saved datasets); ``hub``: datasets
by name (``hf:NAME``); ``step``: every row of every source, with the adapter chosen for its file.
"""
