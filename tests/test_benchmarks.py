"""benchmarks/ as a package: every benchmark runs as ``python -m benchmarks.NAME`` and as
``python benchmarks/NAME.py``, none edits sys.path or reaches into tests/, and the plumbing they
share (benchmarks/common.py) runs stages, writes results through the output guard and resumes a
measurement only with the same settings."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks import common

from conftest import sandbox_or_skip
from mcoder.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py") if p.stem not in ("__init__", "common"))


def test_the_package_holds_every_benchmark():
    assert len(BENCHMARKS) >= 17 and "learning_proof" in BENCHMARKS and "long_ablation" in BENCHMARKS


@pytest.mark.parametrize("name", BENCHMARKS)
def test_no_benchmark_edits_sys_path_or_imports_tests_or_another_benchmark(name):
    tree = ast.parse((ROOT / "benchmarks" / f"{name}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "path":  # sys.path.insert / append / ...
            assert not (isinstance(node.value, ast.Name) and node.value.id == "sys"), f"{name}: sys.path"
        if isinstance(node, ast.ImportFrom | ast.Import):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            for m in modules:
                assert not m.startswith("tests"), f"{name} imports {m}"
                others = {f"benchmarks.{b}" for b in BENCHMARKS} | set(BENCHMARKS)
                names = [f"{m}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) else [m]
                assert not others & {m, *names}, f"{name} imports another benchmark ({m})"


@pytest.mark.parametrize("form", ["file", "module"])
def test_a_benchmark_answers_help_in_both_forms_from_the_root(form):
    """The two documented forms; judge_accuracy needs no model, so it is quick to start."""
    cmd = [sys.executable, "benchmarks/judge_accuracy.py"] if form == "file" else [
        sys.executable, "-m", "benchmarks.judge_accuracy"]  # fmt: skip
    done = subprocess.run([*cmd, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:") and "--cases" in done.stdout


def test_judge_accuracy_runs_as_a_file_from_another_folder(tmp_path):
    """As a file, the benchmark finds common.py beside it wherever it is run from."""
    script = ROOT / "benchmarks" / "judge_accuracy.py"
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "### summary" in done.stdout and "verdicts right" in done.stdout


# ---------------------------------------------------------------- the stage runner


def test_run_stage_returns_stdout_and_logs_stderr(tmp_path):
    log = tmp_path / "log.txt"
    code = "import sys; print('out'); print('err', file=sys.stderr)"
    ran = common.run_stage([sys.executable, "-c", code], log, echo=False)
    assert (ran.returncode, ran.stdout) == (0, "out\n")
    assert log.read_text() == "err\n"
    common.run_stage([sys.executable, "-c", code], log, echo=False)
    assert log.read_text() == "err\nerr\n"  # appended: one log for a seed's chain of stages


def test_run_stage_stops_the_benchmark_on_a_failure_naming_the_log(tmp_path):
    log = tmp_path / "log.txt"
    with pytest.raises(SystemExit, match=r"failed \(3\).*log\.txt"):
        common.run_stage([sys.executable, "-c", "raise SystemExit(3)"], log, echo=False)
    ran = common.run_stage([sys.executable, "-c", "print('x'); raise SystemExit(3)"], log, echo=False,
                           check=False, output_to_log=True, append=False)  # fmt: skip
    assert ran.returncode == 3 and ran.stdout == "" and ran.tail() == "x\n"


def test_the_mcoder_command_is_mcoder_env_split_as_a_shell_would(monkeypatch):
    monkeypatch.setenv("MCODER", f"{sys.executable} -m mcoder")
    assert common.mcoder("judge", Path("a b")) == [sys.executable, "-m", "mcoder", "judge", "a b"]
    monkeypatch.delenv("MCODER")
    assert common.mcoder("bench") == [sys.executable, "-m", "mcoder", "bench"]


def test_the_warm_start_is_the_package_module_with_its_flags():
    from mcoder.warmstart import WarmStartConfig

    cmd = common.warm_start_cmd(Path("t.jsonl"), Path("w"), WarmStartConfig(steps=5, target_pass=0.35, gate="sampled"))
    assert cmd == [sys.executable, "-m", "mcoder.warmstart", "--problems", "t.jsonl", "--out", "w",
                   "--steps", "5", "--target-pass", "0.35", "--gate", "sampled"]  # fmt: skip


def test_the_tiny_model_names():
    from mcoder.testing import SHAPES, TinySpec, named_spec

    assert named_spec("tiny") == TinySpec()
    assert named_spec("tiny:3").layers == 3
    assert named_spec("qwen3-0.6b") == SHAPES["qwen3-0.6b"]
    cut = named_spec("qwen3-1.7b:2")
    assert (cut.layers, cut.hidden) == (2, SHAPES["qwen3-1.7b"].hidden)
    with pytest.raises(ValueError, match="qwen3-9b"):
        named_spec("qwen3-9b")


# ---------------------------------------------------------------- results and resuming


def _results(out: Path) -> common.Results:
    return common.Results(out, "test", run_only={"seeds"})


def test_results_go_through_the_output_guard(tmp_path):
    res = _results(tmp_path)
    res.save({"lr": 1, "seeds": [0]}, [{"seed": 0}], "| table |\n")
    assert json.loads((tmp_path / "results.json").read_text()) == {"config": {"lr": 1, "seeds": [0]},
                                                                  "rows": [{"seed": 0}]}  # fmt: skip
    for name in ("results.json", "results.md"):
        meta = json.loads((tmp_path / f"{name}.meta.json").read_text())
        assert meta["stage"] == "benchmark test" and meta["finished"]
    res.save({"lr": 1, "seeds": [0]}, [{"seed": 0}, {"seed": 1}], "| table |\n")  # its own file: replaced
    (tmp_path / "results.md").write_text("edited by hand\n")
    with pytest.raises(UsageError, match="changed after mcoder wrote it"):
        res.save({"lr": 1, "seeds": [0]}, [], "| table |\n")
    assert (tmp_path / "results.md").read_text() == "edited by hand\n"


def test_a_file_mcoder_did_not_write_is_never_replaced(tmp_path):
    (tmp_path / "results.md").write_text("mine\n")
    with pytest.raises(UsageError, match="did not write"):
        common.write_result(tmp_path / "results.md", "table\n", benchmark="test")
    assert (tmp_path / "results.md").read_text() == "mine\n"


def test_a_rerun_keeps_rows_only_with_the_same_settings(tmp_path):
    res = _results(tmp_path)
    rows = [{"seed": 0, "delta": 1.5}]
    res.save({"lr": 1, "seeds": [0]}, rows, "t\n")
    assert res.load({"lr": 1, "seeds": [0, 1]}) == rows  # seeds choose what to run, not how
    assert res.load({"lr": 1, "seeds": [0], "new_option": None}) == rows  # an option added since: unset
    assert res.load({"lr": 2, "seeds": [0]}) == []  # another setting: start over, the old files aside
    assert json.loads((tmp_path / "results.json.old").read_text())["rows"] == rows
    assert (tmp_path / "results.md.old").read_text() == "t\n"
    assert not (tmp_path / "results.json").exists()
    res.save({"lr": 2, "seeds": [0]}, [], "t2\n")  # and the new results are written where the old were
    assert json.loads((tmp_path / "results.json").read_text())["config"]["lr"] == 2


def test_results_written_before_the_guard_keep_their_rows_and_move_aside(tmp_path):
    rows = [{"seed": 0}]
    (tmp_path / "results.json").write_text(json.dumps({"config": {"lr": 1}, "rows": rows}))
    (tmp_path / "results.md").write_text("old table\n")
    res = _results(tmp_path)
    assert res.load({"lr": 1, "seeds": [0]}) == rows
    assert (tmp_path / "results.json.old").exists() and (tmp_path / "results.md.old").exists()
    # the rows are the guard's at once: a run stopped before its next row loses none of them
    assert json.loads((tmp_path / "results.json").read_text())["rows"] == rows
    assert json.loads((tmp_path / "results.json.meta.json").read_text())["finished"]
    assert res.load({"lr": 1, "seeds": [0]}) == rows
    res.save({"lr": 1, "seeds": [0]}, rows, "new table\n")  # the guard writes them afresh
    assert (tmp_path / "results.md").read_text() == "new table\n"


def test_the_measurement_parser_takes_each_benchmarks_defaults_and_smoke_sizes():
    from benchmarks import learning_proof, long_ablation

    proof = learning_proof.parse([])
    ablation = long_ablation.parse(["--smoke", "--seeds", "0,2"])
    assert (proof.steps, proof.max_tokens, proof.eval_n, proof.warm_target) == (150, 64, 8, 0.35)
    assert proof.train == common.LEARN / "train.jsonl" and proof.seeds == [0, 1, 2]
    assert ablation.train == common.LONG / "train.jsonl" and ablation.seeds == [0, 2]
    assert (ablation.steps, ablation.max_tokens, ablation.sft_steps, ablation.warm_target) == (2, 16, 2, 0.0)
    with pytest.raises(ValueError, match="no option nope"):
        common.measurement_parser(None, nope=1)


def test_one_writer_exits_2_while_another_measurement_holds_the_folder(tmp_path, capsys):
    from mcoder.outputs import hold_lock

    ran = []
    with hold_lock(tmp_path / "out"):
        assert common.one_writer(tmp_path / "out", lambda: ran.append(1) or 0, "test") == 2
    assert ran == [] and str(os.getpid()) in capsys.readouterr().err
    assert common.one_writer(tmp_path / "out", lambda: ran.append(1) or 0, "test") == 0 and ran == [1]


def test_the_judge_vs_lcb_floor_counts_a_call_programs_module_once():
    """The floor was larger than mcoder's own time: it ran a call program's module (0.3 s of CPU
    in the benchmark's slow version) once per test, while both evaluators load it once per record."""
    from benchmarks import judge_vs_lcb

    from mcoder.records import Problem, Test

    tests = [Test(input=f"{i}", output=f"{i}", kind="call") for i in range(5)]
    p = Problem(id="p", source="t", question="q", tests=tests, fn_name="f")
    code = judge_vs_lcb.variant("def f(x):\n    return x\n", "call", "f", "slow")
    floor = judge_vs_lcb.own_cpu_s(p, code, list(range(5)), 2.0)
    assert 0.25 < floor < 0.9, floor  # once: 0.3 s; once per test: 1.5 s
    stdin = Problem(id="s", source="t", question="q", tests=[Test(input="1\n", output="1\n")] * 3)
    floor = judge_vs_lcb.own_cpu_s(stdin, judge_vs_lcb.variant("print(input())\n", "stdin", None, "slow"), [0, 1, 2], 2.0)
    assert 0.85 < floor < 1.6, floor  # a stdin program runs whole for each test: 3 x 0.3 s


def test_the_judge_vs_lcb_versions_of_a_method_fail_as_their_name_says():
    """A LeetCode-style reference (a method of class Solution) made into the wrong, crashing and
    endless versions: each replaced the method, where they had failed to load (a NameError on the
    module-level name, so 11 'endless' records ended at once and 'wrong' ones were crashes)."""
    from benchmarks import judge_vs_lcb

    ref = "class Solution:\n    def twice(self, x):\n        return 2 * x\n"
    scopes = {}
    for name in ("correct", "slow", "wrong", "crash", "tle"):
        scope: dict = {"__name__": "__main__"}
        exec(judge_vs_lcb.variant(ref, "call", "twice", name), scope)  # noqa: S102 - the benchmark's own text
        scopes[name] = scope
    assert scopes["correct"]["Solution"]().twice(3) == 6 and scopes["slow"]["Solution"]().twice(3) == 6
    assert scopes["wrong"]["Solution"]().twice(3) == "wrong"
    with pytest.raises(ValueError, match="crash"):
        scopes["crash"]["Solution"]().twice(3)
    assert scopes["tle"]["Solution"].twice.__name__ == "_mc_new"  # the endless body replaced the method


@pytest.mark.heavy
def test_the_judge_vs_lcb_floor_calls_a_method_of_class_solution():
    """The floor called a LeetCode-style method as a module-level function: a KeyError, so an
    endless method counted no time at all."""
    from benchmarks import judge_vs_lcb

    from mcoder.records import Problem, Test

    p = Problem(id="p", source="t", question="q", tests=[Test(input="1", output="2", kind="call")], fn_name="twice")
    ref = "class Solution:\n    def twice(self, x):\n        return 2 * x\n"
    assert judge_vs_lcb.own_cpu_s(p, judge_vs_lcb.variant(ref, "call", "twice", "tle"), [0], 1.0) >= 0.9


@pytest.mark.heavy
def test_the_judge_vs_lcb_floor_keeps_the_tests_before_one_that_never_ends():
    """A call program fast on its first test and endless on its second counts ~0 + the limit: the
    CPU limit is per test and each test's time reaches the parent as it ends (the whole record was
    capped at twice the limit and, once killed, counted every test at the limit)."""
    from benchmarks import judge_vs_lcb

    from mcoder.records import Problem, Test

    tests = [Test(input="0", output="0", kind="call"), Test(input="1", output="1", kind="call")]
    p = Problem(id="p", source="t", question="q", tests=tests, fn_name="f")
    code = "def f(x):\n    while x:\n        pass\n    return x\n"
    assert 0.9 <= judge_vs_lcb.own_cpu_s(p, code, [0, 1], 1.0) < 1.5


def test_every_setting_the_gpu_check_reads_is_one_of_its_options_at_full_size():
    """The full-size check (only ever run on a GPU) read ``a.judge_workers``, which only --smoke
    set: it would have stopped at its last stage. Every ``a.NAME`` it reads, found in its source,
    must exist without --smoke."""
    import re

    from benchmarks import gpu_bench

    source = (ROOT / "benchmarks" / "gpu_bench.py").read_text()
    used = set(re.findall(r"\ba\.([a-z_]+)\b", source))
    assert {"judge_workers", "loop_tokens", "lengths"} <= used  # the scan reads what it should
    full, smoke = vars(gpu_bench.parse_args([])), vars(gpu_bench.parse_args(["--smoke"]))
    assert sorted(used - set(full)) == [] and sorted(used - set(smoke)) == []


@pytest.mark.slow
def test_the_gpu_check_without_vllm_passes_its_smoke_run(tmp_path):
    """benchmarks/gpu_check.sh --smoke where vllm is absent (this environment), under the CUDA
    stand-in (tests/helpers/standin.py: the GPU branch taken, NCCL serving cuda tensors alone):
    sampling with the transformers engine, the update at two lengths, FSDP2 in the trainer's own
    cpu:gloo,cuda:nccl group and the loop's step, exit 0. It exited 1 before: the loop stage
    passed --workers, which benchmarks/loop_speed.py does not take; and its FSDP2 stage made an
    NCCL-only group, which fails here on the first host scalar as it did on a GPU."""
    import importlib.util

    from helpers.standin import ASKED, standin_env

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here: gpu_check.sh would measure the vllm path")
    out = tmp_path / "check"
    done = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), "--smoke", "--out", str(out)],
        cwd=tmp_path, env=standin_env(PY=sys.executable), capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    report = (out / "report.txt").read_text()
    assert "loop step, hf engine" in report and "failed" not in report, report
    assert "device: CUDA stand-in" in report, "the stand-in was in force"
    (fsdp_log,) = out.glob("fsdp-*/log.txt")
    asked = [ln for ln in fsdp_log.read_text().splitlines() if ln.startswith(ASKED)]
    assert asked and all("'cpu:gloo,cuda:nccl'" in ln for ln in asked), asked
    record = json.loads((out / "gpu_bench.json").read_text())
    assert record["loop_exit"] == 0 and "error" not in record["sample"] and "error" not in record["fsdp"]


