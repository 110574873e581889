"""A hyperparameter chosen on validation, never on test: of the runs that fill one table cell and differ in one config
value (the learning rate of a tuned reference), the value whose runs have the highest mean validation metric
(``val_<metric>_best``, the score of the checkpoint each run is tested at), and those runs.

The candidates are compared on the seeds they all have, so that runs added to one value later (more seeds at the
chosen learning rate) do not change the choice; where they share no seed, on all their runs. A tie goes to the value
first in sorted order. A table row asks for it with ``select: {key: <dotted config key>, label: <its short name>}``
(``fsnn/report/paper_tables.yaml``); its cells show the chosen value's runs, whatever their seeds.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from fsnn.runs.formatting import format_number


@dataclass(frozen=True)
class Candidate:
    """One value of the key: its mean validation metric over the compared seeds and how many runs that is."""

    value: Any
    val_mean: float
    n: int


@dataclass(frozen=True)
class Selection:
    """The value chosen for ``key`` among ``candidates`` (sorted by value), compared on ``seeds`` (``()``: every run
    of each candidate, where they share none)."""

    key: str
    value: Any
    candidates: tuple[Candidate, ...]
    seeds: tuple[int, ...]

    def text(self, label: str, percent: bool = True) -> str:
        """``lr 0.005 of 0.01, 0.005, 0.001 on validation (91.20, 92.03, 90.11; seeds 0-4)``."""
        scale = 100.0 if percent else 1.0
        values = ", ".join(f"{c.value:g}" if isinstance(c.value, float) else str(c.value) for c in self.candidates)
        means = ", ".join(format_number(c.val_mean * scale) for c in self.candidates)
        chosen = f"{self.value:g}" if isinstance(self.value, float) else str(self.value)
        return f"{label} {chosen} of {values} on validation ({means}; {_seeds_text(self.seeds)})"


def _seeds_text(seeds: tuple[int, ...]) -> str:
    if not seeds:
        return "all runs"
    if list(seeds) == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"seeds {seeds[0]}-{seeds[-1]}"
    return ("seed " if len(seeds) == 1 else "seeds ") + ", ".join(map(str, seeds))


def _validation(run: dict) -> float | None:
    value = run.get(f"val_{run.get('metric', 'acc')}_best")
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _sort_key(value: Any) -> tuple:
    return (0, value, "") if isinstance(value, (int, float)) and not isinstance(value, bool) else (1, 0, str(value))


def select_on_validation(runs: list[dict], key: str, lookup) -> tuple[Selection | None, list[dict]]:
    """``(selection, the chosen value's runs)`` among ``runs`` by the value of ``key`` (``lookup(run, key)`` gives
    ``(found, value)``, :func:`fsnn.report.tables._lookup`); runs without the key or without a validation metric take
    no part. ``(None, [])`` where no run has both."""
    groups: dict[Any, list[dict]] = {}
    for run in runs:
        found, value = lookup(run, key)
        if found and value is not None and _validation(run) is not None:
            groups.setdefault(value, []).append(run)
    if not groups:
        return None, []
    seed_sets = [{r["seed"] for r in group if isinstance(r.get("seed"), int)} for group in groups.values()]
    shared = tuple(sorted(set.intersection(*seed_sets)))
    candidates = []
    for value in sorted(groups, key=_sort_key):
        compared = [r for r in groups[value] if not shared or r.get("seed") in shared]
        candidates.append(Candidate(value, statistics.fmean(_validation(r) for r in compared), len(compared)))
    best = max(candidates, key=lambda c: c.val_mean)  # the first of equal means: the first in sorted order
    return Selection(key, best.value, tuple(candidates), shared), groups[best.value]
