"""``mcoder show`` on the terminal: a summary line per group, or each sample in full (rich, stdout)."""

from __future__ import annotations

import sys

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.rule import Rule
from rich.syntax import Syntax
from rich.text import Text

from mcoder.show import details
from mcoder.show.collect import Batch, Shown, groups

STATUS_STYLE = {"accepted": "bold green", "unjudged": "dim"}


def stdout_console() -> Console:
    """Results go to stdout; colours only when it is a terminal (rich decides)."""
    return Console(file=sys.stdout, highlight=False, soft_wrap=False)


def print_summary(batch: Batch, samples: list[Shown], con: Console) -> None:
    """One line per group (problem at a step), then a totals line."""
    for g in groups(samples):
        con.print(escape(details.summary_line(g)), soft_wrap=True)
    passed = sum(1 for s in samples if s.verdict is not None and s.verdict.passed)
    con.print(
        f"{len(samples)} samples, {passed} passed, {len(groups(samples))} groups in {batch.target}",
        style="bold",
        soft_wrap=True,
    )


def print_sample(s: Shown, con: Console) -> None:
    con.print(Rule(escape(details.header(s)), align="left"))
    stated = details.statement(s)
    if stated is not None:
        text, more = stated
        body = Text(text) + (Text(f"\n(... {more} more lines)", style="dim") if more else Text(""))
        con.print(Panel(body, title="problem", title_align="left", border_style="dim"))
    con.print(_completion(s))
    facts = details.rollout_facts(s)
    if facts:
        con.print(_facts(facts))
    style = STATUS_STYLE.get(s.status, "bold red")
    con.print(Text("verdict ", style="bold") + Text(details.verdict_line(s), style=style))
    ff = details.failure(s)
    if ff is not None:
        con.print(_failure(ff))
    train = details.train_facts(s)
    if train:
        con.print(Text("training", style="bold"))
        con.print(_facts(train))
    con.print()


def _completion(s: Shown) -> Panel:
    before, program, after = details.split_completion(s.rollout.completion, s.program)
    parts = []
    if before.strip():
        parts.append(Text(before.rstrip("\n"), style="dim"))
    if program:
        parts.append(
            Syntax(program.rstrip("\n"), "python", line_numbers=True, word_wrap=True, theme="ansi_dark")
        )
    if after.strip():
        parts.append(Text(after.strip("\n"), style="dim"))
    title = "completion (the extracted program highlighted)" if program else "completion (no program found)"
    return Panel(Group(*parts) if parts else Text("(empty)", style="dim"), title=title, title_align="left")


def _facts(facts: list[tuple[str, str]]) -> Text:
    out = Text()
    for i, (k, v) in enumerate(facts):
        out += Text(("\n" if i else "") + f"  {k}: ", style="bold") + Text(v)
    return out


def _failure(ff: dict[str, str | None]) -> Group:
    parts: list = []
    if ff["index"] is not None:
        parts.append(Text(f"first failing test: #{ff['index']}", style="bold"))
    if ff["reason"]:
        parts.append(Text(f"  {ff['reason']}", style="red"))
    if ff["input"] is not None:
        parts.append(
            Panel(Text(ff["input"].rstrip("\n")), title="input", title_align="left", border_style="dim")
        )
    expected, got, title = ff["expected"], ff["got"], "expected (-) vs got (+)"
    if ff["where"] is not None:  # where the first difference is: the prefixes above may not reach it
        parts.append(Text(f"first difference: {ff['where']}", style="bold"))
        expected, got = ff["window_expected"], ff["window_got"]
        title += f", from line {ff['window_line']}"
    if expected is not None:
        diff = Text()
        for line in details.diff_lines(expected, got):
            style = (
                "green"
                if line.startswith("+")
                else "red"
                if line.startswith("-")
                else "cyan"
                if line.startswith("@")
                else ""
            )
            diff += Text(line + "\n", style=style)
        parts.append(
            Panel(
                diff or Text("(identical text)"),
                title=title,
                title_align="left",
                border_style="dim",
            )
        )
    if ff["stderr"]:
        parts.append(
            Panel(Text(ff["stderr"], style="red"), title="stderr", title_align="left", border_style="dim")
        )
    return Group(*parts)
