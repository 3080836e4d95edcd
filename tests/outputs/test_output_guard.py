"""Every path mcoder writes goes through one guard: enumerated from the CLI itself.

The path-valued options of every subcommand are found by walking the typer app and reading the
``PathRole`` mark each one carries where it is declared (``mcoder.cli.common``). An unmarked path
option fails ``test_every_path_option_is_marked``; an output without a base command line here
fails ``test_every_output_can_be_run``; an output that skips the guard fails the refusals below,
run through the real CLI on real files: one of the command's own inputs, a file or folder of the
user's, an empty file, a FIFO, a character device (a copy of /dev/null made with mknod, as root),
a folder where a file is written (or a file where a folder is), and a symbolic link to an output
another run is writing. Each must exit 2 (or 4), name the path, and leave what was there as it was.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcoder.cli.app import app
from mcoder.cli.common import PathRole
from mcoder.outputs import hold_lock

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "problems"
# str-typed options named like paths must be marked too (a path option need not be typed Path)
PATHISH = {"model", "adapter", "out", "dir", "path", "file", "problems", "rollouts", "verdicts", "scores"}


def _walk(typer_app, prefix=()):
    for c in typer_app.registered_commands:
        yield (*prefix, c.name or c.callback.__name__), c.callback
    for g in typer_app.registered_groups:
        yield from _walk(g.typer_instance, (*prefix, g.name))


def path_options():
    """(command words, parameter, flag or None for an argument, PathRole or None, base type)."""
    found = []
    for words, callback in _walk(app):
        for p in inspect.signature(callback, eval_str=True).parameters.values():
            if typing.get_origin(p.annotation) is not typing.Annotated:
                continue
            base, *meta = typing.get_args(p.annotation)
            role = next((m for m in meta if isinstance(m, PathRole)), None)
            info = next(m for m in meta if hasattr(m, "param_decls"))
            # under Annotated, typer takes an option's first declaration from its ``default`` slot
            decls = [info.default, *(info.param_decls or ())]
            flags = [d for d in decls if isinstance(d, str) and d.startswith("--")]
            pathish = "Path" in str(base) or ("str" in str(base) and p.name.split("_")[-1] in PATHISH)
            if role is not None or pathish:
                found.append((" ".join(words), p.name, flags[0] if flags else None, role, base))
    return found


OUTPUTS = [(cmd, flag, role.kind) for cmd, _, flag, role, _ in path_options() if role and role.role == "output"]


def test_every_path_option_is_marked():
    unmarked = [f"{cmd} {flag or name}" for cmd, name, flag, role, _ in path_options() if role is None]
    assert not unmarked, f"mark these as INPUT, OUTPUT_FILE or OUTPUT_DIR where they are declared: {unmarked}"
    assert len(OUTPUTS) >= 14  # every output of every subcommand, as counted when this test was written


# ----------------------------------------------------------------------------- the world


@pytest.fixture(scope="module")
def world(tiny_model, tmp_path_factory) -> dict[str, Path]:
    """Real inputs for every command: problems, rollouts and verdicts (judged for real), a run
    folder's metrics, the tiny model, a checkpoint-shaped copy of it, scores and a calibration."""
    d = tmp_path_factory.mktemp("world")
    problems = d / "problems.jsonl"
    problems.write_text("".join((EXAMPLES / "stdin.jsonl").read_text().splitlines(keepends=True)[:4]))  # 4: what a calibration needs
    ids = [json.loads(line)["id"] for line in problems.read_text().splitlines()]
    rollouts = d / "rollouts.jsonl"
    rollouts.write_text("".join(
        json.dumps({"id": f"{p}/0/{j}", "problem_id": p, "completion": "```python\nprint(input())\n```"}) + "\n"
        for p in ids for j in range(2)
    ))  # fmt: skip
    verdicts = d / "verdicts.jsonl"
    res = CliRunner().invoke(app, ["judge", "-p", str(problems), "-r", str(rollouts), "-o", str(verdicts), "-q", "-w", "1"])
    assert res.exit_code == 0, res.output
    run = d / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "reward/mean": 0.1 * s, "pass_rate": 0.1 * s, "loss": 1.0 / s, "temperature": 1.0}) + "\n"
        for s in (1, 2, 3)
    ))  # fmt: skip
    ckpt = d / "ckpt"
    shutil.copytree(tiny_model, ckpt)
    (ckpt / "trainer").mkdir()
    (ckpt / "trainer" / "trainer_state.json").write_text('{"step": 1, "policy_version": 1}')
    (ckpt / "trainer" / "train_config.json").write_text("{}")
    scores = d / "scores.jsonl"
    scores.write_text("".join(json.dumps({"problem_id": p, "status": "ok", "score": 0.5 + i}) + "\n"
                              for i, p in enumerate(ids)))  # fmt: skip
    calibration = d / "calibration.json"
    calibration.write_text('{"points": [[0.5, 0.9], [1.5, 0.1]], "heldout": {}}\n')
    return {"P": problems, "R": rollouts, "V": verdicts, "RUN": run, "MODEL": Path(tiny_model), "CKPT": ckpt,
            "SCORES": scores, "CAL": calibration, "dir": d}  # fmt: skip


