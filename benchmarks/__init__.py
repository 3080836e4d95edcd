"""The measurements behind mcoder's figures: each module a benchmark, run from the repository root
as ``python -m benchmarks.NAME`` or ``python benchmarks/NAME.py`` (its docstring says how), with
the plumbing they share (a stage runner, the tiny model, results through the output guard,
resuming) in ``benchmarks.common``."""