def test_the_judge_vs_lcb_leetcode_set_makes_call_tests_in_the_methods_order(tmp_path):
    """The real LeetCode set's asserts call the method with keyword arguments in any order; both
    evaluators take a call test's arguments by position, so they are put in the method's order,
    and a row whose asserts are not all plain literals is left out. The floor runs a LeetCode
    program with the names LeetCode provides (``List``), as both evaluators do."""
    from benchmarks import judge_vs_lcb

    solution = "class Solution:\n    def f(self, nums: List[int], k: int) -> int:\n        return sum(nums) * k\n"
    rows = [
        {"solutions": solution, "tests": {"functional": "def check(candidate):\n    assert candidate(k = 2, nums = [1, 2]) == 6\n"
                                                        "    assert candidate(nums = [5], k = 0) == 0\n\ncheck(Solution().f)\n"}},
        {"solutions": solution, "tests": {"functional": "def check(candidate):\n    assert candidate(nums = list_node([1]), k = 1) == 1\n"
                                                        "\ncheck(Solution().f)\n"}},
    ]  # fmt: skip
    path = tmp_path / "leetcode.json"
    path.write_text(json.dumps(rows))
    (p,) = judge_vs_lcb.leetcode_problems(path)
    assert p.fn_name == "f" and [(t.input, t.output) for t in p.tests] == [("[1, 2]\n2", "6"), ("[5]\n0", "0")]
    assert judge_vs_lcb.own_cpu_s(p, judge_vs_lcb.variant(solution, "call", "f", "slow"), [0, 1], 2.0) > 0.25


