"""JSONL reading with file:line errors, and the resumable writer (a real killed process included)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import orjson
import pytest

from mcoder.errors import DataError
from mcoder.jsonl import (
    RecordWriter,
    UniqueIds,
    check_verdict_joins,
    index_records,
    iter_objects,
    read_numbered,
    read_records,
)
from mcoder.records import Rollout


def _rollout(i):
    return {"id": f"r{i}", "problem_id": f"p{i % 3}", "completion": f"print({i})", "schema": 1}


def _write_lines(path, objs):
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in objs))


def test_broken_line_57_is_reported_as_line_57(tmp_path):
    rows = [_rollout(i) for i in range(100)]
    rows[56] = {**rows[56], "completoin": "typo"}
    del rows[56]["completion"]
    path = tmp_path / "r.jsonl"
    _write_lines(path, rows)
    with pytest.raises(DataError) as e:
        list(read_records(path, Rollout))
    assert e.value.line == 57
    assert e.value.path == str(path)
    assert e.value.field == "completoin"
    assert f"{path}:57" in e.value.message


def test_invalid_json_names_the_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(orjson.dumps(_rollout(0)) + b"\n{not json\n")
    with pytest.raises(DataError) as e:
        list(iter_objects(path))
    assert e.value.line == 2 and "invalid JSON" in e.value.message


def test_blank_lines_are_skipped_and_line_numbers_stay_true(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\n" + orjson.dumps(_rollout(0)) + b"\n\n" + orjson.dumps(_rollout(1)) + b"\n")
    assert [n for n, _ in iter_objects(path)] == [2, 4]


def test_duplicate_ids_are_a_data_error(tmp_path):
    path = tmp_path / "r.jsonl"
    _write_lines(path, [_rollout(1), _rollout(1)])
    with pytest.raises(DataError, match="duplicate id 'r1'"):
        index_records(path, Rollout, key=lambda r: r.id)


def test_writer_finishes_atomically_and_resumes_without_duplicates(tmp_path):
    out = tmp_path / "out.jsonl"
    w = RecordWriter(out, key="id")
    for i in range(5):
        w.write(_rollout(i))
    w.close()  # as if interrupted: no final file yet
    assert not out.exists() and (tmp_path / "out.jsonl.part").exists()

    w = RecordWriter(out, key="id")
    assert w.resumed == 5
    written = [w.write(_rollout(i)) for i in range(10)]
    w.finish()
    assert written == [False] * 5 + [True] * 5
    ids = [o["id"] for _, o in iter_objects(out)]
    assert ids == [f"r{i}" for i in range(10)]
    assert not (tmp_path / "out.jsonl.part").exists()


def test_writer_cuts_a_torn_last_line(tmp_path):
    out = tmp_path / "out.jsonl"
    part = tmp_path / "out.jsonl.part"
    part.write_bytes(orjson.dumps(_rollout(0)) + b"\n" + orjson.dumps(_rollout(1))[:10])
    with RecordWriter(out, key="id") as w:
        assert w.done == {"r0"}
        w.write(_rollout(1))
    assert [o["id"] for _, o in iter_objects(out)] == ["r0", "r1"]


def test_rerun_on_a_finished_output_adds_only_what_is_new(tmp_path):
    out = tmp_path / "out.jsonl"
    with RecordWriter(out, key="id") as w:
        w.write_all(_rollout(i) for i in range(3))
    with RecordWriter(out, key="id") as w:
        assert w.write_all(_rollout(i) for i in range(4)) == 1
    assert len(list(iter_objects(out))) == 4


def test_overwrite_starts_over(tmp_path):
    out = tmp_path / "out.jsonl"
    with RecordWriter(out, key="id") as w:
        w.write_all(_rollout(i) for i in range(3))
    with RecordWriter(out, key="id", resume=False) as w:
        w.write(_rollout(7))
    assert [o["id"] for _, o in iter_objects(out)] == ["r7"]


WRITER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from mcoder.jsonl import RecordWriter
    out, n = sys.argv[1], int(sys.argv[2])
    with RecordWriter(out, key="id") as w:
        for i in range(n):
            w.write({"id": f"r{i}", "problem_id": "p", "completion": "x" * 200, "schema": 1})
            if i >= 20:
                time.sleep(0.01)  # slow enough to be killed mid-way
    """
)


@pytest.mark.heavy
def test_resume_after_a_real_kill(tmp_path):
    out = tmp_path / "out.jsonl"
    part = tmp_path / "out.jsonl.part"
    script = tmp_path / "writer.py"
    script.write_text(WRITER_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(out), "300"])
    deadline = time.time() + 60
    while time.time() < deadline and (not part.exists() or part.stat().st_size < 40 * 230):
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert part.exists() and not out.exists()
    killed_at = len(part.read_bytes().splitlines())
    assert 0 < killed_at < 300

    subprocess.run([sys.executable, str(script), str(out), "300"], check=True)
    ids = [o["id"] for _, o in iter_objects(out)]
    assert ids == [f"r{i}" for i in range(300)]


def test_duplicate_ids_name_both_lines(tmp_path):
    path = tmp_path / "r.jsonl"
    _write_lines(path, [_rollout(1), _rollout(2), _rollout(1)])
    with pytest.raises(DataError) as e:
        index_records(path, Rollout, key=lambda r: r.id)
    assert e.value.line == 3 and f"{path}:3" in e.value.message and "first on line 1" in e.value.message
    assert e.value.exit_code == 3


def test_unique_ids_for_a_streaming_reader(tmp_path):
    path = tmp_path / "r.jsonl"
    _write_lines(path, [_rollout(1), _rollout(2), _rollout(2)])
    ids = UniqueIds(path, field="id")
    with pytest.raises(DataError, match=r"r.jsonl:3.*duplicate id 'r2' \(first on line 2\)"):
        for lineno, r in read_numbered(path, Rollout):
            ids.add(r.id, lineno)
    assert "r1" in ids and len(ids) == 2


def test_a_verdict_for_another_problem_than_its_rollout_is_a_data_error():
    check_verdict_joins("p1", "p1", "r1", path="v.jsonl", line=4)
    with pytest.raises(DataError) as e:
        check_verdict_joins("p2", "p1", "r1", path="v.jsonl", line=4)
    assert e.value.exit_code == 3 and "v.jsonl:4" in e.value.message and "'r1'" in e.value.message


def test_non_utf8_names_the_real_line_and_byte(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(orjson.dumps(_rollout(0)) + b"\n" + b'{"id": "caf\xe9"}\n')
    with pytest.raises(DataError) as e:
        list(iter_objects(path))
    assert e.value.line == 2 and "not UTF-8" in e.value.message and "byte 12" in e.value.message
    assert "line 1 column" not in e.value.message


def test_invalid_json_is_placed_by_column_not_by_orjsons_line_1(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(orjson.dumps(_rollout(0)) + b"\n" * 3 + b'{"id": 1,, }\n')
    with pytest.raises(DataError) as e:
        list(iter_objects(path))
    assert e.value.line == 4 and "column 10" in e.value.message and "line 1" not in e.value.message
