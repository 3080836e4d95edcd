"""The CLI boundary: exit codes, error and hint lines, no traceback unless MCODER_DEBUG=1, and a
--help that does not import torch."""

import subprocess
import sys

import typer
from typer.testing import CliRunner

from mcoder import __version__
from mcoder.cli.app import app
from mcoder.cli.common import guarded
from mcoder.errors import DataError, EnvironmentMissing, UsageError

runner = CliRunner()


def _app_raising(exc: BaseException) -> typer.Typer:
    demo = typer.Typer()

    @demo.command()
    @guarded
    def go(flag: int = 0) -> None:
        raise exc

    @demo.command()
    def other() -> None:  # a second command keeps typer in multi-command mode
        pass

    return demo


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"mcoder {__version__}"


def test_help_lists_subcommands_without_importing_torch():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from mcoder.cli.app import app\n"
        "r = CliRunner().invoke(app, ['--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(r.output)\n"
        "heavy = [m for m in ('torch', 'transformers', 'vllm') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "dataset" in out.stdout


def test_user_errors_print_error_and_hint_with_their_exit_code():
    cases = [
        (UsageError("flags clash", hint="drop one"), 2),
        (DataError("bad value", path="p.jsonl", line=57, field="tests", hint="fix it"), 3),
        (EnvironmentMissing("no sandbox", hint="run as root"), 4),
    ]
    for exc, code in cases:
        result = runner.invoke(_app_raising(exc), ["go"])
        assert result.exit_code == code
        assert "error:" in result.stderr and "hint:" in result.stderr
        assert "Traceback" not in result.stderr
    result = runner.invoke(_app_raising(cases[1][0]), ["go"])
    assert "p.jsonl:57" in result.stderr and "field 'tests'" in result.stderr


def test_bug_is_exit_1_with_traceback_only_in_debug(monkeypatch):
    monkeypatch.delenv("MCODER_DEBUG", raising=False)
    result = runner.invoke(_app_raising(ZeroDivisionError("boom")), ["go"])
    assert result.exit_code == 1
    assert "internal error: ZeroDivisionError: boom" in result.stderr
    assert "MCODER_DEBUG=1" in result.stderr and "Traceback" not in result.stderr

    monkeypatch.setenv("MCODER_DEBUG", "1")
    result = runner.invoke(_app_raising(ZeroDivisionError("boom")), ["go"])
    assert result.exit_code == 1
    assert "Traceback" in result.stderr


def test_interrupt_is_130():
    result = runner.invoke(_app_raising(KeyboardInterrupt()), ["go"])
    assert result.exit_code == 130
    assert "interrupted" in result.stderr


def test_bad_flag_is_a_usage_error():
    result = runner.invoke(_app_raising(ValueError()), ["go", "--flag", "x"])
    assert result.exit_code == 2


def test_version_in_a_real_process():
    out = subprocess.run([sys.executable, "-m", "mcoder", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"mcoder {__version__}"
