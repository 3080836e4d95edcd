"""Outputs you can trust: one writer per output, resume only what still matches, nothing of the
user's overwritten.

Every stage that writes a file or a folder ``OUT`` claims it first, through ``execute``: the
stage (``Stage``: its name, what its output looks like, how to run into it) and the job (``Job``:
the output, the inputs, the settings that decide the content, ``--overwrite``)::

    @dataclass
    class JudgeStage:
        name, kind, expect = "judge", "jsonl", ("rollout_id",)

        def finished(self, job, claim):
            console.info(claim.finished_message)

        def run(self, job, claim):
            with RecordWriter(job.out, "rollout_id", resume=claim.resume) as writer:
                ...

    execute(JudgeStage(...), Job(out, {"problems": problems_path, "rollouts": rollouts_path},
                                 settings={"compare": "strict", ...}, overwrite=overwrite))

``execute`` holds ``claim_output`` around the run and marks the output finished after it.

Three things happen before the stage reads its inputs or writes anything:

- **One writer.** An advisory lock (``fcntl.flock``) is taken on ``OUT.lock`` beside the output,
  which holds the pid of its holder. A second run on the same output exits 2 at once, naming the
  file and the holder's pid. The kernel drops the lock when its process dies (``kill -9``
  included), so a lock left by a dead run is simply taken over. The lock file is removed when the
  run ends.
- **Never touch what is not yours.** An ``OUT`` that is one of the command's inputs (the same
  file, by inode, or ``OUT.part`` being an input) is refused. An ``OUT`` (or ``OUT.part``) that
  exists without a settings record is looked at: if it does not have the stage's shape (a
  JSONL file whose first record lacks one of the ``expect`` fields; a folder without the
  ``expect`` files) it is refused, ``--overwrite`` or not, since mcoder did not write it; if it
  has the shape but no record of its settings, it is refused unless ``--overwrite``.
- **Resume only what still matches.** The settings that decide what the output holds and a
  fingerprint of each input are kept in ``OUT.meta.json`` (the sidecar). A rerun continues an
  unfinished output only when both match; otherwise it exits 2 listing what changed, and
  ``--overwrite`` starts over (the earlier output is moved aside once the new run holds the
  lock, so no record made with the old settings survives into the new one; see below for when
  it comes back). A finished output whose
  settings and inputs match is a no-op that says so. A run stopped before it wrote a record
  (bad input, say) removes its sidecar again: a refused run leaves nothing behind.

The sidecar, ``OUT.meta.json`` (written atomically, beside files and folders alike)::

    {"mcoder_output": 1, "stage": "judge",
     "finished": {"path": "verdicts.jsonl", "size": 5678, "sha256": "…", "hashed": "all"},
     "settings": {"compare": "microcoder", "reward": "binary", ...},
     "inputs": {"problems": {"path": "problems.jsonl", "size": 1234, "sha256": "…",
                             "hashed": "all"},
                "rollouts": {...}},
     "mcoder_version": "0.1.0", "updated": "2026-12-03T12:00:00+00:00"}

``finished`` is null while the output is being written, then the fingerprint of the finished
output: a finished output that was changed afterwards is not taken for mcoder's.

An input fingerprint is its size and a sha256: of the whole file up to 256 MiB (``"hashed":
"all"``, about 0.3 s at that size); of its size, its first and last 16 MiB and its mtime above
that (``"sampled"``); of each file's name, size, first and last MiB for a folder such as a model
(``"folder"``). Only size and hash are compared, so moving or copying an input does not count as
a change (except a copy of a file above 256 MiB, whose mtime is in its hash); an input read
from stdin (``-``) cannot be fingerprinted and is not compared.

``-`` (stdout) as ``OUT`` skips the lock, the guard and the sidecar: a pipe has no earlier state.
It means stdout only where one file is written (a JSONL output, a document); an output that is a
folder (a checkpoint, a run, figures, an export) is refused for ``-``, never made as a folder
named ``-``.

What is at a path is judged by ``lstat``, never by its name (``check_target``): only a missing
path is absent; a device, FIFO or socket is refused (as root, replacing ``/dev/null`` would delete
it); a symbolic link is refused, naming where it points (writing through it would replace the
link, or let two runs write one file under two names); an empty file is someone's file. A path
under a file, a folder where a file is written (or the other way round) exits 2; a folder mcoder
may not write in exits 4. Locks are keyed on the resolved path, so ``OUT`` reached through a
linked folder shares its lock.

``--overwrite`` is a transaction: the earlier output (with its part file and sidecar) is moved
aside, not deleted, once the new run holds the lock; it is put back when the run stops before
writing anything new (a mistyped or malformed input, Ctrl-C while the model loads), also by the
next run when the first was killed, and removed once the new run has written something.

Whole files written at once (bench tables, HTML reports, figures, LiveCodeBench files) go through
``check_document`` (early, before the work) and ``write_document``: the same refusals, and an
existing file is replaced only when its sidecar says mcoder wrote it and it is unchanged since.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from mcoder import __version__
from mcoder.errors import EnvironmentMissing, UsageError

STDIO = "-"
SIDECAR_SUFFIX = ".meta.json"
LOCK_SUFFIX = ".lock"
ASIDE_SUFFIX = ".aside"  # .OUT.aside/: the output --overwrite replaces, until the new one has begun
FORMAT = 1
FULL_HASH_LIMIT = 256 << 20  # bytes: files up to this size are hashed whole
SAMPLE = 16 << 20  # bytes hashed at each end of a larger file
FOLDER_SAMPLE = 1 << 20  # bytes hashed at each end of each file of an input folder

KEEP_HINT = "choose another --out; mcoder never overwrites files it did not write"
NEW_PATH_HINT = "choose a new path; mcoder writes regular files and folders only"


def sidecar_path(out: str | os.PathLike) -> Path:
    return Path(_plain(out) + SIDECAR_SUFFIX)


def lock_path(out: str | os.PathLike) -> Path:
    """``OUT.lock`` beside the resolved ``OUT``: one lock whatever linked folder ``OUT`` is reached by."""
    return Path(resolved(out) + LOCK_SUFFIX)


def aside_path(out: str | os.PathLike) -> Path:
    head, name = os.path.split(_plain(out))
    return Path(head, f".{name}{ASIDE_SUFFIX}")


def _plain(out: str | os.PathLike) -> str:
    """The path without a trailing slash (so that a folder's sidecar sits beside it)."""
    return os.path.abspath(os.fspath(out)).rstrip(os.sep) or os.sep


def resolved(out: str | os.PathLike) -> str:
    """``out`` with every link of its folders resolved (the last part is kept as it is)."""
    head, name = os.path.split(_plain(out))
    return os.path.join(os.path.realpath(head), name)


# ----------------------------------------------------------------------------- what is there

KINDS = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFLNK: "a symbolic link",
}


