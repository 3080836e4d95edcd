"""scripts/compare_outputs.py: what it leaves out (times, the record's and the checkout's folders,
the stated size and digest of a file that holds times, the order of a JSONL file's records) and
what it still finds (any other value, a missing file, a changed byte)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def record(out: Path, checkout: str, *, seconds: float, loss: float, order=(0, 1), weights=b"\x00\x01") -> Path:
    out.mkdir(parents=True)
    rows = [{"id": "a", "elapsed_s": seconds}, {"id": "b", "elapsed_s": seconds * 2}]
    (out / "verdicts.jsonl").write_text("".join(json.dumps(rows[i]) + "\n" for i in order))
    (out / "metrics.out").write_text(json.dumps({"loss": loss, "time/train": seconds}) + f"\n{out}/train\n")
    (out / "run.meta.json").write_text(json.dumps(
        {"problems": f"{checkout}/examples/learn/train.jsonl", "updated": f"T{seconds}",
         "output": {"path": f"{out}/verdicts.jsonl", "size": int(seconds * 100), "sha256": f"{int(seconds):064x}"}}))  # fmt: skip
    (out / "card.md").write_text(
        "| stage | in | seconds |\n|---|---|---|\n"
        f"| convert | 3 | {seconds} |\n| rollouts | `{out}/r.jsonl` | {int(seconds * 7)} | `{int(seconds):064x}` |\n"
    )
    (out / "model.safetensors").write_bytes(weights)
    return out


def compare(a: Path, b: Path) -> subprocess.CompletedProcess:
    script = ROOT / "scripts" / "compare_outputs.py"
    return subprocess.run([sys.executable, script, a, b], capture_output=True, text=True, check=False)


def test_times_folders_digests_and_record_order_are_left_out(tmp_path):
    a = record(tmp_path / "a", "/checkouts/one", seconds=1.5, loss=0.25)
    b = record(tmp_path / "b", "/elsewhere/two", seconds=3.25, loss=0.25, order=(1, 0))
    done = compare(a, b)
    assert done.returncode == 0, done.stdout
    assert "same records, another order: verdicts.jsonl" in done.stdout and "0 differ" in done.stdout


def test_a_changed_value_a_changed_byte_and_a_missing_file_are_differences(tmp_path):
    a = record(tmp_path / "a", "/c", seconds=1.5, loss=0.25)
    b = record(tmp_path / "b", "/c", seconds=1.5, loss=0.5, weights=b"\x00\x02")
    (a / "only-here.txt").write_text("x\n")
    done = compare(a, b)
    assert done.returncode == 1
    assert {ln for ln in done.stdout.splitlines() if not ln.endswith("differ")} == {
        "differs: metrics.out", "differs: model.safetensors", "only in BEFORE: only-here.txt",
    }  # fmt: skip
