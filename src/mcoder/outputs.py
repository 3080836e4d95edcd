"""Outputs you can trust: one writer per output, resume only what still matches, nothing of the
user's overwritten.

Every stage that writes a file or a folder ``OUT`` claims it first::

    with claim_output(out, stage="judge", settings={"compare": "strict", ...},
                      inputs={"problems": problems_path, "rollouts": rollouts_path},
                      overwrite=overwrite, expect=("rollout_id",)) as claim:
        if claim.finished:
            console.info(claim.finished_message)
            return
        with RecordWriter(out, "rollout_id", resume=claim.resume) as writer:
            ...
        claim.mark_finished()

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
  ``--overwrite`` starts over (the earlier output is removed once the new run holds the lock,
  so no record made with the old settings survives into the new one). A finished output whose
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
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcoder import __version__
from mcoder.errors import UsageError

STDIO = "-"
SIDECAR_SUFFIX = ".meta.json"
LOCK_SUFFIX = ".lock"
FORMAT = 1
FULL_HASH_LIMIT = 256 << 20  # bytes: files up to this size are hashed whole
SAMPLE = 16 << 20  # bytes hashed at each end of a larger file
FOLDER_SAMPLE = 1 << 20  # bytes hashed at each end of each file of an input folder

KEEP_HINT = "choose another --out; mcoder never overwrites files it did not write"


def sidecar_path(out: str | os.PathLike) -> Path:
    return Path(_plain(out) + SIDECAR_SUFFIX)


def lock_path(out: str | os.PathLike) -> Path:
    return Path(_plain(out) + LOCK_SUFFIX)


def _plain(out: str | os.PathLike) -> str:
    """The path without a trailing slash (so that a folder's sidecar sits beside it)."""
    return os.path.abspath(os.fspath(out)).rstrip(os.sep) or os.sep


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
) -> Iterator[Claim]:
    """Lock ``path``, check it against its sidecar, and say whether to resume (see the module).

    ``stage``: the writer's name ("rollout", "judge", "dataset", "train", "loop").
    ``settings``: every setting that changes what the output holds (JSON-able values).
    ``inputs``: name -> path of each input file or folder (``None`` entries are left out).
    ``kind``: "jsonl" (a file, resumed through ``OUT.part``) or "dir" (a folder).
    ``expect``: jsonl: fields the first record of a file of this stage has; dir: files the
    folder has. An existing output without them is not this stage's and is never touched.
    Raises ``UsageError`` (exit 2) for a locked, foreign or mismatching output.
    """
    if kind not in ("jsonl", "dir"):
        raise ValueError(f"kind {kind!r}")
    named = {k: os.fspath(v) for k, v in (inputs or {}).items() if v is not None}
    if os.fspath(path) == STDIO:
        yield Claim(path=STDIO, stage=stage, stdout=True)
        return
    out = os.fspath(path)
    refuse_input_as_output(out, named)
    with hold_lock(out):
        now_settings = _jsonable(dict(settings))
        now_inputs = {k: fingerprint(p) for k, p in named.items()}
        claim = Claim(path=out, stage=stage, settings=now_settings, inputs=now_inputs)
        _check_existing(claim, kind, expect, overwrite)
        if not claim.resume and not claim.finished:
            _discard(out, kind)  # ours (checked above), and made with other settings: start over
        if not claim.finished:
            _write_sidecar(out, stage, now_settings, now_inputs, finished=None)
        try:
            yield claim
        except BaseException:
            if not claim.finished and not os.path.lexists(out) and not os.path.lexists(out + ".part"):
                sidecar_path(out).unlink(missing_ok=True)  # refused before writing: leave nothing
            raise


def _check_existing(claim: Claim, kind: str, expect: Sequence[str], overwrite: bool) -> None:
    """Set ``claim.resume``/``finished`` from what is there, or refuse."""
    out = claim.path
    present = _existing(out, kind)
    meta = read_sidecar(out)
    if meta is None or not present:
        if present:
            _refuse_foreign(out, present, kind, expect)
            if not overwrite:
                raise UsageError(
                    f"{present} exists but has no record of the settings that made it "
                    f"({sidecar_path(out).name})",
                    hint="pass --overwrite to make it again, or choose another --out",
                )
        return
    if meta.get("stage") != claim.stage:
        raise UsageError(
            f"{out} is the output of `mcoder {meta.get('stage')}`, not of `mcoder {claim.stage}`",
            hint=KEEP_HINT,
        )
    finished = meta.get("finished")
    changed_since = False
    if finished and os.path.exists(out):
        now = fingerprint(out)
        changed_since = (now.get("size"), now.get("sha256")) != (finished.get("size"), finished.get("sha256"))
        if changed_since:  # someone wrote there after us: it may no longer be ours at all
            _refuse_foreign(out, out, kind, expect)
    if overwrite:
        return
    if changed_since:
        raise UsageError(
            f"{out} was changed after mcoder finished it",
            hint="pass --overwrite to make it again, or choose another --out",
        )
    changes = describe_changes(meta, claim.settings, claim.inputs)
    if changes:
        raise UsageError(
            f"{out} was made with other settings or inputs: " + "; ".join(changes),
            hint="rerun with the original ones to continue it, pass --overwrite to start over, "
            "or choose another --out",
        )
    claim.finished = bool(finished) and os.path.exists(out)
    claim.resume = not claim.finished


def _discard(out: str, kind: str) -> None:
    """Remove an earlier output that is being made again (so no old record survives a crash)."""
    import shutil

    for p in (out, out + ".part") if kind == "jsonl" else (out,):
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        elif os.path.lexists(p):
            os.unlink(p)


def _existing(out: str, kind: str) -> str | None:
    """The earlier output's path (``OUT`` or ``OUT.part``) when it holds anything."""
    for p in (out, out + ".part") if kind == "jsonl" else (out,):
        if os.path.isdir(p):
            if kind == "jsonl" or any(os.scandir(p)):
                return p
        elif os.path.exists(p) and (kind == "dir" or os.path.getsize(p) > 0):
            return p
    return None


def _refuse_foreign(out: str, present: str, kind: str, expect: Sequence[str]) -> None:
    """Refuse an existing ``present`` that does not have this stage's shape."""
    if kind == "jsonl":
        if os.path.isdir(present):
            raise UsageError(f"--out {out} is a folder; this stage writes a JSONL file", hint=KEEP_HINT)
        first = _first_record(present)
        missing = [f for f in expect if first is None or f not in first]
        if first is None or missing:
            what = "no JSON record" if first is None else f"no field {', '.join(repr(m) for m in missing)}"
            raise UsageError(
                f"{present} exists and is not an output of this stage (its first line has {what})",
                hint=KEEP_HINT,
            )
    else:
        if not os.path.isdir(present):
            raise UsageError(f"{present} exists and is a file; this stage writes a folder", hint=KEEP_HINT)
        missing = [f for f in expect if not os.path.exists(os.path.join(present, f))]
        if missing:
            raise UsageError(
                f"{present} exists and is not an output of this stage (no {', '.join(missing)} in it)",
                hint=KEEP_HINT,
            )


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


def refuse_input_as_output(out: str | os.PathLike, inputs: Mapping[str, str | os.PathLike]) -> None:
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
                    f"--out {out} is also the {name} input ({p})",
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

        console.info(f"taking over the lock of {os.fspath(out)} left by pid {stale}, no longer running")
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
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
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