def check_target(path: str | os.PathLike, *, flag: str = "--out", kind: str = "file") -> None:
    """Refuse a path mcoder must not write, judged by ``lstat`` (see the module). ``kind``: "file" or
    "dir". A missing path is checked for where it would be made: under a folder mcoder may write."""
    p = os.fspath(path)
    if p == STDIO and kind == "dir":
        raise UsageError(
            f"{flag} -: this writes a folder, which cannot go to stdout ('-' is stdout for a file)",
            hint=f"give {flag} a folder path",
        )
    if p == STDIO:
        return
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        _check_parent(p, flag)
        return
    except NotADirectoryError:
        raise UsageError(f"{flag} {p} is under a file ({_file_above(p)}), not a folder", hint=NEW_PATH_HINT) from None
    what = KINDS.get(stat.S_IFMT(st.st_mode))
    if what is not None:
        extra = f" to {os.readlink(p)}" if stat.S_ISLNK(st.st_mode) else ""
        hint = "pass the path it points to" if extra else NEW_PATH_HINT
        raise UsageError(f"{flag} {p} is {what}{extra}; mcoder does not write there", hint=hint)
    if kind == "file" and stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{flag} {p} is a folder; this writes a file there", hint=f"pass a file path, e.g. {p}/out")
    if kind == "dir" and not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{flag} {p} is a file; this writes a folder there", hint=KEEP_HINT.replace("--out", flag))
    _check_writable(os.path.dirname(_plain(p)), flag, p)


