"""Definitions of the example problems; examples/make_problems.py turns them into JSONL."""
