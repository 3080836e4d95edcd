"""The recipes (recipes/*.toml under `mcoder loop`, the one-step chain of stages), the shell
scripts of commands/, and the learning-proof problem family of examples/learn/.

The slow tests run each recipe at its smoke size on the tiny model, in a temp folder, with the
mcoder of this interpreter, and read back every file it wrote. The fast ones check what needs no
model: the scripts parse and answer --help, `make recipes` runs every recipe file, and the learn
problems are reproducible and solved by their reference solutions under the real judge.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcoder.jsonl import read_records
from mcoder.records import Problem, Rollout, Verdict
from mcoder.train.config import ALGOS

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ROOT / "commands"
SCRIPTS = ["ci_judge.sh", "demo.sh"]


def mcoder_cmd() -> str:
    exe = Path(sys.executable).with_name("mcoder")
    return str(exe) if exe.exists() else f"{sys.executable} -m mcoder"


def run_recipe(name: str, *args: str, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "MCODER": mcoder_cmd(), "PY": sys.executable}
    return subprocess.run(
        ["bash", str(COMMANDS / name), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def mcoder(*args: str, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*mcoder_cmd().split(), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_make_recipes_runs_every_recipe_file_at_its_smoke_size():
    """`make recipes` (what CI runs) loops over each recipe of recipes/ with smoke.toml over it."""
    done = subprocess.run(["make", "-n", "recipes", "VENV=.venv"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    algos = sorted(ALGOS)  # each algorithm's recipe (tests/loop/test_recipe_files.py: the recipes that name one)
    assert f"for recipe in {' '.join(algos)}; do" in done.stdout
    assert "loop --config $recipe --config smoke" in done.stdout
    assert "train --loop" not in done.stdout and "commands/train_" not in done.stdout


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_parses_and_has_usage(name, tmp_path):
    syntax = subprocess.run(["bash", "-n", str(COMMANDS / name)], capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, syntax.stderr
    done = run_recipe(name, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:")
    bad = run_recipe(name, "--no-such-flag", cwd=tmp_path)
    assert bad.returncode == 2
    assert "unknown argument --no-such-flag" in bad.stderr


FAMILIES = ("learn", "long")  # examples/learn (one expression) and examples/long (2 to 4)


@pytest.mark.parametrize("family", FAMILIES)
def test_family_problems_are_reproducible(tmp_path, family):
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / family / "make_problems.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for split in ("train", "heldout"):
        assert (tmp_path / f"{split}.jsonl").read_bytes() == (
            ROOT / "examples" / family / f"{split}.jsonl"
        ).read_bytes()


def expressions_of(problem: Problem) -> list[str]:
    return problem.meta.get("expressions") or [problem.meta["expression"]]


@pytest.mark.parametrize("family", FAMILIES)
def test_family_splits_share_no_expression(family):
    folder = ROOT / "examples" / family
    train = {e for p in read_records(folder / "train.jsonl", Problem) for e in expressions_of(p)}
    heldout = {e for p in read_records(folder / "heldout.jsonl", Problem) for e in expressions_of(p)}
    assert len(train) >= 150 and len(heldout) >= 80
    assert not train & heldout


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.heavy
def test_family_reference_solutions_pass_the_judge(tmp_path, family):
    """Expected outputs come from eval() in the generator: the judge must agree with them."""
    folder = ROOT / "examples" / family
    problems = tmp_path / "problems.jsonl"
    problems.write_bytes((folder / "train.jsonl").read_bytes() + (folder / "heldout.jsonl").read_bytes())
    rollouts = tmp_path / "rollouts.jsonl"
    with rollouts.open("w") as f:
        for p in read_records(problems, Problem):
            code = f"```python\n{p.reference_solutions[0]}```"
            f.write(json.dumps({"id": p.id, "problem_id": p.id, "completion": code}) + "\n")
    verdicts = tmp_path / "verdicts.jsonl"
    done = subprocess.run(
        mcoder_cmd().split() + ["judge", "-p", str(problems), "-r", str(rollouts), "-o", str(verdicts), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    got = list(read_records(verdicts, Verdict))
    assert len(got) == len(list(read_records(problems, Problem)))
    assert [v.problem_id for v in got if not v.passed] == []


# ---------------------------------------------------------------- the recipes at --smoke size


def read_jsonl(path: Path, cls) -> list:
    records = list(read_records(path, cls))
    assert records, f"{path} is empty"
    return records


@pytest.mark.slow
def test_one_step_as_single_stage_commands(tiny_model, tmp_path):
    """The chain of recipes/README.md at its smoke size: rollout -> judge -> train -> bench."""
    p, run = str(tmp_path / "problems.jsonl"), tmp_path / "run"
    run.mkdir()
    steps = [
        ["dataset", "build", str(ROOT / "examples" / "problems"), "--out", p, "-q"],
        ["rollout", "-p", p, "-m", str(tiny_model), "-o", str(run / "rollouts.jsonl"), "--n", "2",
         "--max-tokens", "32", "--temperature", "1.0", "--limit", "4", "-q"],
        ["judge", "-p", p, "-r", str(run / "rollouts.jsonl"), "-o", str(run / "verdicts.jsonl"), "-q"],
        ["train", "-m", str(tiny_model), "-r", str(run / "rollouts.jsonl"), "--verdicts", str(run / "verdicts.jsonl"),
         "-o", str(run / "checkpoint"), "--algo", "grpo", "-q"],
        ["bench", "-p", p, "--verdicts", str(run / "verdicts.jsonl"), "--markdown", str(run / "bench.md"),
         "--json", str(run / "bench.json")],
    ]  # fmt: skip
    outputs = []
    for args in steps:
        done = mcoder(*args, cwd=tmp_path)
        assert done.returncode == 0, (args[0], done.stderr[-3000:])
        outputs.append(done.stdout)
    problems = read_jsonl(Path(p), Problem)
    rollouts = read_jsonl(run / "rollouts.jsonl", Rollout)
    verdicts = read_jsonl(run / "verdicts.jsonl", Verdict)
    assert len(problems) == 48 and len(rollouts) == 8  # 4 problems x G=2
    assert {v.rollout_id for v in verdicts} == {r.id for r in rollouts}
    metrics = json.loads(outputs[3].splitlines()[0])  # train: the metrics line, then the checkpoint
    assert metrics["samples"] == 8 and outputs[3].splitlines()[1] == str(run / "checkpoint")
    assert (run / "checkpoint" / "model.safetensors").exists()
    assert json.loads((run / "bench.json").read_text())  # the table as JSON
    assert "pass@1" in (run / "bench.md").read_text()


@pytest.mark.slow
def test_demo_smoke_prints_the_before_after_table(tmp_path):
    """The demo's plumbing at its smoke size (a 10-step warm start learns nothing yet): a warm
    start, two held-out evaluations on the same problems, the loop (here with --temperature auto,
    whose choice and table are printed), plots."""
    done = run_recipe(
        "demo.sh", "--smoke", "--out", "demo", "--temperature", "auto", cwd=tmp_path, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "before RL" in done.stdout and "after RL" in done.stdout and "demo done in" in done.stdout
    assert "chosen by the probe" in done.stdout
    out = tmp_path / "demo"
    before = read_jsonl(out / "before" / "verdicts.jsonl", Verdict)
    after = read_jsonl(out / "after" / "verdicts.jsonl", Verdict)
    assert len(before) == len(after) == 6  # --smoke: 3 held-out problems x 2 samples
    assert "held-out pass@1 (3 problems of examples/learn/heldout.jsonl)" in done.stdout  # the count it read
    record = json.loads((out / "run" / "temperature.json").read_text())
    # the loop's default rule reads the judged probe (a smoke model may pass nothing: then the knee)
    assert record["rule_asked"] == "spread" and record["rule"] in ("spread", "spread->knee", "spread->rise")
    assert "at_edge" in record and len(record["table"]) == 7 == len(record["spreads"])
    train = json.loads((out / "run" / "config.json").read_text())["train"]
    assert train["mask_mode"] == "zero_advantage"
    assert train["beta"] == 0.04  # the demo's KL term to the warm start (the preset has none)
    assert "did not reach its gate" not in done.stderr  # --smoke has no gate
    plots = sorted((out / "plots").glob("*.png"))
    assert plots and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in plots)


@pytest.mark.slow
def test_the_demo_warns_when_its_warm_start_never_reached_the_gate(tiny_model, tmp_path):
    """Seed 6's warm start ran its 1000 steps with the gate at 2-12 % (held-out 2.5 %) and RL then
    gained +2.0: the demo says so before the RL steps, and still runs."""
    warm = tmp_path / "warm"
    shutil.copytree(tiny_model, warm)
    checks = [{"step": 200, "gate_pass_rate": 0.023}, {"step": 875, "gate_pass_rate": 0.125}]
    (warm / "warm_start.json").write_text(
        json.dumps({"steps": 1000, "target_pass": 0.35, "target_reached": False, "checks": checks})
    )
    done = run_recipe("demo.sh", "--smoke", "--out", "demo", "--warm", str(warm), cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "warning: the warm start did not reach its gate (35 %) in 1000 steps (best check 12.5 %)" in done.stderr
    assert "after RL" in done.stdout


@pytest.mark.slow
def test_the_demo_warm_started_from_its_own_model_keeps_it(tiny_model, tmp_path):
    """`--warm OUT/model --out OUT` removed the model before copying it onto itself (then the copy
    failed): the model already there is used as it is."""
    out = tmp_path / "demo"
    shutil.copytree(tiny_model, out / "model")
    (out / ".mcoder-demo").touch()  # an earlier demo's folder
    weights = (out / "model" / "model.safetensors").read_bytes()
    done = run_recipe("demo.sh", "--smoke", "--out", "demo", "--warm", "demo/model", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (out / "model" / "model.safetensors").read_bytes() == weights and "after RL" in done.stdout


@pytest.mark.slow
def test_the_demo_fails_with_the_evaluation_that_ran_beside_the_rl_run(tmp_path):
    """The warm start's evaluation runs in the background beside the RL run: its failure must stop
    the demo with mcoder's exit code and message, not be lost. The failure is a fault injected by
    a wrapper around mcoder (FAKE: it fails the first evaluation's rollout), as no real input makes
    that one command fail while the others pass."""
    fake = tmp_path / "fake-mcoder"
    fake.write_text(
        "#!/bin/bash\n"
        'if [[ "$1" == rollout && "$*" == *"/before/"* ]]; then echo "error: injected fault" >&2; exit 3; fi\n'
        f'exec {mcoder_cmd()} "$@"\n'
    )
    fake.chmod(0o755)
    env = {**os.environ, "MCODER": str(fake), "PY": sys.executable}
    done = subprocess.run(
        ["bash", str(COMMANDS / "demo.sh"), "--smoke", "--out", "demo"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr[-3000:]
    assert "error: injected fault" in done.stderr and "after RL" not in done.stdout
    assert not (tmp_path / "demo" / "after").exists()


@pytest.mark.slow
@pytest.mark.parametrize("algo", ALGOS)
def test_recipe_file_smoke(algo, tiny_model, tmp_path):
    """A recipe file with smoke.toml over it: two steps of the loop, then its figures."""
    p = str(tmp_path / "problems.jsonl")
    assert mcoder("dataset", "build", str(ROOT / "examples" / "problems"), "--out", p, "-q", cwd=tmp_path).returncode == 0
    train = tmp_path / "run"
    done = mcoder("loop", "--config", algo, "--config", "smoke",  # by name: the package's recipe files
                  "-m", str(tiny_model), "-p", p, "--run-dir", str(train), "-q", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    config = json.loads((train / "config.json").read_text())  # the run's settings
    assert config["train"]["algo"] == algo and config["loop"]["steps"] == 2 and config["sampling"]["n"] == 2
    steps = [json.loads(line) for line in (train / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in steps] == [1, 2]
    for step in (1, 2):
        read_jsonl(train / f"step_{step:04d}" / "rollouts.jsonl", Rollout)
        read_jsonl(train / f"step_{step:04d}" / "verdicts.jsonl", Verdict)
    assert mcoder("bench", "--run-dir", str(train), "--plots", "-q", cwd=tmp_path).returncode == 0
    plots = sorted((train / "plots").glob("*.png"))
    assert plots and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in plots)


@pytest.mark.slow
def test_ci_judge_smoke_detects_a_regression(tmp_path):
    done = run_recipe("ci_judge.sh", "--smoke", "--out", "cj", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "regressed mc-stdin-001: 1/1 -> 0/1 passed, now wrong_answer" in done.stderr
    assert "smoke ok" in done.stdout
    base = read_jsonl(tmp_path / "cj" / "baseline" / "verdicts.jsonl", Verdict)
    assert len(base) == 6 and all(v.passed for v in base)


@pytest.mark.slow
def test_ci_judge_exit_codes(tmp_path):
    """The job on its own inputs: no regression exits 0; a worse solution exits 5 and is named."""
    assert run_recipe("ci_judge.sh", "--smoke", "--out", "cj", cwd=tmp_path).returncode == 0
    cj = tmp_path / "cj"
    sol, base = cj / "solutions", cj / "baseline" / "verdicts.jsonl"
    problems = ROOT / "examples" / "ci" / "problems.jsonl"
    args = ["--problems", str(problems), "--solutions", str(sol), "--baseline", str(base)]
    (sol / "mc-stdin-001.py").write_text(
        "a, b = map(int, input().split())\nprint(a + b)\n"
    )  # the smoke run broke this one: mend it
    ok = run_recipe("ci_judge.sh", *args, "--out", "now", cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    (sol / "mc-stdin-002.py").write_text("print(input())\n")
    bad = run_recipe("ci_judge.sh", *args, "--out", "now", cwd=tmp_path)
    assert bad.returncode == 5
    assert "regressed mc-stdin-002: 1/1 -> 0/1 passed, now wrong_answer" in bad.stderr
    assert 'message="regressed mc-stdin-002' in (tmp_path / "now" / "junit.xml").read_text()


def load_learning_proof():
    from benchmarks import learning_proof

    return learning_proof


def test_learning_proof_results_list_rows_in_table_order_whatever_order_they_finished(tmp_path):
    """Seeds run side by side and save as they finish; results.md and results.json must still
    read algorithm by algorithm, seed by seed (they listed rows in finishing order before)."""
    proof = load_learning_proof()
    args = proof.parse(["--out", str(tmp_path), "--algos", "microcoder-grpo,grpo", "--seeds", "0,1"])
    finished = [
        {"algo": a, "seed": s, "warm_pass1": 40.0, "final_pass1": 50.0 + s, "delta": 10.0 + s, "minutes": 1.0}
        for a, s in [("grpo", 1), ("microcoder-grpo", 1), ("grpo", 0), ("microcoder-grpo", 0)]
    ]
    proof.save(args, finished)
    lines = [line for line in (tmp_path / "results.md").read_text().splitlines() if line.startswith("| ")][1:]
    assert [tuple(line.split(" | ")[:2]) for line in lines] == [
        ("| microcoder-grpo", "0"),
        ("| microcoder-grpo", "1"),
        ("| grpo", "0"),
        ("| grpo", "1"),
    ]
    saved = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert [(r["algo"], r["seed"]) for r in saved] == [
        ("microcoder-grpo", 0),
        ("microcoder-grpo", 1),
        ("grpo", 0),
        ("grpo", 1),
    ]


def test_learning_proof_keeps_rows_of_a_run_made_before_a_setting_existed(tmp_path):
    """A results.json written before --pass-guard existed (no such key) is the same settings as a
    rerun that leaves the new option unset; a rerun that sets it, or changes another setting,
    starts over with the old file kept aside."""
    proof = load_learning_proof()
    args = proof.parse(["--out", str(tmp_path), "--algos", "grpo", "--seeds", "0"])
    row = {"algo": "grpo", "seed": 0, "warm_pass1": 40.0, "final_pass1": 50.0, "delta": 10.0, "minutes": 1.0}
    proof.save(args, [row])
    saved = json.loads((tmp_path / "results.json").read_text())
    del saved["config"]["pass_guard"]  # as written by the script before the option existed
    (tmp_path / "results.json").write_text(json.dumps(saved))
    assert proof.load_rows(args) == [row]
    guarded = proof.parse(["--out", str(tmp_path), "--algos", "grpo", "--seeds", "0", "--pass-guard", "0.9"])
    assert proof.load_rows(guarded) == []
    assert (tmp_path / "results.json.old").exists()


@pytest.mark.slow
def test_learning_proof_smoke_writes_its_table_and_resumes(tmp_path):
    """benchmarks/learning_proof.py end to end at its plumbing size, then rerun: the rerun finds
    every (algo, seed) in results.json and measures nothing again."""
    out = tmp_path / "learn"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "learning_proof.py"), "--out", str(out), "--smoke"]
    cmd += ["--seeds", "0", "--algos", "microcoder-grpo"]
    env = {**os.environ, "MCODER": mcoder_cmd()}
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert first.returncode == 0, first.stderr[-3000:]
    rows = json.loads((out / "results.json").read_text())["rows"]
    assert [(r["algo"], r["seed"]) for r in rows] == [("microcoder-grpo", 0)]
    assert 0.0 <= rows[0]["final_pass1"] <= 100.0
    assert "| microcoder-grpo | 0 |" in (out / "results.md").read_text()
    bench = json.loads((out / "seed0" / "eval-microcoder-grpo" / "bench.json").read_text())
    assert bench["baseline"] and bench["cells"]  # the per-run bench table, the warm start as baseline
    assert sorted((out / "plots").glob("*.png"))
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "already measured" in again.stderr
    assert " train " not in again.stderr  # no `mcoder train` call the second time
    assert json.loads((out / "results.json").read_text())["rows"] == rows


@pytest.mark.slow
def test_warm_start_gate_checks_unseen_train_problems_and_records_them(tmp_path):
    """--target-pass: the gate's problems are kept out of the supervised pass, checked every
    --check-every steps from --first-check on with the real judge, and the checks are recorded
    beside the model."""
    out = tmp_path / "warm"
    cmd = [sys.executable, str(ROOT / "examples" / "learn" / "warm_start.py")]
    cmd += ["--problems", str(ROOT / "examples" / "learn" / "train.jsonl"), "--out", str(out)]
    cmd += ["--steps", "6", "--target-pass", "1.0", "--check-every", "2", "--check-problems", "3"]
    cmd += ["--gate", "sampled", "--check-n", "2", "--max-tokens", "8", "--first-check", "4"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "warm_start.json").read_text())
    assert summary["steps"] == 6  # a random model never reaches 100 %: the pass runs to the end
    assert [c["step"] for c in summary["checks"]] == [4, 6]
    assert all(0.0 <= c["gate_pass_rate"] <= 1.0 for c in summary["checks"])
    assert "on 3 unseen train problems" in done.stderr
    assert (out / "config.json").exists() and not (tmp_path / "warm.part").exists()


@pytest.mark.slow
def test_warm_start_slows_down_near_the_band_and_keeps_a_checked_model(tmp_path):
    """--approach 0: the approach phase starts at the first check, after which checks come every
    --fine-every steps and the model written is a checked one (the last on a tie of rates)."""
    out = tmp_path / "warm"
    cmd = [sys.executable, str(ROOT / "examples" / "learn" / "warm_start.py")]
    cmd += ["--problems", str(ROOT / "examples" / "learn" / "train.jsonl"), "--out", str(out)]
    cmd += ["--steps", "7", "--target-pass", "1.0", "--check-every", "4", "--check-problems", "2"]
    cmd += ["--gate", "sampled", "--check-n", "2", "--max-tokens", "8"]
    cmd += ["--approach", "0", "--fine-every", "1"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "warm_start.json").read_text())
    assert [c["step"] for c in summary["checks"]] == [4, 5, 6, 7]
    rates = [c["gate_pass_rate"] for c in summary["checks"]]
    best = min(abs(r - 1.0) for r in rates)
    kept = max(c["step"] for c in summary["checks"] if abs(c["gate_pass_rate"] - 1.0) == best)
    assert summary["kept_step"] == kept
    assert f"kept the model of step {kept}" in done.stderr


def load_warm_start():
    from mcoder import warmstart

    return warmstart


@pytest.mark.heavy
def test_the_likelihood_gate_is_the_mean_probability_of_the_reference_programs():
    """The gate's batched, padded forward equals the product of next-token probabilities of each
    reference program computed alone (no padding), averaged over the gate's problems."""
    import torch

    from mcoder.testing import TinySpec, build_model

    warm = load_warm_start()
    problems = list(read_records(ROOT / "examples" / "learn" / "train.jsonl", Problem))[:5]
    spec = TinySpec(layers=1, seed=3)
    tokenizer = warm.build_tokenizer(problems, spec.vocab)
    model = build_model(spec, len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)
    gate = warm.LikelihoodGate(problems, tokenizer, target=0.5)
    alone = []
    with torch.no_grad():
        for prompt, completion in warm.examples(problems, tokenizer):
            logits = model(input_ids=torch.tensor([prompt + completion])).logits[0].double()
            logp = torch.log_softmax(logits, dim=-1)
            alone.append(sum(logp[len(prompt) - 1 + i, t].item() for i, t in enumerate(completion)))
    assert len({len(p) + len(c) for p, c in warm.examples(problems, tokenizer)}) > 1  # padding is exercised
    expected = sum(torch.tensor(alone).exp().tolist()) / len(alone)
    assert gate.measure(model) == pytest.approx(expected, rel=1e-4, abs=1e-12)
    assert not gate.reached(model, 7)  # a random model is nowhere near 0.5
    assert gate.history == [{"step": 7, "gate_reference_prob": pytest.approx(expected, rel=1e-4, abs=1e-12)}]
    assert model.training  # the gate hands the model back in training mode


@pytest.mark.slow
def test_warm_start_likelihood_gate_checks_every_step_near_the_band(tmp_path):
    """The default gate: checked every --check-every steps, then every step from the approach
    phase on; the same gate problems for every seed; the closest checked model is written."""
    out = tmp_path / "warm"
    cmd = [sys.executable, str(ROOT / "examples" / "learn" / "warm_start.py")]
    cmd += ["--problems", str(ROOT / "examples" / "learn" / "train.jsonl"), "--out", str(out)]
    cmd += ["--steps", "7", "--target-pass", "1.0", "--check-every", "3", "--check-problems", "4"]
    cmd += ["--approach", "0"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "warm_start.json").read_text())
    assert summary["gate"] == "likelihood" and summary["gate_problems"] == 4
    assert [c["step"] for c in summary["checks"]] == [3, 4, 5, 6, 7]
    values = [c["gate_reference_prob"] for c in summary["checks"]]
    assert all(0.0 <= v < 1.0 for v in values)  # a random model's P(reference) may underflow to 0
    best = min(abs(v - 1.0) for v in values)
    closest = [c["step"] for c in summary["checks"] if abs(c["gate_reference_prob"] - 1.0) == best]
    assert summary["kept_step"] == max(closest)
    assert "P(reference)" in done.stderr and "on 4 unseen train problems" in done.stderr


