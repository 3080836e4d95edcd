"""The errors a user can cause, each with a hint and an exit code.

The CLI's one error boundary (``mcoder.cli.app``) prints ``error: ...`` and ``hint: ...`` for
these and exits with their code; anything else is a bug and is reported as one.
"""

from __future__ import annotations

# Exit codes of the command-line contract (DESIGN.md).
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_DATA = 3
EXIT_ENVIRONMENT = 4
EXIT_GATE = 5  # the job ran and the results failed a gate (bench --fail-under / --fail-on-regression)
EXIT_INTERRUPTED = 130


class McoderError(Exception):
    """An error the user can fix; ``hint`` says how."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str, hint: str | None = None, exit_code: int | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def plain(self) -> str:
        """``error: ...`` and, when there is one, ``hint: ...``, as plain lines: for the scripts and
        entry points outside the CLI, whose boundary (``mcoder.cli.common.report``) styles them."""
        return f"error: {self.message}" + (f"\nhint: {self.hint}" if self.hint else "")


class UsageError(McoderError):
    """Flags that do not fit together, or a value out of range."""

    exit_code = EXIT_USAGE


class DataError(McoderError):
    """Bad input data. The message names the file, the line and the field where known."""

    exit_code = EXIT_DATA

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
    ):
        self.reason = message
        self.path = path
        self.line = line
        self.field = field
        where = []
        if path is not None:
            where.append(str(path) if line is None else f"{path}:{line}")
        if field is not None:
            where.append(f"field '{field}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message, hint)


class EnvironmentMissing(McoderError):
    """Something the machine must provide is not there (a GPU, a sandbox, a package)."""

    exit_code = EXIT_ENVIRONMENT


class GateFailed(McoderError):
    """The job ran cleanly and its results are worse than a gate allows: a worse model, not a broken job."""

    exit_code = EXIT_GATE
