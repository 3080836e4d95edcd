"""The facts of a sample and of a group as text, shared by the terminal and the HTML views."""

from __future__ import annotations

import difflib

from mcoder.show.collect import Group, Shown

STATEMENT_LINES = 12  # of a problem statement, in full views


def summary_line(g: Group) -> str:
    """One line per group: where, how many passed, the statuses, and the training figures."""
    n = len(g.samples)
    where = f"step {g.step} " if g.step is not None else ""
    statuses = ", ".join(f"{k} {v}" for k, v in g.statuses.most_common())
    parts = [f"{where}{g.problem_id}", f"{g.passed}/{n} passed", statuses]
    reward = g.mean([s.reward for s in g.samples])
    if reward is not None:
        parts.append(f"reward {reward:.2f}")
    advantages = [s.train.get("advantage") for s in g.samples if s.train]
    if advantages:
        parts.append("adv " + " ".join(f"{a:+.2f}" for a in advantages))
    masked = sum(1 for s in g.samples if s.masked)
    truncated = sum(1 for s in g.samples if s.train and s.train.get("truncated"))
    if any(s.train for s in g.samples):
        parts.append(f"truncated {truncated}, masked {masked}")
    length = g.mean([s.length for s in g.samples])
    if length is not None:
        parts.append(f"len {length:.0f} tok")
    return " | ".join(parts)


def header(s: Shown) -> str:
    step = f" | step {s.step}" if s.step is not None else ""
    return f"rollout {s.id} | problem {s.problem_id}{step}"


def rollout_facts(s: Shown) -> list[tuple[str, str]]:
    """Sampling facts: finish reason, length, mean log-prob, temperature, policy version."""
    r = s.rollout
    facts = []
    if r.finish_reason is not None:
        facts.append(
            (
                "finish",
                r.finish_reason + (" (cut at the length limit)" if r.finish_reason == "length" else ""),
            )
        )
    if s.length is not None:
        facts.append(("length", f"{s.length} tokens"))
    if s.mean_logprob is not None:
        facts.append(("mean log-prob", f"{s.mean_logprob:.3f}"))
    if r.temperature is not None:
        facts.append(("temperature", f"{r.temperature:g}"))
    if r.policy_version is not None:
        facts.append(("policy version", str(r.policy_version)))
    return facts


def train_facts(s: Shown) -> list[tuple[str, str]]:
    """The training step's decision: reward, advantage, truncation and the mask with its reason."""
    t = s.train
    if not t:
        return []
    facts = [("reward", f"{t.get('reward', 0.0):.3f}"), ("advantage", f"{t.get('advantage', 0.0):+.3f}")]
    facts.append(
        (
            "truncated",
            _yes(t.get("truncated")) + (" (cut off before its program finished)" if t.get("cut_off") else ""),
        )
    )
    mask = "masked: advantage set to 0" if t.get("masked") else "not masked"
    if t.get("dropped"):
        mask += ", dropped from the loss"
    facts.append(("mask", f"{mask} (reason: {t.get('mask_reason', '?')})"))
    return facts


def verdict_line(s: Shown) -> str:
    v = s.verdict
    if v is None:
        return "not judged"
    tests = f"{v.tests_passed}/{v.tests_total} tests passed, " if v.tests_total else ""
    line = f"{v.status}: {tests}reward {v.reward:g}"
    if v.elapsed_s:
        line += f", {v.elapsed_s:.2f}s"
    if v.cached:
        line += " (cached)"
    return line


def failure(s: Shown) -> dict[str, str | None] | None:
    """The first failing test: index, input, expected, got, stderr, reason, and where the first
    difference is (``where``, with ``window_expected`` and ``window_got`` around it, when the
    judge recorded it); None if none failed."""
    ff = s.verdict.first_failure if s.verdict is not None else None
    if not ff:
        return None
    out = {
        "index": str(ff["index"]) if ff.get("index") is not None else None,
        "input": ff.get("input"),
        "expected": ff.get("expected"),
        "got": ff.get("got"),
        "stderr": (ff.get("stderr") or "").strip() or None,
        "reason": ff.get("reason") or ff.get("detail"),
        "where": None,
    }
    d = ff.get("diff")
    if isinstance(d, dict) and all(isinstance(d.get(k), int) for k in ("line", "column", "token", "window_line")):
        out["where"] = f"line {d['line']}, column {d['column']} (token {d['token']})"
        out["window_line"] = str(d["window_line"])
        out["window_expected"], out["window_got"] = str(d.get("expected", "")), str(d.get("got", ""))
    return out


def diff_lines(expected: str, got: str | None) -> list[str]:
    """Unified diff of expected and actual output, line by line ('-' expected, '+' got)."""
    return list(
        difflib.unified_diff(
            expected.splitlines(), (got or "").splitlines(), "expected", "got", lineterm="", n=2
        )
    )


def split_completion(completion: str, program: str | None) -> tuple[str, str, str]:
    """(text before the program, the program, text after it); no program: all text before."""
    if not program:
        return completion, "", ""
    at = completion.rfind(program)
    if at < 0:
        return completion, "", ""
    return completion[:at], program, completion[at + len(program) :]


def statement(s: Shown, lines: int = STATEMENT_LINES) -> tuple[str, int] | None:
    """The first lines of the problem statement and the number of lines left out."""
    if s.problem is None:
        return None
    all_lines = s.problem.question.strip().splitlines()
    return "\n".join(all_lines[:lines]), max(0, len(all_lines) - lines)


def _yes(value: object) -> str:
    return "yes" if value else "no"