# The command line of each output, OUT standing for the path under test; each is a run that
# would succeed with a new OUT (its inputs are real).
BASES = {
    ("dataset build", "--out"): "dataset build {P} -o OUT",
    ("dataset build", "--report"): "dataset build {P} -o {FRESH} --report OUT",
    ("dataset difficulty predict", "--out"): "dataset difficulty predict -p {P} -m {MODEL} -o OUT",
    ("dataset difficulty calibrate", "--out"): "dataset difficulty calibrate -s {SCORES} --verdicts {V} -o OUT",
    ("dataset difficulty select", "--out"): "dataset difficulty select -p {P} -s {SCORES} -c {CAL} -o OUT",
    ("rollout", "--out"): "rollout -p {P} -m {MODEL} -o OUT --n 1 --max-tokens 4 --engine hf",
    ("judge", "--out"): "judge -p {P} -r {R} -o OUT -w 1",
    ("train", "--out"): "train -m {MODEL} -r {R} --verdicts {V} -o OUT",
    ("loop", "--run-dir"): "loop -m {MODEL} -p {P} --run-dir OUT --steps 1 -n 2 --max-tokens 4",
    ("bench", "--markdown"): "bench -p {P} --verdicts {V} --markdown OUT",
    ("bench", "--json"): "bench -p {P} --verdicts {V} --json OUT",
    ("bench", "--lcb-out"): "bench -p {P} --verdicts {V} -r {R} --lcb-out OUT",
    ("bench", "--junit"): "bench -p {P} --verdicts {V} --junit OUT",
    ("bench", "--out-dir"): "bench --run-dir {RUN} --plots --out-dir OUT",
    ("show", "--html"): "show {R} --verdicts {V} -p {P} --html OUT",
    ("export", "--out"): "export {CKPT} -o OUT",
}
# Folders mcoder adds files to (a figure folder): the user's files there are the ones it would write.
ADDS_TO = {("bench", "--out-dir")}


def test_every_output_can_be_run():
    missing = [f"{cmd} {flag}" for cmd, flag, _ in OUTPUTS if (cmd, flag) not in BASES]
    assert not missing, f"add a base command line to BASES for: {missing}"


def _argv(world: dict, cmd: str, flag: str, out: Path) -> list[str]:
    fresh = world["dir"] / f"fresh-{len(list(world['dir'].iterdir()))}.jsonl"
    words = BASES[(cmd, flag)].format(FRESH=fresh, **{k: v for k, v in world.items() if k != "dir"}).split()
    return [str(out) if w == "OUT" else w for w in words] + ["-q"] * (cmd not in ("show", "export"))


def _run(argv: list[str]):
    """The CLI in this process, with an alarm: a guard that opened a FIFO would block forever."""

    def stuck(*_):
        raise TimeoutError("the command blocked (opened a FIFO?)")

    old = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(60)
    try:
        return CliRunner().invoke(app, argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _state(p: Path):
    """What is at ``p``, to compare before and after: kind, device number, and every byte."""
    st = os.lstat(p)
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(p))
    if stat.S_ISDIR(st.st_mode):
        return ("dir", {str(f.relative_to(p)): _state(f) for f in sorted(p.rglob("*"))})
    if stat.S_ISREG(st.st_mode):
        return ("file", p.read_bytes())
    return (stat.S_IFMT(st.st_mode), st.st_rdev)


def _user_files(world, cmd, flag, kind, at: Path) -> None:
    """A file, or a folder, of the user's at ``at`` (for a folder mcoder adds to: a file of the
    user's under each name it would write there, found by a run into a new folder)."""
    if kind == "file":
        at.write_bytes(b"the user's own notes\n")
        return
    at.mkdir()
    (at / "notes.txt").write_text("the user's own notes\n")
    if (cmd, flag) in ADDS_TO:
        fresh = world["dir"] / f"fresh-{cmd}-{flag}".replace(" ", "-")
        if not fresh.exists():
            res = _run(_argv(world, cmd, flag, fresh))
            assert res.exit_code == 0, res.output
        for f in fresh.iterdir():
            if not f.name.endswith((".meta.json", ".lock")):
                (at / f.name).write_bytes(b"the user's own " + f.name.encode())


def _make_node(at: Path, case: str) -> None:
    """A FIFO, or a character device (a copy of /dev/null, made with mknod as root), at ``at``."""
    if case == "fifo":
        os.mkfifo(at)
        return
    if os.geteuid() != 0:
        pytest.skip("mknod needs root")
    os.mknod(at, 0o666 | stat.S_IFCHR, os.makedev(1, 3))


