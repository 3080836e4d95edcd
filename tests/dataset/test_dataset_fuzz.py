"""Fuzzing ``dataset build`` (hypothesis): arbitrary rows in the shape of every source format the
adapters' registry lists, with bombs, odd types and odd text in any field.

Properties: the build ends within its budgets, either with exit 3 naming the file and row, or
with every input row written or reported (written rows exactly as their adapter converts them,
nothing twice); no row error is ever one the adapters did not foresee (``UnreadableRow``, the
net in ``process``). Also the decoders alone: the plain-data unpickler and the JSON-text reader
on arbitrary bytes, and the check that stands before the writer on arbitrary problems.

Short runs are in ``make test``; ``@pytest.mark.slow`` runs many more examples.
"""

from __future__ import annotations

import json
import pickle
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataset_rows import (
    CALL,
    CONTESTS,
    STDIN,
    apps_row,
    billion_laughs,
    compressed_pickle,
    hub_cc_row,
    humaneval_row,
    lcb_compress,
    lcb_row,
    leetcode_row,
    memo_bomb_cases,
    nested_json,
    rllm_cc_row,
    rllm_cf_row,
    sandboxfusion_cc_row,
    sandboxfusion_lcb_row,
    taco_row,
    zlib_bomb,
)
from mcoder import console
from mcoder.dataset.budget import Limits, OverBudget
from mcoder.dataset.build import build
from mcoder.dataset.collect.sources import RowRef
from mcoder.dataset.config import BuildConfig
from mcoder.dataset.process.adapters import ADAPTERS
from mcoder.dataset.process.check import check_problem
from mcoder.dataset.process.decoders import Malformed, json_text, unpickle
from mcoder.dataset.process.step import UnreadableRow
from mcoder.errors import DataError
from mcoder.jsonl import dumps
from mcoder.records import Problem, Test, to_dict

# Small budgets: a bomb reaches one in milliseconds, and real-sized rows stay well inside.
LIMITS = Limits(
    row_bytes=1 << 20,
    decompressed_bytes=1 << 20,
    decoded_size=1 << 20,
    depth=32,
    int_digits=400,
    tests=500,
    test_bytes=1 << 16,
    problem_bytes=1 << 20,
)


def _mcoder_row() -> dict:
    p = Problem(
        "own-1", "own", "Add two numbers.", [Test("1 2\n", "3\n")], platform="atcoder", meta={"k": [1]}
    )
    return to_dict(p)


def _lcb_results_row() -> dict:
    return lcb_row(CALL[0], 0) | {"code_list": ["def f(): pass", "x"], "graded_list": [True, False]}


# Rows in each format's shape(s), by adapter name: a new adapter needs its own here (checked).
SEEDS: dict[str, list[dict]] = {
    "mcoder": [_mcoder_row()],
    "humaneval": [humaneval_row(CALL[0], 0)],
    "lcb": [
        lcb_row(STDIN[0], 0),
        lcb_row(CALL[1], 1),
        sandboxfusion_lcb_row(STDIN[1], 0),
        sandboxfusion_lcb_row(CALL[0], 1),
    ],
    "lcb-results": [_lcb_results_row()],
    "leetcode": [leetcode_row(CALL[0])],
    "codecontests": [
        sandboxfusion_cc_row(CONTESTS[0], 0),
        rllm_cc_row(CONTESTS[1]),
        hub_cc_row(CONTESTS[2], 2),
    ],
    "codeforces": [rllm_cf_row(STDIN[5])],
    "apps": [apps_row(STDIN[0], 7), apps_row(CALL[0], 8)],
    "taco": [taco_row(STDIN[1]), taco_row(CALL[1])],
}

BOMBS = [
    compressed_pickle(memo_bomb_cases(20_000)),
    compressed_pickle({"input_output": billion_laughs(12, 10)}),
    compressed_pickle({"input_output": json.dumps({"inputs": ["1"] * 600, "outputs": ["1"] * 600})}),
    lcb_compress([{"input": "1", "output": "1", "testtype": "stdin"}] * 600),
    nested_json(5_000),
    zlib_bomb(2 << 20),
    "[" + "9" * 1_000 + "]",
    '["\\ud800"]',
    '{"inputs": ["\\udfff"], "outputs": ["1"]}',
    "[NaN]",
    "[1e999]",
    "x" * (1 << 16),
    compressed_pickle("[" + "1," * 10 + "1]"),
]

odd_text = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        ["", " ", "\u200b", "\u00ad", "аео", "\n" * 50, "```python\n", "def f(", "### Question:"]
    ),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | odd_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(odd_text, inner, max_size=4),
    max_leaves=10,
)
replacement = st.one_of(
    json_values,
    json_values.map(json.dumps),  # JSON held as text, of another shape
    st.sampled_from(BOMBS),
    st.just(None),
)


