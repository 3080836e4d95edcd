"""The judge's one message framing: a 4-byte little-endian length, then the payload.

Used on every pipe between the judge, its workers, the check processes and the candidates;
pickled payloads only between trusted processes (judge <-> worker), plain data elsewhere
(``plain``)."""

from __future__ import annotations

import os
import pickle
import struct

HEADER = struct.Struct("<I")


def frame(payload: bytes) -> bytes:
    return HEADER.pack(len(payload)) + payload


def frame_length(buf: bytes | bytearray) -> int | None:
    """The payload length of the frame at the start of ``buf`` (None: its header is not all there)."""
    return HEADER.unpack_from(buf)[0] if len(buf) >= HEADER.size else None


def write_frame(fd: int, payload: bytes) -> None:
    write_all(fd, frame(payload))


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_frame(fd: int, limit: int | None = None) -> bytes | None:
    """One frame, or None at the end of the stream (or a frame over ``limit`` bytes)."""
    head = read_exact(fd, HEADER.size)
    if head is None:
        return None
    (n,) = HEADER.unpack(head)
    if limit is not None and n > limit:
        return None
    return read_exact(fd, n)


def read_exact(fd: int, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        b = os.read(fd, min(left, 1 << 20))
        if not b:
            return None
        chunks.append(b)
        left -= len(b)
    return b"".join(chunks)


def dumps(obj) -> bytes:
    """A framed pickle (trusted processes only)."""
    return frame(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