def _check_parent(p: str, flag: str) -> None:
    head = os.path.dirname(_plain(p))
    while not os.path.lexists(head):
        head = os.path.dirname(head)
    if not os.path.isdir(head):
        raise UsageError(f"{flag} {p} is under a file ({head}), not a folder", hint=NEW_PATH_HINT)
    _check_writable(head, flag, p)


def _file_above(p: str) -> str:
    head = os.path.dirname(_plain(p))
    while head != os.sep and not os.path.isfile(head):
        head = os.path.dirname(head)
    return head


def _check_writable(folder: str, flag: str, p: str) -> None:
    if not os.access(folder, os.W_OK | os.X_OK):
        raise EnvironmentMissing(
            f"{flag} {p}: cannot write in {folder} (permission denied or a read-only file system)",
            hint="choose a folder you can write in, or fix its permissions",
        )


# ----------------------------------------------------------------------------- the claim


@dataclass
class Claim:
    """What ``claim_output`` found: whether to resume, whether there is nothing to do."""

    path: str
    stage: str
    resume: bool = False
    """An earlier, unfinished output with these settings and inputs exists: continue it."""
    finished: bool = False
    """The output is finished with these settings and inputs: nothing to do."""
    stdout: bool = False
    flag: str = "--out"
    """The option that named the output, for messages."""
    can_overwrite: bool = True
    """The command has --overwrite (the loop's run folder does not), for hints."""
    settings: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)

    @property
    def finished_message(self) -> str:
        return (
            f"{self.path} is already finished with these settings and inputs: nothing to do "
            "(pass --overwrite to make it again)"
        )

    def mark_finished(self) -> None:
        """Record that the output is whole (call after its last byte is in place)."""
        if not self.stdout:
            _write_sidecar(self.path, self.stage, self.settings, self.inputs, finished=fingerprint(self.path))


@contextlib.contextmanager
def claim_output(
    path: str | os.PathLike,
    *,
    stage: str,
    settings: Mapping[str, Any],
    inputs: Mapping[str, str | os.PathLike | None] | None = None,
    overwrite: bool = False,
    kind: str = "jsonl",
    expect: Sequence[str] = (),
    flag: str = "--out",
    can_overwrite: bool = True,
) -> Iterator[Claim]:
    """Lock ``path``, check it against its sidecar, and say whether to resume (see the module).

    ``stage``: the writer's name ("rollout", "judge", "dataset", "train", "loop").
    ``settings``: every setting that changes what the output holds (JSON-able values).
    ``inputs``: name -> path of each input file or folder (``None`` entries are left out).
    ``kind``: "jsonl" (a file, resumed through ``OUT.part``) or "dir" (a folder).
    ``expect``: jsonl: fields the first record of a file of this stage has; dir: files the
    folder has. An existing output without them is not this stage's and is never touched.
    ``flag``: the option that named ``path``, for messages; ``can_overwrite``: whether the
    command has ``--overwrite`` (hints offer it only then).
    Raises ``UsageError`` (exit 2) for a locked, foreign or mismatching output, and for a path
    ``check_target`` refuses.
    """
    if kind not in ("jsonl", "dir"):
        raise ValueError(f"kind {kind!r}")
    named = {k: os.fspath(v) for k, v in (inputs or {}).items() if v is not None}
    if os.fspath(path) == STDIO:
        check_target(path, flag=flag, kind="dir" if kind == "dir" else "file")  # a folder: refused
        yield Claim(path=STDIO, stage=stage, stdout=True)
        return
    out = os.fspath(path)
    refuse_input_as_output(out, named, flag=flag)
    _check_paths(out, kind, flag)
    with hold_lock(out):
        _recover_aside(out, kind)
        now_settings = _jsonable(dict(settings))
        now_inputs = {k: fingerprint(p) for k, p in named.items()}
        claim = Claim(path=out, stage=stage, settings=now_settings, inputs=now_inputs, flag=flag,
                      can_overwrite=can_overwrite)  # fmt: skip
        _check_existing(claim, kind, expect, overwrite)
        _say_unchecked(claim, named)
        aside = None
        if not claim.resume and not claim.finished:
            aside = _move_aside(out, kind)  # ours (checked above), made with other settings: start over
        if not claim.finished:
            _write_sidecar(out, stage, now_settings, now_inputs, finished=None)
        try:
            yield claim
        except BaseException:
            if not claim.finished and _wrote_nothing(out, kind):
                _clear_new(out, kind)  # refused or stopped before writing: leave what was there
                if aside is not None:
                    _restore(aside, out)
            elif aside is not None:
                shutil.rmtree(aside)
            raise
        if aside is not None:
            shutil.rmtree(aside)