def test_the_warm_start_keeps_the_check_closest_to_its_target():
    warm = load_warm_start()
    checks = [(100, 0.20, "a"), (110, 0.30, "b"), (120, 0.38, "c"), (130, 0.62, "d")]
    assert warm.closest_check(checks, 0.35)[0] == 120
    assert warm.closest_check(checks, 0.30)[0] == 110
    assert warm.closest_check([(1, 0.25, "a"), (2, 0.75, "b")], 0.5)[0] == 2  # a tie: the later
    assert warm.closest_check(checks[:1] + checks[3:], 0.35)[0] == 100  # an overshoot is not kept


@pytest.mark.slow
def test_long_ablation_smoke_writes_its_tables_and_resumes(tmp_path):
    """benchmarks/long_ablation.py at its plumbing size on two arms (one of them the
    diversity-determined temperature): a row per (arm, seed) with the run's figures, the chosen T
    read from the run folder, a table per series, plots, and a rerun that trains nothing."""
    out = tmp_path / "long"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "long_ablation.py"), "--out", str(out), "--smoke"]
    cmd += ["--seeds", "0", "--arms", "trunc-all,auto"]
    env = {**os.environ, "MCODER": mcoder_cmd()}
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert first.returncode == 0, first.stderr[-3000:]
    rows = json.loads((out / "results.json").read_text())["rows"]
    assert [(r["arm"], r["seed"]) for r in rows] == [("trunc-all", 0), ("auto", 0)]
    assert rows[0]["temperature"] == "1" and rows[1]["temperature"] not in ("", "-")
    assert all(0.0 <= r["truncated_all"] <= 1.0 and r["length_first"] > 0 for r in rows)
    md = (out / "results.md").read_text()
    assert "### truncation" in md and "### temperature" in md and "| auto | 0 |" in md
    for series in ("truncation", "temperature"):
        assert sorted((out / f"plots-{series}").glob("*.png"))
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert " train " not in again.stderr
    assert json.loads((out / "results.json").read_text())["rows"] == rows


