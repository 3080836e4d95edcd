"""outputs.py: the lock, the settings sidecar and the guard that every stage's output goes through."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcoder.errors import UsageError
from mcoder.outputs import claim_output, fingerprint, lock_path, read_sidecar, sidecar_path

ROLLOUT = b'{"id": "a/0/0", "problem_id": "a", "completion": "x"}\n'


def claim(out, overwrite=False, settings=None, inputs=None, **kw):
    return claim_output(
        out, stage="rollout", settings=settings or {"n": 4}, inputs=inputs or {},
        overwrite=overwrite, expect=("id", "problem_id", "completion"), **kw,
    )  # fmt: skip


def finish(out: Path, data: bytes = ROLLOUT, **kw) -> None:
    with claim(out, **kw) as c:
        assert not c.finished
        out.write_bytes(data)
        c.mark_finished()


def test_a_fresh_output_records_its_settings_and_inputs_then_its_fingerprint(tmp_path):
    src = tmp_path / "p.jsonl"
    src.write_text("{}\n")
    out = tmp_path / "r.jsonl"
    with claim(out, inputs={"problems": src}) as c:
        assert (c.resume, c.finished) == (False, False)
        meta = read_sidecar(out)
        assert meta["stage"] == "rollout" and meta["settings"] == {"n": 4} and meta["finished"] is None
        assert meta["inputs"]["problems"]["sha256"] == fingerprint(src)["sha256"]
        assert int(lock_path(out).read_text()) == os.getpid()
        out.write_bytes(ROLLOUT)
        c.mark_finished()
    assert read_sidecar(out)["finished"]["size"] == len(ROLLOUT)
    assert not lock_path(out).exists()  # removed when the run ends


def test_a_finished_output_with_the_same_settings_is_a_no_op(tmp_path):
    out = tmp_path / "r.jsonl"
    finish(out)
    with claim(out) as c:
        assert c.finished and "nothing to do" in c.finished_message


def test_other_settings_are_refused_listing_them_and_overwrite_starts_over(tmp_path):
    out = tmp_path / "r.jsonl"
    finish(out, settings={"n": 4, "seed": 1})
    with pytest.raises(UsageError, match=r"n 4 -> 8; seed 1 -> 2") as e, claim(out, settings={"n": 8, "seed": 2}):
        pass
    assert e.value.exit_code == 2 and "--overwrite" in e.value.hint
    assert out.read_bytes() == ROLLOUT
    with claim(out, settings={"n": 8, "seed": 2}, overwrite=True) as c:
        assert not c.resume and not out.exists()  # nothing of the old settings is kept
    assert read_sidecar(out)["settings"] == {"n": 8, "seed": 2}


def test_a_changed_input_is_refused_a_moved_one_is_not(tmp_path):
    src = tmp_path / "p.jsonl"
    src.write_text('{"id": 1}\n')
    out = tmp_path / "r.jsonl"
    with claim(out, inputs={"problems": src}):  # a run killed while writing OUT.part
        Path(str(out) + ".part").write_bytes(ROLLOUT)
    moved = tmp_path / "moved.jsonl"
    src.rename(moved)
    with claim(out, inputs={"problems": moved}) as c:
        assert c.resume
    moved.write_text('{"id": 2}\n')
    with pytest.raises(UsageError, match="input problems changed"), claim(out, inputs={"problems": moved}):
        pass


@pytest.mark.parametrize("overwrite", [False, True])
def test_an_output_that_is_an_input_is_refused_before_anything_is_written(tmp_path, overwrite):
    src = tmp_path / "p.jsonl"
    src.write_text('{"id": "p", "question": "q"}\n')
    link = tmp_path / "link.jsonl"
    link.symlink_to(src)
    for out in (src, link, tmp_path / "p"):  # the last: its OUT.part would be the input
        if out.name == "p":
            src.rename(tmp_path / "p.part")
            src = tmp_path / "p.part"
        with pytest.raises(UsageError, match="is also the problems input"), claim(out, overwrite=overwrite, inputs={"problems": src}):
            pass
    assert src.read_text() == '{"id": "p", "question": "q"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.jsonl", "p.part"]


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_file_of_another_kind_is_never_touched(tmp_path, overwrite):
    out = tmp_path / "problems.jsonl"
    out.write_text('{"id": "p", "question": "q"}\n')
    with pytest.raises(UsageError, match="not an output of this stage") as e, claim(out, overwrite=overwrite):
        pass
    assert "delete" not in e.value.hint
    assert out.read_text() == '{"id": "p", "question": "q"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["problems.jsonl"]


def test_an_output_of_another_stage_is_refused(tmp_path):
    out = tmp_path / "v.jsonl"
    with claim_output(out, stage="judge", settings={}, expect=("rollout_id",)) as c:
        out.write_text('{"rollout_id": "a"}\n')
        c.mark_finished()
    with pytest.raises(UsageError, match="output of `mcoder judge`"), claim(out, overwrite=True):
        pass


def test_the_right_shape_without_a_sidecar_needs_overwrite(tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_bytes(ROLLOUT)
    with pytest.raises(UsageError, match="no record of the settings"), claim(out):
        pass
    with claim(out, overwrite=True) as c:
        assert not c.resume and not out.exists()


def test_a_finished_output_changed_afterwards_is_not_taken_for_ours(tmp_path):
    out = tmp_path / "r.jsonl"
    finish(out)
    out.write_text('{"id": "p", "question": "q"}\n')  # the user put a problems file there
    with pytest.raises(UsageError, match="not an output of this stage"), claim(out, overwrite=True):
        pass
    assert out.read_text() == '{"id": "p", "question": "q"}\n'


def test_folders(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="no metrics.jsonl"), claim_output(run, stage="loop", settings={}, kind="dir", expect=("metrics.jsonl",), overwrite=True):
        pass
    assert (run / "notes.txt").read_text() == "mine"
    empty = tmp_path / "empty"
    empty.mkdir()
    with claim_output(empty, stage="loop", settings={"steps": 2}, kind="dir") as c:
        empty.mkdir(exist_ok=True)
        (empty / "metrics.jsonl").write_text("{}\n")
        c.mark_finished()
    assert sidecar_path(empty) == tmp_path / "empty.meta.json"
    with claim_output(empty, stage="loop", settings={"steps": 2}, kind="dir") as c:
        assert c.finished


def test_stdout_needs_no_claim(tmp_path):
    with claim("-") as c:
        assert c.stdout and not c.resume and not c.finished
        c.mark_finished()
    assert list(tmp_path.iterdir()) == []


def test_a_second_writer_is_refused_naming_the_holder(tmp_path):
    out = tmp_path / "r.jsonl"
    with (
        claim(out),
        pytest.raises(UsageError, match=rf"{out} is being written by another run \(pid {os.getpid()}"),
        claim(out),
    ):
        pass


HOLD = """
import sys, time
from mcoder.outputs import hold_lock
with hold_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_lock_left_by_a_killed_process_is_taken_over(tmp_path):
    out = tmp_path / "r.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UsageError, match=f"pid {holder.pid}"), claim(out):
            pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert int(lock_path(out).read_text()) == holder.pid  # left behind by kill -9
    with claim(out):
        assert int(lock_path(out).read_text()) == os.getpid()