@dataclass(frozen=True)
class Job:
    """One output to make: where it goes, what it is made from, the settings that decide what it
    holds (only those: ``mcoder.config.output_settings``), and whether to start over."""

    out: str | os.PathLike
    inputs: Mapping[str, str | os.PathLike | None]
    """name -> path of each input file or folder, compared by content on a resume."""
    settings: Mapping[str, Any]
    overwrite: bool = False


R = TypeVar("R")


class Stage(Protocol[R]):
    """What a stage that writes a resumable output provides to ``execute``. A description of
    the shape, not a base class: a stage is any object with these."""

    name: str
    """The writer's name in the sidecar ("rollout", "judge", ...)."""
    kind: str
    """"jsonl" (a file, resumed through ``OUT.part``) or "dir" (a folder)."""
    expect: Sequence[str]
    """What an output of this stage has (``claim_output``'s ``expect``)."""

    def run(self, job: Job, claim: Claim) -> R:
        """Make the output (``claim.resume``: continue an unfinished one); the stage's result."""
        ...

    def finished(self, job: Job, claim: Claim) -> R:
        """The output is already finished with these settings and inputs: say so, and the result."""
        ...


def execute(stage: Stage[R], job: Job, *, share: Callable[[Callable[[], Claim]], Claim] | None = None) -> R:
    """Claim ``job.out`` for ``stage`` (see the module), then run the stage into it and mark it
    finished, or let the stage say that it is finished already. The one way a stage claims its
    output. ``share``: under torchrun, how one process claims and every process gets the claim
    (``train.distributed.broadcast_result``); the process that holds it marks it finished."""
    held = []

    def hold() -> Claim:
        claim = stack.enter_context(
            claim_output(
                job.out,
                stage=stage.name,
                settings=job.settings,
                inputs=job.inputs,
                overwrite=job.overwrite,
                kind=stage.kind,
                expect=stage.expect,
            )
        )
        held.append(claim)
        return claim

    with contextlib.ExitStack() as stack:
        claim = hold() if share is None else share(hold)
        if claim.finished:
            return stage.finished(job, claim)
        result = stage.run(job, claim)
        if held:
            claim.mark_finished()
    return result


def _say_unchecked(claim: Claim, named: Mapping[str, str]) -> None:
    """An input read from stdin cannot be compared with the one that made an earlier output: a
    finished one is refused (it would be 'nothing to do' for data never looked at), a partial one
    is continued with a warning."""
    piped = [k for k, p in named.items() if p == STDIO]
    if not piped or not (claim.finished or claim.resume):
        return
    if claim.finished:
        raise UsageError(
            f"{claim.path} is finished, and its {' and '.join(piped)} input comes from stdin, which "
            "mcoder cannot compare with the input that made it",
            hint="give that input as a file, or pass --overwrite to make the output again from stdin",
        )
    from mcoder import console

    console.warn(
        f"continuing {claim.path}: its {' and '.join(piped)} input comes from stdin and cannot be "
        "checked against the input it was started from"
    )


def _check_paths(out: str, kind: str, flag: str) -> None:
    """``check_target`` on OUT, and on the part file and sidecar mcoder keeps beside it."""
    check_target(out, flag=flag, kind="dir" if kind == "dir" else "file")
    extra = [out + ".part"] if kind == "jsonl" else []
    for p in [*extra, str(sidecar_path(out))]:
        if os.path.lexists(p):
            check_target(p, flag=flag, kind="file")
    side = sidecar_path(out)
    if side.exists() and read_sidecar(out) is None:
        raise UsageError(
            f"{side} exists and is not a record mcoder wrote",
            hint=f"move it away: mcoder keeps the settings of {flag} {out} there",
        )


# ----------------------------------------------------------------------------- --overwrite


def _parts(out: str, kind: str) -> list[str]:
    """What an output is made of on disk: OUT (and OUT.part), and its sidecar."""
    return [out, *([out + ".part"] if kind == "jsonl" else []), str(sidecar_path(out))]