@pytest.mark.parametrize("script", ["learning_proof.py", "long_ablation.py"])
def test_a_second_measurement_into_the_same_folder_exits_2_and_touches_nothing(tmp_path, script):
    """Two runs into one --out would delete each other's run folders: the second waits for no one,
    it exits 2 naming the lock's holder, before writing anything."""
    from mcoder.outputs import hold_lock

    out = tmp_path / "out"
    cmd = [sys.executable, str(ROOT / "benchmarks" / script), "--out", str(out), "--smoke", "--seeds", "0"]
    with hold_lock(out):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    assert str(os.getpid()) in done.stderr
    assert not out.exists()  # not even the folder


class WeightGate:
    """A gate that reads a number stored in the model's one weight (a real torch module): the
    look-back's bisection is checked on values chosen here, without training."""

    @staticmethod
    def make(target: float):
        warm = load_warm_start()

        class Gate(warm.Gate):
            KEY, LABEL = "gate_value", "value"

            def measure(self, model, step: int) -> float:
                return float(model.weight.item())

        return Gate([], target)


def test_a_check_far_past_the_target_is_looked_back_from_by_bisection():
    """Seed 3 of the demo read 15.6 % at step 175 and 58.6 % at 200 (target 35 %): the copies
    taken in between are read by bisection and the closest reading of all is kept."""
    import torch

    warm = load_warm_start()
    model = torch.nn.Linear(1, 1, bias=False)
    values = {180: 0.20, 185: 0.33, 190: 0.45, 195: 0.50}
    copies = {}
    for step, v in values.items():
        model.weight.data.fill_(v)
        copies[step] = {k: t.clone() for k, t in model.state_dict().items()}
    model.weight.data.fill_(0.62)
    gate = WeightGate.make(0.35)
    assert gate.reached(model, 200)
    overshoot = (200, 0.62, {k: t.clone() for k, t in model.state_dict().items()})
    step, value, weights = warm.look_back_checks(model, gate, copies, overshoot, 0.35)
    assert (step, round(value, 2)) == (185, 0.33)
    assert weights["weight"].item() == pytest.approx(0.33)
    assert [c["step"] for c in gate.history] == [200, 185, 190]  # two checks, both recorded
    # the overshooting check itself stays a candidate: nothing between was closer
    gate = WeightGate.make(0.58)
    model.weight.data.fill_(0.62)
    assert gate.reached(model, 200)
    assert warm.look_back_checks(model, gate, copies, overshoot, 0.58)[0] == 200


