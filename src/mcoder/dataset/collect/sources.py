"""Dataset step 1, collect: find the rows of local sources.

A source is a JSONL file (``-``: standard input), a JSON file (a list of rows, one row, or JSONL under a .json name), a
parquet file (any of them optionally gzip-compressed, parquet excepted), a folder written by
``datasets.save_to_disk``, a folder holding any of these, or a dataset by name
(``hf:NAME[@CONFIG][:SPLIT]``, read through ``datasets.load_dataset``; see ``hub.py``). Each row comes with a ``RowRef``
that says where it was read, so that a bad row is reported by file and line (JSONL) or row index.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from mcoder.dataset.budget import DEFAULT, Limits, OverBudget
from mcoder.dataset.collect import hub
from mcoder.errors import DataError, UsageError
from mcoder.jsonl import RepeatedKey, keys_once
from mcoder.outputs import SIDECAR_SUFFIX

JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson")
JSON_SUFFIXES = (".json", ".json.gz")
PARQUET_SUFFIXES = (".parquet",)
DATA_SUFFIXES = JSONL_SUFFIXES + JSON_SUFFIXES + PARQUET_SUFFIXES
STDIN = "-"  # JSONL rows on standard input


@dataclass(frozen=True, slots=True)
class RowRef:
    """Where a row was read: the file as the user named it, its stem, and its position."""

    path: str
    stem: str
    index: int  # 0-based position in the file (or in the split)
    line: int | None = None  # 1-based line, for JSONL
    split: str | None = None  # the split of a saved DatasetDict
    limits: Limits = DEFAULT  # the budgets the row's decoders count against

    def where(self) -> str:
        if self.line is not None:
            return f"{self.path}:{self.line}"
        split = f" split {self.split}" if self.split else ""
        return f"{self.path}{split} row {self.index}"

    def error(self, reason: str, field: str | None = None, hint: str | None = None) -> DataError:
        if self.line is not None:
            return DataError(reason, path=self.path, line=self.line, field=field, hint=hint)
        return DataError(reason, path=self.where(), field=field, hint=hint)

    def derived_id(self) -> str:
        """A stable id for a row whose source has none: file stem, split, row index."""
        split = f"{self.split}/" if self.split else ""
        return f"{self.stem}/{split}{self.index}"


@dataclass(frozen=True, slots=True)
class Source:
    """One readable unit: a data file, a saved dataset folder, or a dataset loaded by name."""

    path: str  # as the user named it (or joined under a named folder)
    kind: str  # jsonl | json | parquet | saved | hub
    splits: tuple = field(default=(), compare=False, repr=False)  # hub: the loaded (split, Dataset) pairs
    label: str | None = field(default=None, compare=False)  # the id prefix of its id-less rows (``labelled``)
    limits: Limits = field(default=DEFAULT, compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.path if self.kind == "hub" else Path(self.path).name

    @property
    def stem(self) -> str:
        if self.label:
            return self.label
        if self.path == STDIN:
            return "stdin"
        if self.kind == "hub":
            return hub.HubSpec.parse(self.path).stem
        return _strip_suffix(self.name)

    def rows(self) -> Iterator[tuple[RowRef, dict[str, Any] | Unread]]:
        reader = {
            "jsonl": _jsonl_rows,
            "json": _json_rows,
            "parquet": _parquet_rows,
            "saved": _saved_rows,
            "hub": _hub_rows,
        }
        try:
            yield from reader[self.kind](self)
        except Exception as e:  # noqa: BLE001 - sorted in _unreadable; the rest goes on unchanged
            raise _unreadable(self.path, e) from None

    def count(self) -> int | None:
        """The number of rows where it is cheap to know (for the progress bar)."""
        if self.kind == "hub":
            return sum(ds.num_rows for _, ds in self.splits)
        if self.kind == "parquet":
            import pyarrow.parquet as pq

            try:
                return pq.ParquetFile(self.path).metadata.num_rows
            except Exception as e:  # noqa: BLE001 - sorted in _unreadable
                raise _unreadable(self.path, e) from None
        return None


def _unreadable(path: str, e: Exception) -> Exception:
    """A file that cannot be read as its kind (cut short, not gzip, not parquet) is bad input
    naming the file; a DataError about a row, or anything else, goes on as it is."""
    if isinstance(e, MemoryError):
        return DataError(
            "not enough memory to read the file",
            path=path,
            hint="run with more memory, or skip long rows with --limit row_bytes=N",
        )
    broken = (OSError, EOFError, zlib.error, UnicodeDecodeError)
    if isinstance(e, DataError) or not (isinstance(e, broken) or type(e).__module__.startswith("pyarrow")):
        return e
    return DataError(
        f"cannot read the file ({type(e).__name__}: {e})"[:400],
        path=path,
        hint="check that the file is whole and in the format its name says",
    )


def expand(paths: list[str]) -> tuple[list[Source], list[tuple[str, str]]]:
    """The sources under ``paths`` in a stable order, and the paths passed over with the reason.

    A folder is read in sorted order; files that are not data (a README next to the data, as a
    shell glob brings along) are passed over and reported, never read as problems.
    """
    sources: list[Source] = []
    ignored: list[tuple[str, str]] = []
    read: set[str] = set()  # real paths of the folders walked: a link loop is walked once
    for p in paths:
        if p == STDIN:
            sources.append(Source(STDIN, "jsonl"))
            continue
        if hub.is_hub(p):
            sources.append(Source(p, "hub", tuple(hub.load(p))))
            continue
        path = Path(p)
        if not path.exists():
            raise UsageError(
                f"no such file or folder: {p}",
                hint=f"check the SOURCE paths (a dataset by name: {hub.SYNTAX})",
            )
        _expand_one(str(p), sources, ignored, read)
    return sources, ignored


def labelled(sources: list[Source], limits: Limits = DEFAULT) -> list[Source]:
    """``sources`` with the budgets and each one's label: the start of the ids derived for rows
    without one. A file's label is its path relative to the folder holding every source file,
    less the data suffix (``splitA/codeforces`` and ``splitB/codeforces``, never ``codeforces``
    twice); one file alone keeps its stem, as before. Labels that would still be equal
    (``a.json`` beside ``a.jsonl``) keep their suffix."""
    files = [s for s in sources if s.kind != "hub" and s.path != STDIN]
    root = os.path.commonpath([os.path.dirname(os.path.abspath(s.path)) for s in files]) if files else ""
    rel = {s.path: Path(os.path.relpath(os.path.abspath(s.path), root)).as_posix() for s in files}
    bare = {p: _strip_suffix(r) for p, r in rel.items()}
    counts: dict[str, int] = {}
    for b in bare.values():
        counts[b] = counts.get(b, 0) + 1
    out = []
    for s in sources:
        label = None
        if s.path in rel:
            label = bare[s.path] if counts[bare[s.path]] == 1 else rel[s.path]
        out.append(replace(s, label=label, limits=limits))
    return out


def _strip_suffix(name: str) -> str:
    for suffix in sorted(DATA_SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _expand_one(p: str, sources: list[Source], ignored: list[tuple[str, str]], read: set[str]) -> None:
    path = Path(p)
    if path.is_dir():
        real = os.path.realpath(p)
        if real in read:  # reached again through a link: a loop would be walked until the path is too long
            ignored.append((p, f"already read as {real} (a link to a folder taken before)"))
            return
        read.add(real)
        if _is_saved_dataset(path):
            sources.append(Source(p, "saved"))
            return
        for child in sorted(os.listdir(path)):
            if not child.startswith("."):
                _expand_one(os.path.join(p, child), sources, ignored, read)
        return
    name = path.name
    if name.endswith(SIDECAR_SUFFIX):
        ignored.append((p, "mcoder's record of how the file beside it was made, not data"))
    elif name.endswith(JSONL_SUFFIXES):
        sources.append(Source(p, "jsonl"))
    elif name.endswith(JSON_SUFFIXES):
        sources.append(Source(p, "json"))
    elif name.endswith(PARQUET_SUFFIXES):
        sources.append(Source(p, "parquet"))
    elif not _is_saved_part(path):
        ignored.append((p, f"not a data file (known: {', '.join(DATA_SUFFIXES)}, or a saved dataset)"))


def _is_saved_dataset(path: Path) -> bool:
    return (path / "dataset_dict.json").is_file() or (
        (path / "state.json").is_file() and (path / "dataset_info.json").is_file()
    )


def _is_saved_part(path: Path) -> bool:
    return path.name.endswith(".arrow") or path.name in ("state.json", "dataset_info.json")


# ------------------------------------------------------------------ readers


def _open(path: str):
    if path == STDIN:
        return contextlib.nullcontext(sys.stdin.buffer)
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


class Unread:
    """A row left unread because it is over a budget (it stands in the place of its data)."""

    def __init__(self, skip: OverBudget):
        self.skip = skip


def _jsonl_rows(src: Source) -> Iterator[tuple[RowRef, dict[str, Any] | Unread]]:
    index = 0
    name = "<stdin>" if src.path == STDIN else src.path
    with _open(src.path) as f:
        for lineno, raw, size in _lines(f, src.limits.row_bytes):
            if raw is not None and (not raw or raw.isspace()):  # isspace: no copy of a long line
                continue
            ref = RowRef(name, src.stem, index, line=lineno, limits=src.limits)
            if raw is None:
                yield ref, Unread(OverBudget("row_bytes", src.limits.row_bytes, size))
            else:
                try:
                    row = _loads(raw, ref)
                except MemoryError:
                    raise _no_memory(ref, len(raw)) from None
                yield ref, _as_row(row, ref)
            index += 1


def _lines(f, limit: int) -> Iterator[tuple[int, bytes | None, int]]:
    """(line number, line, size) of each line, reading at most ``limit`` + 1 bytes at a time: a
    longer line is passed over in pieces and comes as (number, None, its size)."""
    lineno = 0
    while raw := f.readline(limit + 1):
        lineno += 1
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield lineno, raw, len(raw)
            continue
        size = len(raw)
        while raw and not raw.endswith(b"\n"):
            raw = f.readline(1 << 20)
            size += len(raw)
        yield lineno, None, size


def _json_rows(src: Source) -> Iterator[tuple[RowRef, dict[str, Any]]]:
    limit = src.limits.json_file_bytes
    with _open(src.path) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise DataError(
            f"over the json_file_bytes budget of {limit:,} bytes (a JSON file is read whole)",
            path=src.path,
            hint="save the rows as JSONL (read a line at a time), or raise --limit json_file_bytes=N",
        )
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        if data.lstrip().startswith(b"{"):  # JSONL under a .json name
            yield from _jsonl_rows(replace(src, kind="jsonl"))
            return
        bad = _not_utf8(data)
        if bad is None:
            raise DataError(f"invalid JSON ({e})", path=src.path) from None
        line = data.count(b"\n", 0, bad[0]) + 1
        raise DataError(bad[1], path=src.path, line=line, hint=_UTF8_HINT) from None
    twice = _repeated_in_rows(data) if repeated_key(data) is not None else None
    if twice is not None:  # (each row's own check: the file as a whole is read once when it is clean)
        index, key = twice
        raise RowRef(src.path, src.stem, index).error(f"key {key!r} is given twice in one object", field=key,
                                                      hint=_TWICE_HINT)  # fmt: skip
    rows = obj if isinstance(obj, list) else [obj]
    for index, row in enumerate(rows):
        ref = RowRef(src.path, src.stem, index, limits=src.limits)
        yield ref, _as_row(row, ref)


def _parquet_rows(src: Source) -> Iterator[tuple[RowRef, dict[str, Any]]]:
    import pyarrow.parquet as pq

    index = 0
    for batch in pq.ParquetFile(src.path).iter_batches(batch_size=256):
        for row in batch.to_pylist():
            yield RowRef(src.path, src.stem, index, limits=src.limits), row
            index += 1


def _saved_rows(src: Source) -> Iterator[tuple[RowRef, dict[str, Any]]]:
    import datasets

    loaded = datasets.load_from_disk(src.path)
    splits = list(loaded.items()) if isinstance(loaded, datasets.DatasetDict) else [(None, loaded)]
    yield from _dataset_rows(src, splits)


def _hub_rows(src: Source) -> Iterator[tuple[RowRef, dict[str, Any]]]:
    return _dataset_rows(src, src.splits)


def _dataset_rows(src: Source, splits) -> Iterator[tuple[RowRef, dict[str, Any]]]:
    for split, ds in splits:
        for index, row in enumerate(ds):
            yield RowRef(src.path, src.stem, index, split=split, limits=src.limits), row


def _loads(raw: bytes, ref: RowRef) -> Any:
    try:
        row = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        bad = _not_utf8(raw)
        if bad is not None:
            raise ref.error(bad[1], hint=_UTF8_HINT) from None
        if "memory" in str(e).lower():
            raise _no_memory(ref, len(raw)) from None
        # orjson counts lines within the row, which is line 1 of itself: say only the column.
        raise ref.error(f"invalid JSON ({str(e).replace('line 1 column', 'column')})") from None
    twice = repeated_key(raw)
    if twice is not None:
        raise ref.error(f"key {twice!r} is given twice in one object", field=twice, hint=_TWICE_HINT)
    return row


_TWICE_HINT = "JSON readers differ on which of the two values wins: fix the source, keep one"



def repeated_key(data: bytes) -> str | None:
    """A key given twice in one object of ``data`` (JSON orjson has read), or None. orjson keeps
    the last of two silently; ``json``'s reader hands each object's pairs over, in order."""
    try:
        json.loads(data, object_pairs_hook=keys_once)
    except RepeatedKey as e:
        return e.key
    except (ValueError, RecursionError):  # what orjson read and json does not: nothing to tell
        return None
    return None


def _repeated_in_rows(data: bytes) -> tuple[int, str] | None:
    """(row index, key) of the first row of a JSON file that gives a key twice (a file of one
    object is row 0)."""
    text = data.decode("utf-8")
    decoder = json.JSONDecoder(object_pairs_hook=keys_once)
    pos = len(text) - len(text.lstrip())
    if not text.startswith("[", pos):
        return (0, repeated_key(data) or "?")
    pos, index = pos + 1, 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            return None
        try:
            _, pos = decoder.raw_decode(text, pos)
        except RepeatedKey as e:
            return index, e.key
        index += 1


_UTF8_HINT = "save the file as UTF-8"


def _no_memory(ref: RowRef, size: int) -> DataError:
    return ref.error(
        f"not enough memory to read this row of {size:,} bytes (it was not checked as JSON)",
        hint="run with more memory, or skip rows this long with --limit row_bytes=N",
    )


def _not_utf8(data: bytes) -> tuple[int, str] | None:
    """(offset, message) of the first byte that is not UTF-8, or None when all of it is."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        column = e.start - data.rfind(b"\n", 0, e.start)
        return e.start, f"not valid UTF-8: byte 0x{data[e.start]:02x} at column {column}"
    return None


def _as_row(obj: Any, ref: RowRef) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ref.error(f"expected a JSON object for each row, got {type(obj).__name__}")
    return obj
