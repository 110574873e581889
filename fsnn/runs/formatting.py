"""How a number reads on the console, in the tables and on the report page: the one formatter."""

from __future__ import annotations

#: a value that is not there (no run, no paper value)
DASH = "—"


def format_number(value: float | None, digits: int = 2, std: float | None = None, pm: str = "±") -> str:
    """``value`` with ``digits`` decimals, followed by `` ± std`` when a ``std`` is given; :data:`DASH` for none:
    ``format_number(81.254, std=0.5) -> "81.25 ± 0.50"``."""
    if value is None:
        return DASH
    return f"{value:.{digits}f}" + (f" {pm} {std:.{digits}f}" if std is not None else "")


def format_percent(value: float | None) -> str:
    """A fraction as the percent a person reads: ``0.8125 -> "81.25 %"`` (:data:`DASH` for none)."""
    return DASH if value is None else f"{format_number(100 * value)} %"
