"""Stage 1 of mcoder, ``mcoder dataset build``: public problem sets in, one problems.jsonl out.

The paper's four steps, one module (or folder) each, chained by ``build.build``:

- ``collect``: find the data files (``sources``) and pick each one's format (``adapters/``);
- ``process``: each row as a Problem (``adapters/``, with ``fields``, ``statement``,
  ``asserts``), or the reason it gives none;
- ``filter/``: ``steps.FilterConfig`` and its steps (tests, dates, length, special judge,
  dedup, decontamination, difficulty band, test cap);
- ``verify``: reference solutions through the judge, wrong and flaky tests dropped.

``refine`` runs filter and verify over the stream; ``tally`` counts what every stage kept and
set aside (the tables), ``report`` writes it out (``--report``); ``config.BuildConfig`` holds the
settings.
"""
