"""The documentation as run: every command block of README.md, docs/usage.md and recipes/README.md.

A page's ```` ```bash ```` blocks are run in order, each command as written (a line, with its
``\\`` continuations), in one empty folder per page, with ``REPO`` the clone's path (the pages say
so where they use it) and mcoder's environment on ``PATH``. A command must exit 0 unless its own
comment announces another code (``# exits 4 ...``). The pages read a dataset on the hub offline
(``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE``) and W&B offline, as a machine without network would.

Three commands of the README are not run here, because CI runs them as they are: ``make test``
(this suite), ``make demo``, and the install line, which is the Makefile's own set-up
(``RUN_BY_CI`` says where each is run; a test checks that it still is).

The pages need a model run (the tiny model: a loop, training, rollouts), so this is
``make test-slow``; ``test_every_command_parses`` is the fast part, in ``make test``: each
mcoder command of every block is parsed by the CLI (a renamed flag fails at once).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", "docs/usage.md", "recipes/README.md"]
_FENCE = re.compile(r"^```(\w*)\s*$")
_EXITS = re.compile(r"#.*\bexits (\d+)\b")
RUN_BY_CI = {
    "make test": (".ci/run", "make test\n"),
    "make demo": (".ci/run", "make demo\n"),
    "pip install -c constraints/cpu.txt -e .": ("Makefile", "-c $(CONSTRAINTS)"),
}


def commands(page: str) -> list[tuple[int, str, int]]:
    """(line, command, the exit code its comment announces, else 0) of each command of the page's
    bash blocks, in order."""
    out: list[tuple[int, str, int]] = []
    lines = (ROOT / page).read_text().splitlines()
    in_bash, pending, start = False, "", 0
    for number, line in enumerate(lines, start=1):
        fence = _FENCE.match(line)
        if fence:
            in_bash = not in_bash and fence.group(1) == "bash"
            continue
        if not in_bash:
            continue
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        command = pending + line
        pending = ""
        announced = _EXITS.search(command)
        out.append((start, command.strip(), int(announced.group(1)) if announced else 0))
    return out


def _bare(command: str) -> str:
    """The command without its trailing comment."""
    words = shlex.split(command, comments=True)
    return " ".join(words)


def _env(page_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # python, mcoder
    env["REPO"] = str(ROOT)
    env |= {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    return env


def test_the_pages_have_commands_and_what_ci_runs_is_still_run_there():
    for page in PAGES:
        assert commands(page), page
    readme = {_bare(c) for _, c, _ in commands("README.md")}
    for command, (where, text) in RUN_BY_CI.items():
        assert command in readme, f"{command}: no longer in the README (drop it from RUN_BY_CI)"
        assert text in (ROOT / where).read_text(), f"{command}: {where} no longer runs it"


@pytest.mark.parametrize("page", PAGES)
def test_every_command_parses(page):
    """Each mcoder command of the page through the CLI's own parser (no work is done): a flag
    renamed or dropped since the page was written fails here, in seconds."""
    import typer.main

    from mcoder.cli.app import app

    group = typer.main.get_command(app)
    for line, command, _ in commands(page):
        words = shlex.split(command, comments=True)
        if not words or words[0] != "mcoder":
            continue
        words = [os.path.expandvars(w.replace("$REPO", str(ROOT))) for w in words[1:]]
        ctx = group.make_context("mcoder", list(words), resilient_parsing=True)
        name, sub, rest = group.resolve_command(ctx, words)
        while hasattr(sub, "resolve_command") and rest:  # a group (dataset, dataset difficulty)
            sub_ctx = sub.make_context(name, list(rest), parent=ctx, resilient_parsing=True)
            name, sub, rest = sub.resolve_command(sub_ctx, rest)
        assert sub is not None, f"{page}:{line}: no command {words[0]!r}"
        if sub.name == "judge" and rest[:1] == ["serve"]:
            continue  # judge serve is handed on by the judge command itself
        try:
            sub.make_context(name, list(rest))
        except Exception as e:  # noqa: BLE001 - click's usage errors: the flag or argument is wrong
            pytest.fail(f"{page}:{line}: {command}\n{type(e).__name__}: {e}")


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_every_command_block_runs_as_written(page, tmp_path):
    folder = tmp_path / page.replace("/", "_")
    folder.mkdir()
    env = _env(folder)
    for line, command, expected in commands(page):
        if _bare(command) in RUN_BY_CI:
            continue
        done = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True,
                              timeout=1200, check=False)  # fmt: skip
        assert done.returncode == expected, (
            f"{page}:{line}: {command}\nexit {done.returncode}, the page says {expected}\n"
            f"{done.stderr[-3000:]}"
        )


def test_the_part_file_a_stage_writes_is_documented():
    """`mcoder judge -o OUT` writes OUT.part and renames it at the end, so `tail -f OUT` showed
    nothing while it ran, and no page said so (test_judge_cli checks the behaviour itself)."""
    usage = (ROOT / "docs" / "usage.md").read_text()
    judge = usage[usage.index("## `mcoder judge`") : usage.index("## `mcoder train`")]
    assert "tail -f verdicts.jsonl.part" in judge and "renamed to `OUT`" in judge
    assert "tail -f OUT.part" in (ROOT / "docs" / "contract.md").read_text()
