"""JSONL in and out: streaming reads with file:line errors, resumable appends, an atomic finish.

Every stage writes through ``RecordWriter``: records go to ``OUT.part`` as they are made, one
flushed line each, and ``finish()`` renames the part file to ``OUT``. A stage that is killed
leaves the part file behind; the same command run again reads the keys already written (a torn
last line is cut off), skips that work and appends the rest, so no record is lost or written
twice. ``-`` means standard input or standard output.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Self, TypeVar

import orjson

from mcoder.errors import DataError, McoderError
from mcoder.records import from_dict, to_dict

T = TypeVar("T")

STDIO = "-"


def display_name(path: str | os.PathLike) -> str:
    return "<stdin>" if str(path) == STDIO else str(path)


@contextlib.contextmanager
def _open_binary_input(path: str | os.PathLike) -> Iterator[IO[bytes]]:
    if str(path) == STDIO:
        yield sys.stdin.buffer
        return
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed by `with f` below; the excepts cover the open alone
    except FileNotFoundError:
        raise McoderError(f"no such file: {path}", hint="check the path", exit_code=2) from None
    except IsADirectoryError:
        raise McoderError(f"{path} is a folder, not a JSONL file", exit_code=2) from None
    with f:
        yield f


def iter_objects(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line, read one line at a time."""
    name = display_name(path)
    with _open_binary_input(path) as f:
        for lineno, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError as e:
                raise DataError(_json_problem(raw, e), path=name, line=lineno) from None
            if not isinstance(obj, dict):
                raise DataError("expected a JSON object on each line", path=name, line=lineno)
            yield lineno, obj