@pytest.mark.heavy
def test_a_first_check_far_past_the_target_is_looked_back_from_to_the_start(tmp_path, monkeypatch):
    """Seed 5 of the demo read 61.7 % at its first check (step 200): the pass had kept copies only
    from step 180 on, all past the band, and RL from that start gained +6.5. Before the first check
    the copies go back to the start. The gate here is a stand-in that reads the step (0.1 per step,
    so the band's crossing lies before the window of copies the pass used to keep); the pass and
    the model are real."""
    warm = load_warm_start()

    class StepGate(warm.Gate):
        KEY, LABEL = "gate_value", "value"

        def __init__(self, problems, tokenizer, *, target):
            super().__init__(problems, target)

        def measure(self, model, step: int) -> float:
            return step / 10

    monkeypatch.setattr(warm.supervised, "LikelihoodGate", StepGate)
    config = warm.WarmStartConfig(
        steps=20, batch=2, lr=1e-3, seed=0, layers=1, target_pass=0.35, gate="likelihood", check_every=5,
        first_check=10, check_problems=4, look_back=2, overshoot=0.1,
    )  # fmt: skip
    out = warm.warm_start(str(ROOT / "examples" / "learn" / "train.jsonl"), str(tmp_path / "warm"), config)
    summary = json.loads((out / "warm_start.json").read_text())
    # the first check (1.0) overshoots; bisection over the copies of steps 2-8 reads 4, then 2
    assert [c["step"] for c in summary["checks"]] == [10, 4, 2]
    assert summary["kept_step"] == 4
