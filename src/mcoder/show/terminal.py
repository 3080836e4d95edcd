"""``mcoder show`` on the terminal: a summary line per group, or each sample in full (rich, stdout).

Everything shown here came from a model, a program or a source row: each string goes through
``_text`` (``mcoder.printable``, the door for untrusted text) into a rich ``Text``, which reads
no markup; nothing reaches rich as a plain string."""

from __future__ import annotations

import sys

from rich.console import Console, Group
from rich.panel import Panel
from rich.rule import Rule
from rich.syntax import Syntax
from rich.text import Text

from mcoder.printable import printable
from mcoder.show import details
from mcoder.show.collect import Batch, Shown, groups

STATUS_STYLE = {"accepted": "bold green", "unjudged": "dim"}


def stdout_console() -> Console:
    """Results go to stdout; colours only when it is a terminal (rich decides)."""
    return Console(file=sys.stdout, highlight=False, soft_wrap=False)


def _text(value: object, style: str = "", *, multiline: bool = False) -> Text:
    """Untrusted text as a rich Text: control characters escaped (``printable``), no markup read."""
    return Text(printable(value, multiline=multiline), style=style)


def print_summary(batch: Batch, samples: list[Shown], con: Console) -> None:
    """One line per group (problem at a step), then a totals line."""
    for g in groups(samples):
        con.print(_text(details.summary_line(g)), soft_wrap=True)
    passed = sum(1 for s in samples if s.verdict is not None and s.verdict.passed)
    con.print(
        _text(
            f"{len(samples)} samples, {passed} passed, {len(groups(samples))} groups in {batch.target}",
            "bold",
        ),
        soft_wrap=True,
    )


def print_sample(s: Shown, con: Console, *, prompt: bool) -> None:
    con.print(Rule(_text(details.header(s)), align="left"))
    if prompt:  # what the model read, template and all: the first place a chat-template problem shows
        given = s.rollout.prompt
        body = (
            _text(given, multiline=True)
            if given is not None
            else Text("(the rollout did not record its prompt)")
        )
        con.print(Panel(body, title="prompt (exactly as the model was given it)", title_align="left"))
    stated = details.statement(s)
    if stated is not None:
        text, more = stated
        body = _text(text, multiline=True) + (
            Text(f"\n(... {more} more lines)", style="dim") if more else Text("")
        )
        con.print(Panel(body, title="problem", title_align="left", border_style="dim"))
    con.print(_completion(s))
    facts = details.rollout_facts(s)
    if facts:
        con.print(_facts(facts))
    style = STATUS_STYLE.get(s.status, "bold red")
    con.print(Text("verdict ", style="bold") + _text(details.verdict_line(s), style))
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
        parts.append(_text(before.rstrip("\n"), "dim", multiline=True))
    if program:
        code = printable(program.rstrip("\n"), multiline=True)
        parts.append(Syntax(code, "python", line_numbers=True, word_wrap=True, theme="ansi_dark"))
    if after.strip():
        parts.append(_text(after.strip("\n"), "dim", multiline=True))
    title = "completion (the extracted program highlighted)" if program else "completion (no program found)"
    return Panel(Group(*parts) if parts else Text("(empty)", style="dim"), title=title, title_align="left")


def _facts(facts: list[tuple[str, str]]) -> Text:
    out = Text()
    for i, (k, v) in enumerate(facts):
        out += Text(("\n" if i else "") + f"  {k}: ", style="bold") + _text(v)
    return out


def _failure(ff: dict[str, str | None]) -> Group:
    parts: list = []
    if ff["index"] is not None:
        parts.append(_text(f"first failing test: #{ff['index']}", "bold"))
    if ff["reason"]:
        parts.append(_text(f"  {ff['reason']}", "red", multiline=True))
    if ff["input"] is not None:
        parts.append(
            Panel(
                _text(ff["input"].rstrip("\n"), multiline=True),
                title="input",
                title_align="left",
                border_style="dim",
            )
        )
    expected, got, title = ff["expected"], ff["got"], "expected (-) vs got (+)"
    if ff["where"] is not None:  # where the first difference is: the prefixes above may not reach it
        parts.append(_text(f"first difference: {ff['where']}", "bold"))
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
            diff += _text(line, style) + Text("\n")
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
            Panel(
                _text(ff["stderr"], "red", multiline=True),
                title="stderr",
                title_align="left",
                border_style="dim",
            )
        )
    return Group(*parts)
