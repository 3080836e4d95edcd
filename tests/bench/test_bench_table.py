"""The platform x difficulty table on a hand-made set with known cells, deltas, failure shares."""

import pytest

from bench_data import BASELINE, write_problems, write_verdicts
from mcoder.bench.load import fresh_tallies, load_problems, tally_verdicts
from mcoder.bench.render import grid, markdown, summary, to_json
from mcoder.bench.table import build_table, delta
from mcoder.errors import DataError
from mcoder.formats.buckets import UNKNOWN, difficulty_bucket

BOUNDS = (1400.0, 2000.0)


def tables(tmp_path, baseline=False):
    problems = load_problems(write_problems(tmp_path / "problems.jsonl"), BOUNDS)
    tallies = fresh_tallies(problems)
    tally_verdicts(write_verdicts(tmp_path / "verdicts.jsonl"), tallies, "problems.jsonl")
    table = build_table(tallies.values(), (1, 2))
    if not baseline:
        return table
    base = fresh_tallies(problems)
    tally_verdicts(write_verdicts(tmp_path / "base.jsonl", BASELINE), base, "problems.jsonl")
    return table, build_table(base.values(), (1, 2))


def test_difficulty_buckets():
    assert [difficulty_bucket(v, BOUNDS) for v in ("EASY", "Medium", "hard")] == ["easy", "medium", "hard"]
    assert [difficulty_bucket(v, BOUNDS) for v in ("introductory", "interview", "competition")] == [
        "easy",
        "medium",
        "hard",
    ]
    ratings = ["800", "1399", "1400", "1999.5", "2000", "3500"]
    assert [difficulty_bucket(v, BOUNDS) for v in ratings] == [
        "easy",
        "easy",
        "medium",
        "medium",
        "hard",
        "hard",
    ]
    assert difficulty_bucket("1500", (1600.0, 2400.0)) == "easy"
    for odd in (None, "", "A", "nan", "-5"):
        assert difficulty_bucket(odd, BOUNDS) == UNKNOWN


def test_cells_match_hand_computed_values(tmp_path):
    t = tables(tmp_path)
    assert t.rows == ["atcoder", "codeforces", "leetcode", "all"]
    assert t.columns == ["easy", "medium", "hard", "all"]
    p1 = {(row, col): t.cell(row, col).pass_at[1] for row in t.rows for col in t.columns}
    assert p1[("atcoder", "easy")] == 0.5
    assert p1[("atcoder", "hard")] == 0.0
    assert p1[("atcoder", "all")] == 0.25
    assert p1[("codeforces", "all")] == 1.0
    assert p1[("codeforces", "hard")] is None  # only p5, which has no verdicts
    assert p1[("all", "easy")] == 0.75
    assert p1[("all", "medium")] == 0.75
    assert p1[("all", "all")] == pytest.approx(3.0 / 5)
    everything = t.cell()
    assert (everything.problems, everything.unevaluated, everything.samples) == (5, 1, 13)
    assert everything.pass_at[2] == pytest.approx((5 / 6 + 0 + 1 + 1) / 4)
    assert everything.not_computable == {1: 0, 2: 1}
    assert t.cell("codeforces", "medium").pass_at[2] is None
    assert t.cell("codeforces", "hard").unevaluated == 1
    assert t.unevaluated == ["p5"]


def test_failure_shares_over_non_accepted_samples(tmp_path):
    shares = tables(tmp_path).failure_shares()
    assert shares["wrong_answer"] == pytest.approx(2 / 5)
    for status in ("time_limit", "runtime_error", "no_code"):
        assert shares[status] == pytest.approx(1 / 5)
    assert shares["memory_limit"] == shares["compile_error"] == 0.0
    assert sum(shares.values()) == pytest.approx(1.0)


def test_baseline_delta(tmp_path):
    t, base = tables(tmp_path, baseline=True)
    d = delta(t, base)
    assert base.cell("atcoder", "all").pass_at[1] == pytest.approx((0.25 + 0.5) / 2)
    assert d[("atcoder", "all")][1] == pytest.approx(0.25 - 0.375)
    assert d[("all", "all")][1] == pytest.approx(0.6 - 0.35)
    assert d[("codeforces", "hard")][1] is None
    header, rows = grid(t, 1, base)
    assert header[-1] == "Δ all" and rows[-1][0] == "Δ"
    assert rows[-1][header.index("all")] == "+25.0"
    assert rows[0] == ["atcoder", "50.0 (1)", "-", "0.0 (1)", "25.0 (2)", "-12.5"]
    assert summary(t, base) == (
        "pass@1 all: 60.0% over 5 problems (13 samples), 1 unevaluated; baseline 35.0% (+25.0 points)"
    )