@st.composite
def rows(draw, name: str) -> dict:
    """A seed row of ``name`` with some fields replaced, dropped or added."""
    row = dict(draw(st.sampled_from(SEEDS[name])))
    for key in draw(st.lists(st.sampled_from(sorted(row)), max_size=3, unique=True)):
        if draw(st.integers(0, 5)) == 0:
            del row[key]
        else:
            row[key] = draw(replacement)
    if draw(st.booleans()):
        row[draw(odd_text)] = draw(json_values)
    return row


def check_build(name: str, data: list[dict]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "rows.jsonl"
        src.write_text("".join(json.dumps(r) + "\n" for r in data))
        out = Path(tmp) / "out.jsonl"
        cfg = BuildConfig(sources=[str(src)], out=str(out), format=name, limits=LIMITS)
        try:
            with mock.patch.object(console, "_quiet", True):  # no tables: the build's work only
                tally = build(cfg)
        except DataError as e:
            assert not isinstance(e, UnreadableRow), f"an error the adapter did not foresee: {e.message}"
            assert str(src) in e.message  # names the file, and the row unless no row gave a problem
            assert "no problems" in e.message or e.line is not None or " row " in e.message
            return
        lines = out.read_bytes().splitlines()
        written = [orjson.loads(line) for line in lines]
        assert len({w["id"] for w in written}) == len(written)  # nothing twice
        assert len(written) + tally.skipped == len(data) == tally.files[0].rows  # every row accounted
        adapter = ADAPTERS[name]
        data = [orjson.loads(line) for line in src.read_bytes().splitlines()]  # as the build read them
        for w in written:  # exactly as its adapter converts its row
            i = w["meta"].get("source_row")
            if i is None:  # mcoder records keep their own meta: the first row of that id
                i = next(n for n, r in enumerate(data) if r.get("id") == w["id"])
            ref = RowRef(str(src), "rows", i, line=i + 1, limits=LIMITS)
            assert orjson.loads(dumps(adapter.convert(data[i], ref))) == w


def test_the_seeds_cover_every_adapter_of_the_registry():
    assert set(SEEDS) == set(ADAPTERS)


@st.composite
def row_sets(draw):
    name = draw(st.sampled_from(sorted(ADAPTERS)))
    return name, draw(st.lists(rows(name), min_size=1, max_size=4))


SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=120, deadline=None, suppress_health_check=SLOW_OK)
@given(row_sets())
@pytest.mark.heavy
def test_a_build_over_arbitrary_rows_of_any_format_is_bounded_exact_and_honest(case):
    check_build(*case)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=SLOW_OK)
@given(row_sets())
def test_a_build_over_arbitrary_rows_long_run(case):
    check_build(*case)


# ---------------------------------------------------------------- the decoders alone

plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text() | st.binary(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(plain, st.integers(3, 5))
def test_plain_data_unpickles_as_pickle_reads_it(value, protocol):
    assert unpickle(pickle.dumps(value, protocol=protocol), LIMITS) == value


def _bytes_near_pickles(value: Any, cuts: list[int]) -> bytes:
    data = bytearray(pickle.dumps(value, protocol=4))
    for c in cuts:
        if data:
            data[c % len(data)] = (data[c % len(data)] + 1) % 256
    return bytes(data)


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=200),
        st.builds(_bytes_near_pickles, plain, st.lists(st.integers(0, 500), max_size=3)),
    )
)
def test_the_unpickler_raises_only_its_two_errors_on_any_bytes(data):
    try:
        unpickle(data, LIMITS)
    except (Malformed, OverBudget):
        pass


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), json_values.map(json.dumps), st.sampled_from(BOMBS)))
def test_the_json_text_reader_raises_only_its_two_errors(text):
    try:
        json_text(text, LIMITS)
    except (Malformed, OverBudget):
        pass


any_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=20)
meta_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | any_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(any_text, any_text, st.lists(st.tuples(any_text, any_text), max_size=3), meta_values)
def test_a_problem_the_check_passes_is_written_exactly(pid, question, tests, meta):
    """The writer is never handed what it cannot write (lone surrogates, NaN, huge integers)."""
    p = Problem(pid, "s", question, [Test(i, o) for i, o in tests], meta={"m": meta})
    try:
        check_problem(p, RowRef("f.jsonl", "f", 0, line=1, limits=LIMITS))
    except (DataError, OverBudget):
        return
    assert orjson.loads(dumps(p)) == json.loads(json.dumps(to_dict(p)))