def _move_aside(out: str, kind: str) -> Path | None:
    """Move an earlier output (and its sidecar) into ``.OUT.aside/``; None when there was none."""
    *output, _ = parts = _parts(out, kind)
    if not any(os.path.lexists(p) for p in output):
        return None  # a sidecar alone describes nothing: the new one replaces it
    present = [p for p in parts if os.path.lexists(p)]
    aside = aside_path(out)
    aside.mkdir()
    for p in present:
        os.replace(p, aside / os.path.basename(p))
    return aside


def _restore(aside: Path, out: str) -> None:
    """Put back what ``_move_aside`` moved, then remove the aside folder."""
    head = os.path.dirname(_plain(out))
    for entry in os.scandir(aside):
        os.replace(entry.path, os.path.join(head, entry.name))
    aside.rmdir()


def _wrote_nothing(out: str, kind: str) -> bool:
    """True while the run has made no output of its own (an empty part file does not count)."""
    if os.path.lexists(out):
        return False
    part = out + ".part"
    return kind != "jsonl" or not os.path.lexists(part) or os.path.getsize(part) == 0


def _clear_new(out: str, kind: str) -> None:
    if kind == "jsonl":
        Path(out + ".part").unlink(missing_ok=True)
    sidecar_path(out).unlink(missing_ok=True)


def _recover_aside(out: str, kind: str) -> None:
    """A run killed while it held an output moved aside: put the old one back if the killed run
    wrote nothing, else drop it (the new output has begun)."""
    aside = aside_path(out)
    if not aside.is_dir():
        return
    if _wrote_nothing(out, kind):
        _clear_new(out, kind)
        _restore(aside, out)
    else:
        shutil.rmtree(aside)


def _check_existing(claim: Claim, kind: str, expect: Sequence[str], overwrite: bool) -> None:
    """Set ``claim.resume``/``finished`` from what is there, or refuse."""
    out = claim.path
    present = _existing(out, kind)
    meta = read_sidecar(out)
    if meta is None or not present:
        if present:
            _refuse_foreign(out, present, kind, expect, claim.flag)
            if not overwrite:
                raise UsageError(
                    f"{present} exists but has no record of the settings that made it "
                    f"({sidecar_path(out).name})",
                    hint=_again(claim, "make it again"),
                )
        return
    if meta.get("stage") != claim.stage:
        raise UsageError(
            f"{out} is the output of `mcoder {meta.get('stage')}`, not of `mcoder {claim.stage}`",
            hint=KEEP_HINT.replace("--out", claim.flag),
        )
    finished = meta.get("finished")
    changed_since = False
    if finished and os.path.exists(out):
        now = fingerprint(out)
        changed_since = (now.get("size"), now.get("sha256")) != (finished.get("size"), finished.get("sha256"))
        if changed_since:  # someone wrote there after us: it may no longer be ours at all
            _refuse_foreign(out, out, kind, expect, claim.flag)
    if overwrite:
        return
    if changed_since:
        raise UsageError(
            f"{out} was changed after mcoder finished it",
            hint=_again(claim, "make it again"),
        )
    changes = describe_changes(meta, claim.settings, claim.inputs)
    if changes:
        raise UsageError(
            f"{out} was made with other settings or inputs: " + "; ".join(changes),
            hint="rerun with the original ones to continue it, " + _again(claim, "start over"),
        )
    claim.finished = bool(finished) and os.path.exists(out)
    claim.resume = not claim.finished


def _existing(out: str, kind: str) -> str | None:
    """The earlier output's path (``OUT`` or ``OUT.part``) when there is one. An empty file is
    someone's file; only an empty folder holds nothing to lose."""
    for p in (out, out + ".part") if kind == "jsonl" else (out,):
        if os.path.isdir(p) and not os.path.islink(p):
            if kind == "jsonl" or any(os.scandir(p)):
                return p
        elif os.path.lexists(p):
            return p
    return None


def _again(claim: Claim, what: str) -> str:
    other = f"choose another {claim.flag}"
    return f"pass --overwrite to {what}, or {other}" if claim.can_overwrite else other


