"""Dataset step 2 of 4 (the paper's process): each collected row as a Problem, or the reason
it gives none.

``step``: the step (ids, duplicates, interactive problems); ``adapters/``: one module per source
format (``detect`` a row's shape, ``convert`` it); what the adapters share: ``fields`` (reading a
row's fields), ``decoders`` (bounded decoders), ``statement`` (statement text), ``asserts``
(assert-based tests), ``check`` (the last check of a converted problem).
"""