CASES = ["input", "foreign", "empty", "fifo", "device", "wrong_kind", "link_being_written"]


def _guarded(case: str, kind: str) -> bool:
    """False for what the guard lets through: an empty folder holds nothing to lose (writing in it is allowed)."""
    return not (case == "empty" and kind == "dir")


@pytest.mark.parametrize(("cmd", "flag", "kind", "case"), [
    pytest.param(cmd, flag, kind, case, id=f"{cmd}-{flag}-{case}".replace(" ", "-"))
    for cmd, flag, kind in OUTPUTS for case in CASES if _guarded(case, kind)
])  # fmt: skip
def test_the_guard_refuses(world, tmp_path, cmd, flag, kind, case):
    at = tmp_path / "target"
    named = at
    if case == "input":  # the command's own first input given as the output
        named = at = next(Path(w) for w in _argv(world, cmd, flag, at) if w != str(at) and Path(w).exists())
    elif case == "foreign":
        _user_files(world, cmd, flag, kind, at)
    elif case == "empty":
        at.touch()
    elif case in ("fifo", "device"):
        _make_node(at, case)
    elif case == "wrong_kind":
        at.mkdir() if kind == "file" else at.write_text("the user's file\n")
    elif case == "link_being_written":
        target = tmp_path / "being-written"
        target.mkdir() if kind == "dir" else target.write_text('{"id": "x"}\n')
        named = tmp_path / "link"
        named.symlink_to(target)
        at = target
    before = {p: _state(p) for p in {at, named}}
    if case == "link_being_written":
        with hold_lock(at):  # another run is writing the link's target
            res = _run(_argv(world, cmd, flag, named))
    else:
        res = _run(_argv(world, cmd, flag, named))
    assert res.exit_code in (2, 4), res.output
    assert str(named) in res.stderr or str(at) in res.stderr, res.stderr
    assert "internal error" not in res.stderr
    assert {p: _state(p) for p in {at, named}} == before


@pytest.mark.parametrize(("cmd", "flag", "kind"), OUTPUTS, ids=[f"{c}-{f}".replace(" ", "-") for c, f, _ in OUTPUTS])
def test_a_dash_is_stdout_for_a_file_and_refused_for_a_folder(world, tmp_path, monkeypatch, cmd, flag, kind):
    """``-`` writes the one file to stdout; a folder cannot go there: refused, never a folder named ``-``."""
    monkeypatch.chdir(tmp_path)
    res = _run(_argv(world, cmd, flag, Path("-")))
    assert not os.path.lexists(tmp_path / "-") and not list(tmp_path.glob("-*")), sorted(tmp_path.iterdir())
    if kind == "dir":
        assert res.exit_code == 2 and f"{flag} -: this writes a folder" in res.stderr, res.output
    else:
        assert res.exit_code == 0, res.output
        assert len(res.stdout.strip()) > 20, res.stdout  # the document itself, not a path named '-'


# ----------------------------------------------------------------------------- the warm start
# `python -m mcoder.warmstart` is no subcommand (the walk above does not see it) and replaces its
# folder whole; it must refuse the same paths, for OUT and for the OUT.part it writes beside.

# (case, where) the warm start lets through, and why
WARM_START_ALLOWS = {
    ("input", "part"): "the input is named by --out, not by the folder beside it",
    ("foreign", "part"): "OUT.part is the warm start's own name: a folder there is an unfinished one",
    ("empty", "out"): "an empty folder holds nothing to lose: writing in it is allowed",
    ("empty", "part"): "an empty folder holds nothing to lose: writing in it is allowed",
}