def test_fingerprints_of_files_and_folders(tmp_path):
    a = tmp_path / "a"
    a.write_bytes(b"x" * 1000)
    f = fingerprint(a)
    assert f["size"] == 1000 and f["hashed"] == "all"
    t0 = time.perf_counter()
    big = tmp_path / "big"
    with open(big, "wb") as fh:
        fh.truncate(300 << 20)  # sparse: hashed by its ends, not read whole
    assert fingerprint(big)["hashed"] == "sampled"
    assert time.perf_counter() - t0 < 5
    d = tmp_path / "d"
    d.mkdir()
    (d / "config.json").write_text("{}")
    before = fingerprint(d)
    (d / "config.json").write_text("{1}")
    assert fingerprint(d)["sha256"] != before["sha256"] and before["hashed"] == "folder"
    assert json.loads(json.dumps(before)) == before


def test_a_document_is_replaced_only_while_it_is_as_mcoder_wrote_it(tmp_path):
    from mcoder.outputs import write_document

    doc = tmp_path / "bench.md"
    write_document(doc, "table 1\n", stage="bench", flag="--markdown")
    write_document(doc, "table 2\n", stage="bench", flag="--markdown")  # a rerun: ours, unchanged
    assert doc.read_text() == "table 2\n" and read_sidecar(doc)["finished"]["size"] == 8
    doc.write_text("table 2, with my notes\n")
    with pytest.raises(UsageError, match="changed after mcoder wrote it"):
        write_document(doc, "table 3\n", stage="bench", flag="--markdown")
    with pytest.raises(UsageError, match="mcoder did not write it"):
        write_document(doc, "html\n", stage="show", flag="--html")  # another command's file
    assert doc.read_text() == "table 2, with my notes\n"
    with pytest.raises(UsageError, match="is under a file"):
        write_document(doc / "x.md", "t\n", stage="bench", flag="--markdown")
