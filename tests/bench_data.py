"""A small hand-made problem set and verdicts with known pass@k cells (shared by the bench tests).

Problems (platform, difficulty) and samples (passed or the failure status):

    p1 atcoder    easy   ok ok WA TL         pass@1 1/2   pass@2 1 - C(2,2)/C(4,2) = 5/6
    p2 atcoder    hard   RE no_code          pass@1 0     pass@2 0
    p3 codeforces 1200   ok ok ok ok         pass@1 1     pass@2 1
    p4 codeforces 1700   ok                  pass@1 1     pass@2 not computable (n = 1)
    p5 codeforces 2500   (no verdicts)       unevaluated
    p6 leetcode   Medium ok WA               pass@1 1/2   pass@2 1

Baseline: p1 1 of 4, p2 1 of 2, p3 4 of 4, p4 0 of 1, p6 0 of 2 (failures wrong_answer).
"""

import json
from pathlib import Path

PROBLEMS = [
    ("p1", "AtCoder", "easy"),
    ("p2", "atcoder", "hard"),
    ("p3", "codeforces", "1200"),
    ("p4", "codeforces", "1700"),
    ("p5", "codeforces", "2500"),
    ("p6", "leetcode", "Medium"),
]
OK = "accepted"
VERDICTS = {
    "p1": [OK, OK, "wrong_answer", "time_limit"],
    "p2": ["runtime_error", "no_code"],
    "p3": [OK, OK, OK, OK],
    "p4": [OK],
    "p6": [OK, "wrong_answer"],
}
BASELINE = {
    "p1": [OK, "wrong_answer", "wrong_answer", "wrong_answer"],
    "p2": [OK, "wrong_answer"],
    "p3": [OK, OK, OK, OK],
    "p4": ["wrong_answer"],
    "p6": ["wrong_answer", "wrong_answer"],
}


def write_problems(path: Path, problems=PROBLEMS) -> Path:
    with open(path, "w") as f:
        for pid, platform, difficulty in problems:
            row = {"id": pid, "source": "hand", "question": "?", "tests": [], "platform": platform}
            f.write(json.dumps({**row, "difficulty": difficulty}) + "\n")
    return path


def verdict_lines(verdicts: dict[str, list[str]]) -> list[str]:
    lines = []
    for pid, statuses in verdicts.items():
        for i, status in enumerate(statuses):
            ok = status == OK
            row = {"rollout_id": f"{pid}-{i}", "problem_id": pid, "reward": float(ok), "passed": ok}
            row |= {"status": status, "tests_passed": int(ok), "tests_total": 1}
            lines.append(json.dumps(row))
    return lines


def write_verdicts(path: Path, verdicts=VERDICTS) -> Path:
    path.write_text("\n".join(verdict_lines(verdicts)) + "\n")
    return path