@pytest.mark.heavy
def test_the_judge_vs_lcb_floor_counts_every_test_of_a_long_stdin_record():
    """Each test lowered the CPU limit's hard value to its own and the next raised it again, which
    root without CAP_SYS_RESOURCE (this machine's) may not: the floor's process died at the fifth
    test of a slow record, and every test after counted the whole limit (5.2 s for 6 x 0.3 s)."""
    from benchmarks import judge_vs_lcb

    from mcoder.records import Problem, Test

    p = Problem(id="s", source="t", question="q", tests=[Test(input="1\n", output="1\n")] * 8)
    floor = judge_vs_lcb.own_cpu_s(p, judge_vs_lcb.variant("print(input())\n", "stdin", None, "slow"), list(range(8)), 2.0)
    assert 2.2 < floor < 3.6, floor  # 8 x 0.3 s


@pytest.mark.heavy
def test_the_judge_vs_lcb_codecontests_solutions_pass_their_real_tests(shared_data):
    """The benchmark's many-test set: each program written for it passes all of its problem's tests
    (96 to 143) in mcoder's judge, so its 'correct' version is correct."""
    from benchmarks import judge_vs_lcb

    from mcoder.judge.config import JudgeConfig
    from mcoder.judge.core import Judge
    from mcoder.records import Rollout

    sandbox_or_skip()
    problems = judge_vs_lcb.codecontests_problems(shared_data / "sandboxfusion_code_contests.jsonl")
    assert len(problems) == len(judge_vs_lcb.CODECONTESTS) and all(len(p.tests) >= 90 for p in problems)
    rollouts = [Rollout(id=p.id, problem_id=p.id, completion=f"```python\n{p.reference_solutions[0]}```") for p in problems]
    with Judge(JudgeConfig(workers=1, timeout_s=5.0)) as judge:
        verdicts = judge.judge({p.id: p for p in problems}, rollouts)
    assert all(v.status == "accepted" for v in verdicts), [(v.rollout_id, v.first_failure) for v in verdicts if not v.passed]