def _refuse_foreign(out: str, present: str, kind: str, expect: Sequence[str], flag: str = "--out") -> None:
    """Refuse an existing ``present`` that does not have this stage's shape."""
    keep = KEEP_HINT.replace("--out", flag)
    if kind == "jsonl":
        if os.path.isdir(present):
            raise UsageError(f"{flag} {out} is a folder; this stage writes a JSONL file", hint=keep)
        first = _first_record(present)
        missing = [f for f in expect if first is None or f not in first]
        if first is None or missing:
            what = (
                "it is empty" if os.path.getsize(present) == 0
                else "its first line has no JSON record" if first is None
                else f"its first line has no field {', '.join(repr(m) for m in missing)}"
            )  # fmt: skip
            raise UsageError(
                f"{present} exists and is not an output of this stage ({what})",
                hint=keep,
            )
    else:
        if not os.path.isdir(present):
            raise UsageError(f"{present} exists and is a file; this stage writes a folder", hint=keep)
        missing = [f for f in expect if not os.path.exists(os.path.join(present, f))]
        if missing:
            raise UsageError(
                f"{present} exists and is not an output of this stage (no {', '.join(missing)} in it)",
                hint=keep,
            )


def refuse_foreign_folder(out: str | os.PathLike, *, expect: Sequence[str], flag: str = "--out") -> None:
    """For a writer that replaces its folder whole and keeps no sidecar: refuse an existing,
    non-empty ``out`` without the ``expect`` files (someone else's folder). Pair with
    ``check_target(out, kind="dir")``, which refuses links, devices and files."""
    present = _existing(os.fspath(out), "dir")
    if present:
        _refuse_foreign(os.fspath(out), present, "dir", expect, flag)


def claim_folder(out: str | os.PathLike, marker: str, *, flag: str = "--out", make: bool = True) -> None:
    """For a script or benchmark that removes or replaces files under its folder (not one stage's
    output): make ``out`` its folder or refuse it. Refused where a stage's output is refused
    (``check_target``) and when it is a non-empty folder without ``marker``, the empty file this
    leaves in every folder it accepts (so a rerun into the same folder is allowed). ``make=False``:
    only the checks, nothing written (before taking the folder's lock, say)."""
    check_target(out, flag=flag, kind="dir")
    refuse_foreign_folder(out, expect=(marker,), flag=flag)
    if not make:
        return
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, marker), "a"):
        pass


def _first_record(path: str) -> dict | None:
    import orjson

    try:
        with open(path, "rb") as f:
            for raw in f:
                if raw.strip():
                    obj = orjson.loads(raw)
                    return obj if isinstance(obj, dict) else None
    except (OSError, ValueError):
        return None
    return None


def refuse_input_as_output(
    out: str | os.PathLike, inputs: Mapping[str, str | os.PathLike], flag: str = "--out"
) -> None:
    """UsageError when ``out`` (or its part file) is one of ``inputs``: same inode or real path."""
    out = os.fspath(out)
    if out == STDIO:
        return
    for name, p in inputs.items():
        p = os.fspath(p)
        if p == STDIO:
            continue
        for candidate in (out, out + ".part"):
            if _same_file(candidate, p):
                raise UsageError(
                    f"{flag} {out} is also the {name} input ({p})",
                    hint="write the output to a new file; the input is left as it is",
                )


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


# ----------------------------------------------------------------------------- the lock


@contextlib.contextmanager
def hold_lock(out: str | os.PathLike) -> Iterator[Path]:
    """Hold the advisory lock of ``out`` (``OUT.lock``, holding our pid) for the block.

    A second holder gets ``UsageError`` at once, naming the file and the holder's pid.
    """
    lock = lock_path(out)
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd, stale = _acquire(lock, os.fspath(out))
    if stale is not None and stale != os.getpid():
        from mcoder import console

        # The kernel freed the lock, so its holder is gone; its pid may be another process's now.
        gone = "no longer running" if not pid_alive(stale) else "ended; that pid now belongs to another process"
        console.info(f"taking over the lock of {os.fspath(out)} left by an earlier run (pid {stale}, {gone})")
    try:
        yield lock
    finally:
        # Unlink before unlocking: a run that opened the old file re-checks the inode (_acquire).
        with contextlib.suppress(OSError):
            if os.fstat(fd).st_ino == os.stat(lock).st_ino:
                os.unlink(lock)
        os.close(fd)