def _json_problem(raw: bytes, e: orjson.JSONDecodeError) -> str:
    """What is wrong with one line, placed by column (orjson's own "line 1" is within the line)."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as u:
        return f"not UTF-8 text (byte {u.start + 1} of the line is {raw[u.start]:#04x})"
    return f"invalid JSON at column {e.colno}: {e.msg}"


def read_records(path: str | os.PathLike, cls: type[T]) -> Iterator[T]:
    """Parse each line of ``path`` as a ``cls`` record, strictly."""
    for _, rec in read_numbered(path, cls):
        yield rec


def read_numbered(path: str | os.PathLike, cls: type[T]) -> Iterator[tuple[int, T]]:
    """(line number, record) for each line of ``path``, parsed strictly as ``cls``."""
    name = display_name(path)
    for lineno, obj in iter_objects(path):
        try:
            yield lineno, from_dict(cls, obj)
        except DataError as e:
            raise DataError(e.reason, path=name, line=lineno, field=e.field, hint=e.hint) from None


def index_records(
    path: str | os.PathLike, cls: type[T], key: Callable[[T], str], field: str = "id"
) -> dict[str, T]:
    """All records of ``path`` by key (the record's ``field``); a repeated key is a data error
    naming both lines and that field."""
    out: dict[str, T] = {}
    ids = UniqueIds(path, field=field)
    for lineno, rec in read_numbered(path, cls):
        k = key(rec)
        ids.add(k, lineno)
        out[k] = rec
    return out


class UniqueIds:
    """Checks that ids are unique within one file, remembering only ids and line numbers.

    ``add(id, line)`` raises DataError (exit 3) naming the file, the line, the id and the line
    where it first appeared. Use it for any JSONL whose records are keyed (problems, rollouts,
    verdicts)::

        ids = UniqueIds(path, field="id")
        for lineno, rollout in read_numbered(path, Rollout):
            ids.add(rollout.id, lineno)
    """

    def __init__(self, path: str | os.PathLike, field: str = "id"):
        self.name = display_name(path)
        self.field = field
        self.first: dict[str, int] = {}

    def add(self, key: str, line: int) -> None:
        first = self.first.setdefault(key, line)
        if first != line:
            raise DataError(
                f"duplicate {self.field} {key!r} (first on line {first})",
                path=self.name,
                line=line,
                field=self.field,
                hint="ids must be unique within a file; were two files concatenated, or one run twice?",
            )

    def __contains__(self, key: str) -> bool:
        return key in self.first

    def __len__(self) -> int:
        return len(self.first)


def check_verdict_joins(
    verdict_problem_id: str,
    rollout_problem_id: str,
    rollout_id: str,
    *,
    path: str | os.PathLike,
    line: int | None,
) -> None:
    """A verdict must be for the same problem as its rollout: DataError (exit 3) otherwise,
    naming the verdicts file, the verdict's line and the rollout id."""
    if verdict_problem_id != rollout_problem_id:
        raise DataError(
            f"verdict of rollout {rollout_id!r} is for problem {verdict_problem_id!r}, "
            f"the rollout for {rollout_problem_id!r}",
            path=display_name(path),
            line=line,
            field="problem_id",
            hint="the verdicts were judged from another rollouts file: judge these rollouts again",
        )


def dumps(record: Any) -> bytes:
    data = record if isinstance(record, dict) else to_dict(record)
    return orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"


class RecordWriter:
    """Append records to ``path`` with resume after a kill and an atomic finish.

    ``key`` is the field that identifies a record (``id``, ``rollout_id``); ``done`` holds the
    keys already written, by this run or an earlier one, and ``write`` skips those.
    ``resume=False`` starts over, discarding an earlier part file or output.
    """

    def __init__(self, path: str | os.PathLike, key: str, *, resume: bool = True):
        self.path = str(path)
        self.key = key
        self.done: set[str] = set()
        self.resumed = 0
        self.written = 0
        self._stdout = self.path == STDIO
        if self._stdout:
            self._f: IO[bytes] = sys.stdout.buffer
            return
        target = Path(self.path)
        if target.parent and not target.parent.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
        self.part = Path(self.path + ".part")
        if not resume:
            with contextlib.suppress(FileNotFoundError):
                self.part.unlink()
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
        elif not self.part.exists() and target.exists():
            # A finished output: continue it, so that a rerun with more input only adds.
            os.replace(target, self.part)
        if self.part.exists():
            self._recover()
        self._f = open(self.part, "ab")  # noqa: SIM115 - the writer's file; finish() or close() closes it

    def _recover(self) -> None:
        """Read the keys of a part file; cut off a torn last line left by a kill."""
        good_end = 0
        with open(self.part, "rb") as f:
            for lineno, raw in enumerate(f, start=1):
                if not raw.endswith(b"\n"):
                    break
                try:
                    obj = orjson.loads(raw)
                    k = obj[self.key]
                except (orjson.JSONDecodeError, KeyError, TypeError):
                    raise DataError(
                        f"cannot resume: line is not a record with '{self.key}'",
                        path=str(self.part),
                        line=lineno,
                        hint="pass --overwrite to start over, or choose another --out",
                    ) from None
                self.done.add(k)
                good_end += len(raw)
        if good_end != self.part.stat().st_size:
            with open(self.part, "r+b") as f:
                f.truncate(good_end)
        self.resumed = len(self.done)

    def write(self, record: Any) -> bool:
        data = record if isinstance(record, dict) else to_dict(record)
        k = data[self.key]
        if k in self.done:
            return False
        self._f.write(dumps(data))
        self._f.flush()
        self.done.add(k)
        self.written += 1
        return True

    def write_all(self, records: Iterable[Any]) -> int:
        return sum(self.write(r) for r in records)

    def finish(self) -> None:
        """Make the output whole: flush, sync, and rename the part file into place."""
        self._f.flush()
        if self._stdout:
            return
        os.fsync(self._f.fileno())
        self._f.close()
        os.replace(self.part, self.path)

    def close(self) -> None:
        """Stop without finishing: the part file stays for a later resume."""
        if not self._stdout and not self._f.closed:
            self._f.flush()
            self._f.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.finish()
        else:
            self.close()


class RepeatedKey(Exception):
    """A JSON object gave ``key`` twice (``json``'s reader would keep the last value silently)."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def keys_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json``: the object, or ``RepeatedKey`` naming a key given twice."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        raise RepeatedKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return out