def test_markdown_and_json_carry_the_same_numbers(tmp_path):
    t, base = tables(tmp_path, baseline=True)
    md = markdown(t, base, ["a note"])
    assert "| atcoder | 50.0 (1) | - | 0.0 (1) | 25.0 (2) | -12.5 |" in md
    assert "| all | 75.0 (2) | 75.0 (2) | 0.0 (1) | 60.0 (5) | +25.0 |" in md
    assert "| all | 91.7 (2) | 100.0 (1/2) |" in md  # pass@2: p4 has a single sample
    assert "- a note" in md
    doc = to_json(t, base, [], BOUNDS)
    cell = next(c for c in doc["cells"] if (c["platform"], c["difficulty"]) == ("all", "all"))
    assert cell["pass_at"]["1"] == pytest.approx(0.6)
    assert cell["delta"]["1"] == pytest.approx(0.25)
    assert cell["not_computable"]["2"] == 1
    assert doc["unevaluated"] == {"count": 1, "ids": ["p5"]}
    assert doc["failures"]["counts"]["wrong_answer"] == 2


def test_verdict_of_a_missing_problem_names_the_line(tmp_path):
    problems = load_problems(write_problems(tmp_path / "problems.jsonl"), BOUNDS)
    path = write_verdicts(tmp_path / "v.jsonl", {"p1": ["accepted"], "nope": ["accepted"]})
    with pytest.raises(DataError) as e:
        tally_verdicts(path, fresh_tallies(problems), "problems.jsonl")
    assert f"{path}:2" in e.value.message and "problem_id" in e.value.message and "'nope'" in e.value.message


def test_duplicate_rollout_is_a_data_error(tmp_path):
    problems = load_problems(write_problems(tmp_path / "problems.jsonl"), BOUNDS)
    path = write_verdicts(tmp_path / "v.jsonl", {"p1": ["accepted"]})
    path.write_text(path.read_text() * 2)
    with pytest.raises(DataError, match=r"v.jsonl:2.*rollout_id"):
        tally_verdicts(path, fresh_tallies(problems), "problems.jsonl")


def test_unknown_platform_and_difficulty_get_their_own_row_and_column(tmp_path):
    path = write_problems(tmp_path / "p.jsonl", [("x", None, "C"), ("y", "codeforces", "800")])
    problems = load_problems(path, BOUNDS)
    tallies = fresh_tallies(problems)
    tally_verdicts(
        write_verdicts(tmp_path / "v.jsonl", {"x": ["accepted"], "y": ["wrong_answer"]}), tallies, "p"
    )
    t = build_table(tallies.values(), (1,))
    assert t.rows == ["codeforces", UNKNOWN, "all"]
    assert t.columns == ["easy", "medium", "hard", UNKNOWN, "all"]
    assert t.cell(UNKNOWN, UNKNOWN).pass_at[1] == 1.0
    assert t.cell().pass_at[1] == 0.5


def test_duplicate_problem_id_names_the_line(tmp_path):
    path = write_problems(tmp_path / "p.jsonl", [("a", "x", "easy"), ("b", "x", "easy"), ("a", "y", "hard")])
    with pytest.raises(DataError, match=r"p.jsonl:3.*field 'id'"):
        load_problems(path, BOUNDS)


def test_empty_verdicts_leave_every_problem_unevaluated(tmp_path):
    tallies = fresh_tallies(load_problems(write_problems(tmp_path / "p.jsonl"), BOUNDS))
    (tmp_path / "v.jsonl").write_text("")
    assert tally_verdicts(tmp_path / "v.jsonl", tallies, "p") == 0
    t = build_table(tallies.values(), (1,))
    assert t.cell().pass_at[1] is None and len(t.unevaluated) == 6
    assert summary(t, None) == "pass@1 all: n/a over 0 problems (0 samples), 6 unevaluated"


def test_score_api_returns_tables_and_notes_without_printing(tmp_path, capsys):
    from mcoder.bench.stage import score

    problems = write_problems(tmp_path / "p.jsonl")
    result = score(
        problems, write_verdicts(tmp_path / "v.jsonl"), (1, 2), write_verdicts(tmp_path / "b.jsonl", BASELINE)
    )
    assert result.table.cell().pass_at[1] == pytest.approx(0.6)
    assert result.baseline.cell().pass_at[1] == pytest.approx(0.35)
    assert result.summary.endswith("baseline 35.0% (+25.0 points)")
    assert any(
        n.startswith("pass@2 is not computable for 1 of 5") and n.endswith(": p4") for n in result.notes
    )
    assert capsys.readouterr() == ("", "")
