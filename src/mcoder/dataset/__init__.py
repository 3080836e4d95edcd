"""Stage 1 of mcoder, ``mcoder dataset build``: public problem sets in, one problems.jsonl out.

The paper's four stages are this stage's four steps, a folder each, chained by ``build.build``:

1. ``collect/``: find the data files (``sources``, ``hub``) and read their rows (``step``);
2. ``process/``: each row as a Problem through its format's adapter (``adapters/``, with
   ``fields``, ``plain``, ``statement``, ``asserts``, ``check``), or the reason it gives none;
3. ``filter/``: ``steps.FilterConfig`` and its steps (tests, dates, length, special judge,
   dedup, decontamination, difficulty band, test cap);
4. ``verify/``: reference solutions through the judge, wrong and flaky tests dropped.

``refine`` runs filter and verify over the stream; ``tally`` counts what every step kept and
set aside (the tables), ``report`` writes it out (``--report``); ``budget`` bounds what a row
may expand to (collect and process); ``config.BuildConfig`` holds the settings.

``difficulty/`` is the problems' difficulty: measured (the pass-rate band, a filter step) and
predicted by a model (``mcoder dataset difficulty predict | calibrate | select``).
"""