def _acquire(lock: Path, out: str) -> tuple[int, int | None]:
    """The locked file's descriptor, and the pid a dead holder left in it (if any)."""
    while True:
        try:  # never through a link, never blocking on a FIFO someone left under this name
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        except OSError as e:
            raise UsageError(f"cannot lock {out}: {lock} is not a lock file ({e.strerror})", hint="move it away") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise UsageError(f"cannot lock {out}: {lock} is not a regular file", hint="move it away")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = _read_pid(fd)
            os.close(fd)
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise UsageError(
                f"{out} is being written by another run (pid {holder or 'unknown'}, lock {lock})",
                hint="wait for that run to finish or stop it: two writers would mix their records",
            ) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # the holder removed this file as we opened it: lock the new one
            os.close(fd)
            continue
        stale = _read_pid(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd, stale


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip() or "x")
    except (OSError, ValueError):
        return None


# ----------------------------------------------------------------------------- fingerprints


def fingerprint(path: str | os.PathLike) -> dict[str, Any]:
    """Size and sha256 of an input file (whole, or sampled past 256 MiB) or folder; see the module."""
    p = os.fspath(path)
    if p == STDIO:
        return {"path": STDIO}
    if os.path.isdir(p):
        h = hashlib.sha256()
        size = 0
        for entry in sorted(os.scandir(p), key=lambda e: e.name):
            if entry.is_file():
                st = entry.stat()
                size += st.st_size
                h.update(f"{entry.name}\0{st.st_size}\0".encode())
                _hash_ends(h, entry.path, st.st_size, FOLDER_SAMPLE)
        return {"path": p, "size": size, "sha256": h.hexdigest(), "hashed": "folder"}
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return {"path": p, "missing": True}
    h = hashlib.sha256()
    if st.st_size <= FULL_HASH_LIMIT:
        _hash_ends(h, p, st.st_size, FULL_HASH_LIMIT)
        return {"path": p, "size": st.st_size, "sha256": h.hexdigest(), "hashed": "all"}
    h.update(str(st.st_mtime_ns).encode())
    _hash_ends(h, p, st.st_size, SAMPLE)
    return {"path": p, "size": st.st_size, "sha256": h.hexdigest(), "hashed": "sampled"}


def _hash_ends(h: Any, path: str, size: int, each: int) -> None:
    """Feed ``h`` the whole file when it is at most 2 x ``each`` bytes, else both ends."""
    with open(path, "rb") as f:
        if size <= 2 * each:
            while chunk := f.read(1 << 20):
                h.update(chunk)
            return
        h.update(f.read(each))
        f.seek(size - each)
        h.update(f.read(each))


def describe_changes(
    meta: Mapping[str, Any], settings: Mapping[str, Any], inputs: Mapping[str, Any]
) -> list[str]:
    """What differs between a sidecar and this run: 'temperature 1.0 -> 0.7', 'problems changed'."""
    changes = []
    before = meta.get("settings") or {}
    for k in sorted(set(before) | set(settings)):
        if before.get(k, "<unset>") != settings.get(k, "<unset>"):
            changes.append(f"{k} {_show(before.get(k, '<unset>'))} -> {_show(settings.get(k, '<unset>'))}")
    old_inputs = meta.get("inputs") or {}
    for k in sorted(set(old_inputs) | set(inputs)):
        a, b = old_inputs.get(k), inputs.get(k)
        if a is None or b is None:
            changes.append(f"input {k} {'added' if a is None else 'dropped'}")
        elif STDIO in (a.get("path"), b.get("path")):
            continue  # a pipe cannot be fingerprinted
        elif b.get("missing") and not a.get("missing"):  # (a dataset by name is never a file: both say so)
            changes.append(f"input {k} is missing ({b.get('path')}: no such file; it was {a.get('path')})")
        elif (a.get("size"), a.get("sha256")) != (b.get("size"), b.get("sha256")):
            changes.append(f"input {k} changed ({b.get('path')}: not the content the output was made from)")
    return changes


