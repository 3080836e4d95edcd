"""Untrusted text reaches a terminal only through one door, ``mcoder.printable``.

The door itself is checked on every code point it declares and on text it must leave alone. Then
the printing paths: every call that prints in ``show``, ``bench``, ``judge`` (the stage, the
merge of shards), the loop's progress and the CLI's error boundary is found in the source (the
AST: ``console.info|warn|emit|show|document``, ``.print``, and the names those are bound to), and
each must be reached by one of the runs below, made with real files whose every string a model,
a program or a source row controls is full of escape sequences: CSI, OSC (window title, OSC 52
clipboard), DCS, C1 controls, carriage returns and backspaces, bidirectional overrides. None of
those characters may reach stdout or stderr raw. A print call added to one of these modules
fails ``test_every_printing_path_is_reached`` until a run here reaches it.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

import mcoder
from mcoder.cli.app import app
from mcoder.printable import ESCAPED, printable

SRC = Path(mcoder.__file__).resolve().parent
ROOT = SRC.parents[1]

# ---------------------------------------------------------------------------- the sequences

ESC = "\x1b"
SEQUENCES = {
    "CSI clear screen, cursor home": f"{ESC}[2J{ESC}[H",
    "CSI hide text (conceal)": f"{ESC}[8m",
    "OSC window title": f"{ESC}]0;owned\x07",
    "OSC 52 clipboard write": f"{ESC}]52;c;cm0gLXJmIH4K\x07",
    "OSC 8 link": f"{ESC}]8;;http://evil.example{ESC}\\",
    "DCS request": f"{ESC}P+q544e{ESC}\\",
    "C1 CSI": "\x9b31m",
    "C1 OSC ... ST": "\x9d0;owned\x9c",
    "carriage return overwrite": "safe\rEVIL",
    "backspaces": "abc\x08\x08\x08",
    "bell, vertical tab, form feed, DEL": "\x07\x0b\x0c\x7f",
    "bidi override and isolate": "\u202eevil\u202c\u2066x\u2069",
    "line separator": "a\u2028b",
}
HOSTILE = "".join(SEQUENCES.values())  # one line: ids and statuses too
IN_NAME = HOSTILE.replace("/", "|")  # in a file's name
RAW = {c for c in map(ord, HOSTILE) if c in ESCAPED}
assert RAW, "the sequences hold characters the door escapes"


def raw_characters(text: str, *, lines: bool = True) -> list[str]:
    """Characters in ``text`` that a terminal would act on (line feeds allowed in output)."""
    return sorted({hex(ord(c)) for c in text if ord(c) in ESCAPED and not (lines and c == "\n")})


# ---------------------------------------------------------------------------- the door


def test_every_declared_code_point_is_shown_escaped():
    for c in sorted(ESCAPED):
        shown = printable(f"a{chr(c)}b")
        assert shown != f"a{chr(c)}b" and not raw_characters(shown, lines=False), hex(c)
        assert shown.startswith("a\\") and shown.endswith("b"), (hex(c), shown)
    assert printable("a\nb", multiline=True) == "a\nb" and printable("a\nb") == "a\\nb"
    assert printable("a\tb") == "a\tb"  # a tab moves the cursor right, nothing more


def test_clean_text_is_left_as_it_is_and_escaping_is_idempotent():
    clean = "déjà vu — 日本語 🙂 [bold]x[/] \\x1b is text, \\ too"
    assert printable(clean) is clean
    for name, seq in SEQUENCES.items():
        once = printable(seq)
        assert printable(once) == once and not raw_characters(once, lines=False), name
    assert printable(None) == "None" and printable(3) == "3"


# ---------------------------------------------------------------------------- the printing paths

PRINTING_MODULES = [
    *sorted((SRC / "show").glob("*.py")),
    *sorted((SRC / "bench").glob("*.py")),
    SRC / "judge" / "stage.py",
    SRC / "judge" / "merge.py",
    SRC / "loop" / "loop.py",
    *(SRC / "cli" / f"{name}.py" for name in ("show", "bench", "judge", "loop", "common")),
    SRC / "console.py",
]
PRINTERS = {"info", "warn", "emit", "show", "print", "say"}
CONSOLE_ONLY = {"document", "table"}  # console.document / console.table (junit.document writes no terminal)


def _is_printing(call: ast.Call) -> bool:
    f = call.func
    if isinstance(f, ast.Attribute):
        owner = f.value.id if isinstance(f.value, ast.Name) else None
        return f.attr in PRINTERS or (f.attr in CONSOLE_ONLY and owner == "console")
    return isinstance(f, ast.Name) and f.id in PRINTERS


def _only_constants(call: ast.Call) -> bool:
    """A call whose every argument is a literal prints nothing that came from data."""
    args = [*call.args, *(k.value for k in call.keywords)]
    return all(isinstance(a, ast.Constant) for a in args)


def print_sites() -> dict[tuple[str, int], str]:
    """(file, line of the statement) -> source, of every printing call that can carry data."""
    sites = {}
    for path in PRINTING_MODULES:
        tree = ast.parse(path.read_text())
        for stmt in ast.walk(tree):
            if not isinstance(stmt, (ast.Expr, ast.Assign, ast.Return, ast.AugAssign)):
                continue
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call) and _is_printing(node) and not _only_constants(node):
                    sites[(str(path), stmt.lineno)] = ast.unparse(node)[:100]
    return sites


def test_the_printing_paths_are_found():
    sites = print_sites()
    found = {(Path(f).parent.name, Path(f).name) for f, _ in sites}
    for where in (("show", "terminal.py"), ("bench", "stage.py"), ("judge", "stage.py"), ("loop", "loop.py")):
        assert where in found, where
    assert len(sites) >= 40  # as counted when this test was written


class LineTracer:
    """The lines of ``files`` run while it is installed, in every thread."""

    def __init__(self, files: set[str]):
        self.files, self.lines = files, set()

    def _local(self, frame, event, arg):
        if event == "line":
            self.lines.add((frame.f_code.co_filename, frame.f_lineno))
        return self._local

    def _global(self, frame, event, arg):
        return self._local if frame.f_code.co_filename in self.files else None

    def __enter__(self):
        sys.settrace(self._global)
        threading.settrace(self._global)
        return self

    def __exit__(self, *exc):
        sys.settrace(None)
        threading.settrace(None)


# ---------------------------------------------------------------------------- hostile files

FENCE = "```"


def _jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _id(i: int) -> str:
    return f"h{i:02d}-{HOSTILE}"


def hostile_problems(n: int) -> list[dict]:
    return [
        {"id": _id(i), "source": HOSTILE, "question": f"Print the sum.\n{HOSTILE}\n" * 20,
         "tests": [{"input": "1 2\n", "output": "3\n"}], "platform": f"plat-{HOSTILE}",
         "difficulty": f"diff-{HOSTILE}"}
        for i in range(n)
    ]  # fmt: skip


# the program a model wrote: it prints the sequences on stdout and stderr, and fails
PROGRAM = f"import sys\nprint({HOSTILE!r})\nprint({HOSTILE!r}, file=sys.stderr)\nraise SystemExit(1)\n"


def hostile_rollouts(problems: list[dict], per: int) -> list[dict]:
    return [
        {"id": f"{p['id']}/0/{j}", "problem_id": p["id"], "sample_index": j, "finish_reason": "length",
         "prompt": f"<|im_start|>user\n{p['question']}<|im_end|>\n",
         "completion": f"{HOSTILE}\nthinking {HOSTILE}\n{FENCE}python\n{PROGRAM}{FENCE}\n{HOSTILE} after"}
        for p in problems
        for j in range(per)
    ]  # fmt: skip


def hostile_verdicts(rollouts: list[dict], passed) -> list[dict]:
    out = []
    for r in rollouts:
        ok = passed(r)
        ff = None if ok else {"index": 0, "input": HOSTILE + "\nmore", "expected": HOSTILE + "\n3",
                              "got": HOSTILE + "\n4", "stderr": HOSTILE, "reason": HOSTILE}  # fmt: skip
        out.append({"rollout_id": r["id"], "problem_id": r["problem_id"], "reward": float(ok), "passed": ok,
                    "status": "accepted" if ok else "wrong_answer", "tests_passed": int(ok), "tests_total": 1,
                    "first_failure": ff})  # fmt: skip
    return out


class Printed:
    """What every run printed, and which lines of the printing modules ran."""

    def __init__(self):
        self.outputs: list[tuple[str, str]] = []  # (run, what a terminal would have shown)
        self.documents: list[str] = []  # documents asked for on stdout, to a pipe: exact
        self.tracer = LineTracer({str(p) for p in PRINTING_MODULES})

    def cli(self, name: str, *argv, expect: int | None = 0, document: bool = False):
        """The command in this process; ``document``: its stdout carries a document (``-``)."""
        with self.tracer, warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")  # what Python would print on stderr
            r = CliRunner().invoke(app, [str(a) for a in argv])
        shown = "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno) for w in warned)
        self.outputs.append((name, (r.stderr if document else r.stdout + r.stderr) + shown))
        if document:
            self.documents.append(r.stdout)
        if expect is not None:
            assert r.exit_code == expect, (name, r.exit_code, r.stderr[-2000:])
        return r


@pytest.fixture(scope="module")
def printed(tmp_path_factory, tiny_model) -> Printed:
    d = tmp_path_factory.mktemp("hostile")
    p = Printed()
    _show_runs(p, d)
    _bench_runs(p, d)
    _judge_runs(p, d)
    _loop_runs(p, d, tiny_model)
    _error_runs(p, d)
    return p


def _show_runs(p: Printed, d: Path) -> None:
    problems = hostile_problems(3)
    run = d / "run"
    step = run / "step_0001"
    step.mkdir(parents=True)
    _jsonl(d / "problems.jsonl", problems)
    (run / "config.json").write_text(json.dumps({"problems": str(d / "problems.jsonl")}))
    rollouts = _jsonl(step / "rollouts.jsonl", hostile_rollouts(problems, 2))
    rows = [json.loads(x) for x in rollouts.read_text().splitlines()]
    _jsonl(step / "verdicts.jsonl", hostile_verdicts(rows, lambda r: r["id"].endswith("/0")))
    _jsonl(step / "samples.jsonl", [
        {"rollout_id": r["id"], "reward": 0.0, "advantage": 0.5, "truncated": True, "cut_off": True,
         "masked": True, "dropped": True, "mask_reason": HOSTILE}
        for r in rows
    ])  # fmt: skip
    p.cli("show run", "show", run)
    p.cli("show step, every sample in full", "show", step, "--full", "--limit", "2")
    p.cli("show one rollout and its prompt", "show", run, "--id", rows[1]["id"], "--prompt")
    p.cli("show, no match", "show", run, "--problem", "nothing-" + HOSTILE)
    alone = d / f"r-{IN_NAME}.jsonl"
    alone.write_bytes(rollouts.read_bytes())
    p.cli("show a rollouts file without verdicts", "show", alone)
    p.cli("show html", "show", run, "--html", d / "report.html")


def _bench_runs(p: Printed, d: Path) -> None:
    problems = hostile_problems(44)  # 22 regress, 22 improve: more than bench names one by one
    _jsonl(d / "bp.jsonl", problems)
    rollouts = hostile_rollouts(problems, 1)
    _jsonl(d / "br.jsonl", rollouts)
    worse = {r["problem_id"] for r in rollouts[:22]}
    _jsonl(d / "now.jsonl", hostile_verdicts(rollouts, lambda r: r["problem_id"] not in worse))
    _jsonl(d / "base.jsonl", hostile_verdicts(rollouts, lambda r: r["problem_id"] in worse))
    common = ["bench", "-p", d / "bp.jsonl", "--verdicts", d / "now.jsonl", "--baseline", d / "base.jsonl"]
    p.cli("bench, json to stdout", *common, "--json", "-", "--markdown", d / "b.md", "--fail-under", "0",
          document=True)  # fmt: skip
    p.cli("bench gate fails", *common, "--fail-on-regression", "-r", d / "br.jsonl", "--lcb-out",
          d / "lcb_eval_all.json", expect=5)  # fmt: skip
    runs = []
    for i in range(2):
        run = d / f"run{i}-{IN_NAME}"
        run.mkdir()
        lines = [{"step": s, "reward/mean": 0.1 * s * (i + 1), "loss": 1.0 / s} for s in (1, 3, 2)]
        _jsonl(run / "metrics.jsonl", lines)
        runs += ["--run-dir", run]
    p.cli("bench plots", "bench", *runs, "--plots", "--out-dir", d / "plots")


def _judge_runs(p: Printed, d: Path) -> None:
    problems = [{"id": f"neg-{HOSTILE}", "source": HOSTILE, "question": "?",
                 "tests": [{"input": "1\n", "output": "-1\n"}]}]  # fmt: skip
    _jsonl(d / "jp.jsonl", problems)
    slow = f"import time, sys\ntime.sleep(0.3)\nprint({HOSTILE!r})\nprint({HOSTILE!r}, file=sys.stderr)\n"
    rows = [{"id": f"r{i}-{HOSTILE}", "problem_id": problems[0]["id"],
             "completion": f"{FENCE}python\n{slow}# {i}: no cache hits\n{FENCE}"} for i in range(8)]  # fmt: skip
    _jsonl(d / "jr.jsonl", rows)
    out = d / "v.jsonl"
    part = Path(f"{out}.part")
    # a judge killed part-way (a real kill), then resumed here
    argv = [
        sys.executable,
        "-m",
        "mcoder",
        "judge",
        "-p",
        d / "jp.jsonl",
        "-r",
        d / "jr.jsonl",
        "-o",
        out,
        "-w",
        "1",
        "-q",
    ]
    proc = subprocess.Popen(list(map(str, argv)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not part.exists() or part.read_text().count("\n") < 2):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    p.cli("judge, resumed", "judge", "-p", d / "jp.jsonl", "-r", d / "jr.jsonl", "-o", out, "-w", "2")
    p.cli("judge, finished", "judge", "-p", d / "jp.jsonl", "-r", d / "jr.jsonl", "-o", out, "-w", "2")
    halves = [_jsonl(d / f"half{i}.jsonl", rows[i::2]) for i in range(2)]
    parts = [d / f"v{i}.jsonl" for i in range(2)]
    for half, part_out in zip(halves, parts, strict=True):
        p.cli("judge a shard", "judge", "-p", d / "jp.jsonl", "-r", half, "-o", part_out, "-w", "2", "-q")
    for _ in range(2):  # made, then finished already
        p.cli("judge merge", "judge", "--merge", *parts, "-o", d / "merged.jsonl")


def _loop_runs(p: Printed, d: Path, model: Path) -> None:
    problems = hostile_problems(2)
    _jsonl(d / "lp.jsonl", problems)
    argv = ["loop", "-m", model, "-p", d / "lp.jsonl", "--run-dir", d / "lrun", "-n", "2", "--max-tokens", "4",
            "--train-batch-size", "2", "--temperature", "1.0"]  # fmt: skip
    p.cli("loop, a step", *argv, "--steps", "1")
    p.cli("loop, nothing to do", *argv, "--steps", "1")
    p.cli("loop, resumed", *argv, "--steps", "2")


def _error_runs(p: Printed, d: Path) -> None:
    p.cli("an error naming a path", "show", d / f"missing-{IN_NAME}.jsonl", expect=2)
    bad = _jsonl(d / f"bad-{IN_NAME}.jsonl", [{"id": _id(0), "problem_id": HOSTILE}])
    p.cli("an error naming a file, line and field", "show", bad, expect=3)
    # a bug's message: the one fault no input causes (a fake, named as such)
    from mcoder.show import stage

    real = stage.run

    def fake_bug(cfg):
        raise RuntimeError(HOSTILE)

    stage.run = fake_bug
    try:
        p.cli("an internal error", "show", d / "run", expect=1)
    finally:
        stage.run = real


def test_every_printing_path_is_reached(printed):
    ran = printed.tracer.lines
    missed = {f"{Path(f).relative_to(SRC)}:{line}: {src}" for (f, line), src in print_sites().items()
              if (f, line) not in ran}  # fmt: skip
    assert not missed, "printing calls no hostile run reached (add a run above):\n" + "\n".join(
        sorted(missed)
    )


def test_no_control_sequence_reaches_stdout_or_stderr_raw(printed):
    for name, out in printed.outputs:
        assert not raw_characters(out), (name, raw_characters(out), out[:3000])
    everything = "".join(out for _, out in printed.outputs)
    for name, seq in SEQUENCES.items():
        assert printable(seq) in everything, f"{name}: never shown, escaped or not (a run lost its data)"
    # a document asked for on stdout goes to a pipe exactly as the file would hold it
    (doc,) = printed.documents
    path, _, text = doc.partition("\n")
    assert path.endswith("b.md") and json.loads(text)["platforms"]
    assert "\x9b31m\x9d0;owned\x9c" in text and "\u202eevil" in text  # JSON holds these as they are


def test_a_document_on_a_terminal_goes_through_the_door(tmp_path):
    """``--json -`` with stdout on a real terminal (a pty): escaped like every other line there."""
    import pty

    _jsonl(tmp_path / "p.jsonl", hostile_problems(2))
    rollouts = hostile_rollouts(hostile_problems(2), 1)
    _jsonl(tmp_path / "v.jsonl", hostile_verdicts(rollouts, lambda r: True))
    leader, follower = pty.openpty()
    argv = [sys.executable, "-m", "mcoder", "bench", "-p", tmp_path / "p.jsonl", "--verdicts", tmp_path / "v.jsonl",
            "--json", "-", "--markdown", "-"][:-2]  # fmt: skip
    proc = subprocess.Popen(list(map(str, argv)), stdout=follower, stderr=subprocess.DEVNULL)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 1 << 16)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        shown += chunk
    assert proc.wait(timeout=60) == 0
    os.close(leader)
    text = shown.decode()
    text = text.replace("\r\n", "\n")  # the terminal's own line ends
    assert '"platforms"' in text and not raw_characters(text)
    assert "\\x9b31m\\x9d0;owned\\x9c" in text and "\\u202eevil" in text
