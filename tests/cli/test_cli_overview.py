"""`mcoder --help` as an overview (a line per subcommand, the recipes), and typer's shell completion."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from mcoder.cli.app import SUMMARIES, app

runner = CliRunner()


def test_help_lists_each_subcommand_on_one_line_and_points_to_the_recipes():
    out = runner.invoke(app, ["--help"], env={"COLUMNS": "80"}).stdout
    lines = out.splitlines()
    for name in ("dataset", "rollout", "judge", "train", "bench", "show"):
        row = [ln for ln in lines if ln.startswith(f"│ {name} ")]
        assert len(row) == 1 and SUMMARIES[name] in row[0], (name, out)
        following = lines[lines.index(row[0]) + 1]
        assert not following.startswith("│         "), f"{name}'s line wraps"  # one line each
    assert "commands/" in out and "--install-completion" in out  # its width: tests/cli/test_cli.py


def test_show_completion_prints_a_bash_script():
    # the installed entry point, as a shell runs it
    exe = os.path.join(os.path.dirname(sys.executable), "mcoder")
    r = subprocess.run(
        [exe, "--show-completion", "bash"], capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 0, r.stderr
    assert "complete -o default -F _mcoder_completion mcoder" in r.stdout
    assert "_MCODER_COMPLETE=complete_bash" in r.stdout


@pytest.mark.heavy
def test_completion_completes_subcommands_and_options():
    exe = os.path.join(os.path.dirname(sys.executable), "mcoder")
    env = {**os.environ, "_MCODER_COMPLETE": "complete_bash", "COMP_WORDS": "mcoder sh", "COMP_CWORD": "1"}
    r = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert r.stdout.split() == ["show"], r.stdout + r.stderr
    env |= {"COMP_WORDS": "mcoder show --mas", "COMP_CWORD": "2"}
    r = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert r.stdout.split() == ["--masked"], r.stdout + r.stderr


def test_install_completion_writes_the_script_and_sources_it(tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "mcoder")
    env = {**os.environ, "HOME": str(tmp_path), "SHELL": "/bin/bash"}
    r = subprocess.run(
        [exe, "--install-completion", "bash"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    script = tmp_path / ".bash_completions" / "mcoder.sh"
    assert "_mcoder_completion" in script.read_text()
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text()