def _show(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _jsonable(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists, paths strings)."""
    return json.loads(json.dumps(value, default=str))


# ----------------------------------------------------------------------------- the sidecar


def read_sidecar(out: str | os.PathLike) -> dict[str, Any] | None:
    """The sidecar of ``out``, or None when there is none (or it is not ours)."""
    try:
        meta = json.loads(sidecar_path(out).read_text())
    except (FileNotFoundError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("mcoder_output") == FORMAT else None


def _write_sidecar(out: str, stage: str, settings: dict, inputs: dict, *, finished: dict | None) -> None:
    meta = {
        "mcoder_output": FORMAT,
        "stage": stage,
        "finished": finished,
        "settings": settings,
        "inputs": inputs,
        "mcoder_version": __version__,
        "updated": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    path = sidecar_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


# Errors of the place written to, not of the data: raised again naming the output (a full disk's
# error names no file, and a copy's may name the file it read).
FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


@contextlib.contextmanager
def naming_output(out: str | os.PathLike) -> Iterator[None]:
    """An OSError of a full disk (or quota) inside the block is raised again naming ``out``."""
    try:
        yield
    except OSError as e:
        if e.errno in FULL and e.filename != os.fspath(out):
            raise OSError(e.errno, e.strerror or os.strerror(e.errno), os.fspath(out)) from None
        raise


def temp_folder(out: str | os.PathLike) -> Path:
    """A new, empty ``.OUT.tmp`` beside ``out`` for a folder written whole then renamed into place
    (checkpoints, exports). One name per output: what a killed save left is removed here, by the
    next save (the caller holds the output's lock)."""
    head, name = os.path.split(_plain(out))
    tmp = Path(head, f".{name}.tmp")
    if tmp.is_dir() and not tmp.is_symlink():
        shutil.rmtree(tmp)
    elif os.path.lexists(tmp):
        tmp.unlink()
    tmp.mkdir(parents=True)
    return tmp


# ----------------------------------------------------------------------------- whole documents


def check_document(
    path: str | os.PathLike, *, stage: str, flag: str, inputs: Mapping[str, str | os.PathLike | None] | None = None
) -> None:
    """Refuse, before the work, a document path ``write_document`` would refuse (see the module)."""
    p = os.fspath(path)
    if p == STDIO:
        return
    refuse_input_as_output(p, {k: v for k, v in (inputs or {}).items() if v is not None}, flag=flag)
    check_target(p, flag=flag, kind="file")
    side = sidecar_path(p)
    if os.path.lexists(side):
        check_target(side, flag=flag, kind="file")
    if not os.path.lexists(p):
        return
    meta = read_sidecar(p)
    if meta is None or meta.get("stage") != stage or not meta.get("finished"):
        raise UsageError(f"{flag} {p} exists and mcoder did not write it", hint=KEEP_HINT.replace("--out", flag))
    now, was = fingerprint(p), meta["finished"]
    if (now.get("size"), now.get("sha256")) != (was.get("size"), was.get("sha256")):
        raise UsageError(
            f"{flag} {p} was changed after mcoder wrote it", hint=KEEP_HINT.replace("--out", flag)
        )


def write_document(
    path: str | os.PathLike,
    data: bytes | str,
    *,
    stage: str,
    flag: str,
    inputs: Mapping[str, str | os.PathLike | None] | None = None,
) -> None:
    """Write a whole file at once, under its lock and through a temp file, then its sidecar; an
    existing file is replaced only when mcoder wrote it and nobody changed it since. ``-``: the
    text to stdout (``mcoder.console.document``)."""
    p = os.fspath(path)
    if p == STDIO:
        from mcoder import console

        console.document(data if isinstance(data, str) else data.decode("utf-8", "replace"))
        return
    raw = data.encode("utf-8") if isinstance(data, str) else data
    check_document(p, stage=stage, flag=flag, inputs=inputs)  # a path under a file: refused, not mkdir'd
    os.makedirs(os.path.dirname(_plain(p)), exist_ok=True)
    with hold_lock(p):
        check_document(p, stage=stage, flag=flag, inputs=inputs)
        head, name = os.path.split(_plain(p))
        tmp = os.path.join(head, f".{name}.part")
        Path(tmp).unlink(missing_ok=True)  # a leftover of a killed run (we hold the lock)
        try:
            with naming_output(p), open(tmp, "xb") as f:
                f.write(raw)
        except BaseException:  # a full disk, Ctrl-C: no part file is left behind
            Path(tmp).unlink(missing_ok=True)
            raise
        os.replace(tmp, p)
        with naming_output(sidecar_path(p)):
            _write_sidecar(p, stage, {}, {}, finished=fingerprint(p))