@pytest.mark.parametrize(("case", "where"), [
    pytest.param(case, where, id=f"{case}-{where}")
    for where in ("out", "part") for case in CASES  # every case of the CLI's guard test: a new one must be set up here
    if (case, where) not in WARM_START_ALLOWS
])  # fmt: skip
def test_the_warm_start_refuses(tmp_path, capsys, case, where):
    from mcoder.cli import warmstart as warmstart_cli

    problems = tmp_path / "train.jsonl"
    shutil.copy(EXAMPLES / "call.jsonl", problems)
    out = tmp_path / "warm"
    at = out if where == "out" else tmp_path / "warm.part"
    if case == "input":
        at = out = problems
    elif case == "foreign":
        at.mkdir()
        (at / "notes.txt").write_text("the user's own notes\n")
    elif case in ("fifo", "device"):
        _make_node(at, case)
    elif case == "wrong_kind":
        at.write_text("the user's file\n")
    elif case == "link_being_written":  # any link is refused: the pass would write (or rmtree) through it
        users = tmp_path / "users"
        users.mkdir()
        (users / "keep.txt").write_text("keep\n")
        at.symlink_to(users)
    else:
        pytest.fail(f"no warm start set-up for the guard's case {case!r}")
    before = {p: _state(p) for p in tmp_path.rglob("*")}
    code = warmstart_cli.main(["--problems", str(problems), "--out", str(out), "--steps", "1"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert str(at) in err and "error:" in err, err
    assert {p: _state(p) for p in tmp_path.rglob("*")} == before


def test_the_warm_start_refuses_stdout_for_its_folder(tmp_path, capsys, monkeypatch):
    from mcoder.cli import warmstart as warmstart_cli

    monkeypatch.chdir(tmp_path)
    code = warmstart_cli.main(["--problems", str(EXAMPLES / "call.jsonl"), "--out", "-", "--steps", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "--out -: this writes a folder" in err, err
    assert list(tmp_path.iterdir()) == []


def test_the_warm_start_replaces_only_its_own_folder(tmp_path):
    """An empty folder or an earlier warm start (it has warm_start.json) may be replaced."""
    from mcoder import warmstart

    (tmp_path / "empty").mkdir()
    warmstart.check_out(tmp_path / "empty")
    warmstart.check_out(tmp_path / "missing" / "warm")
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / warmstart.SUMMARY).write_text("{}")
    (tmp_path / "earlier.part").mkdir()  # an interrupted pass's leftover
    warmstart.check_out(earlier)


def test_a_second_warm_start_on_the_same_out_is_refused_while_the_first_runs(tmp_path, capsys):
    from mcoder.cli import warmstart as warmstart_cli

    out = tmp_path / "warm"
    with hold_lock(out):  # the first pass, still running
        code = warmstart_cli.main(["--problems", str(EXAMPLES / "call.jsonl"), "--out", str(out), "--steps", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "being written by another run" in err, err
    assert not out.exists()


def test_the_warm_start_under_a_file_is_refused_before_any_lock_is_made(tmp_path, capsys):
    from mcoder.cli import warmstart as warmstart_cli

    (tmp_path / "notes.txt").write_text("the user's\n")
    code = warmstart_cli.main(["--problems", str(EXAMPLES / "call.jsonl"), "--out", str(tmp_path / "notes.txt" / "warm")])
    err = capsys.readouterr().err
    assert code == 2 and "is under a file" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]



# ------------------------------------------------------------------------------ the demo script
# commands/demo.sh replaces model/, run/, before/ and after/ under its --out: it must refuse the
# same paths as the stages before it removes anything (claim_folder in commands/common.sh).

def _demo_repo(tmp_path: Path) -> Path:
    """A copy of the scripts and the demo's problems: a run that wrongly went on writes there."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "commands", repo / "commands")
    shutil.copytree(ROOT / "examples" / "learn", repo / "examples" / "learn")
    return repo


def _demo(repo: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PY": sys.executable}  # refused before any mcoder call
    return subprocess.run(
        ["bash", str(repo / "commands" / "demo.sh"), *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip


def test_the_demo_refuses_its_own_problems_folder(tmp_path):
    """The guard's "input" case for the demo (its other cases, with every script's:
    tests/outputs/test_script_outputs.py)."""
    repo = _demo_repo(tmp_path)
    named = repo / "examples" / "learn"
    before = {p: _state(p) for p in tmp_path.rglob("*")}
    done = _demo(repo, "--smoke", "--out", str(named), cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{named} exists" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert {p: _state(p) for p in tmp_path.rglob("*")} == before


def test_the_demo_claims_a_new_an_empty_or_its_own_folder_and_nothing_else(tmp_path):
    """claim_folder accepts a missing folder (made), an empty one and one it marked before; a folder
    under a file is refused with exit 2 before anything is made."""
    common = ROOT / "commands" / "common.sh"

    def claim(at: Path) -> subprocess.CompletedProcess:
        script = f'source "{common}"; claim_folder "$1" .mcoder-demo; echo claimed'
        env = {**os.environ, "PY": sys.executable}
        return subprocess.run(["bash", "-c", script, "x", str(at)], env=env, capture_output=True, text=True, check=False)

    (tmp_path / "empty").mkdir()
    for at in (tmp_path / "new" / "demo", tmp_path / "empty"):
        done = claim(at)
        assert done.returncode == 0 and done.stdout == "claimed\n", done.stderr
        assert (at / ".mcoder-demo").is_file()
    (tmp_path / "empty" / "model").mkdir()  # its own earlier output
    assert claim(tmp_path / "empty").returncode == 0
    (tmp_path / "notes.txt").write_text("the user's\n")
    done = claim(tmp_path / "notes.txt" / "demo")
    assert done.returncode == 2 and "is under a file" in done.stderr and done.stdout == "", done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "new", "notes.txt"]
