"""The paper's claims decided from the runs.

A *claim* is a pair of cells that differ only in the neuron: the fractional neuron against an integer-order one in
the same setting (dataset, backbone, recipe switch). Where the paper prints both cells, it claims their difference
(its f-SNN mean - its baseline mean); fsnn's own first-order neuron, which the paper does not have, is tested for
the direction alone ("f-LIF beats LIF", no size claimed). :func:`decide` turns the two cells' runs and the claim into
a decision; :func:`claims` finds every pair in a built table; :func:`claims_markdown` writes them as a table.
"""

from __future__ import annotations

import contextlib
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from fsnn.neurons.registry import NEURONS, is_fractional, neuron_label
from fsnn.runs.formatting import DASH, format_number

LEVEL = 0.95  # the confidence level of the interval; the detectable difference is for a test at 1 - LEVEL
POWER = 0.8  # the power at which the detectable difference is found

MIN_RUNS = 2  # runs a side needs for an interval: one run has no spread
CONFIRMED, REJECTED, INCONCLUSIVE = "confirmed", "rejected", "inconclusive"
NOT_DECIDED = "not decided"  # the runs cannot carry a decision (:func:`undecidable`)
METHOD = "Welch's t interval over seeds (unequal variances, Welch-Satterthwaite degrees of freedom)"


@dataclass(frozen=True)
class Decision:
    """What the runs say of one claim. ``diff`` = mean(a) - mean(b); ``low``/``high``: its confidence interval at
    :data:`LEVEL`; ``detectable``: the smallest true difference a two-sided test at ``1 - LEVEL`` finds with
    probability :data:`POWER` at these runs' spread; ``claim``: the claimed difference (``None``: only that a beats
    b); ``verdict``: :data:`CONFIRMED`, :data:`REJECTED`, :data:`INCONCLUSIVE` or :data:`NOT_DECIDED`; ``reason``: why,
    in words."""

    n_a: int
    n_b: int
    diff: float | None
    low: float | None
    high: float | None
    detectable: float | None
    claim: float | None
    verdict: str
    reason: str


def welch(a: Sequence[float], b: Sequence[float], level: float = LEVEL, power: float = POWER):
    """``(diff, low, high, detectable)`` of ``mean(a) - mean(b)`` by Welch's t interval; ``None`` where the values
    cannot carry one (:func:`undecidable`, or numbers so large that the arithmetic overflows).

    With sample variances ``s_a², s_b²``::

        d  = mean(a) - mean(b),     SE = sqrt(s_a²/n_a + s_b²/n_b)
        ν  = SE⁴ / ((s_a²/n_a)² / (n_a - 1) + (s_b²/n_b)² / (n_b - 1))      (Welch-Satterthwaite)
        CI = d ± t(1 - (1 - level)/2; ν) · SE
        detectable = (t(1 - (1 - level)/2; ν) + t(power; ν)) · SE"""
    a, b = [float(v) for v in a], [float(v) for v in b]
    if undecidable(a, b) is not None:
        return None
    from scipy.stats import t

    try:
        va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
        se = math.sqrt(va + vb)
        dof = se**4 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
        diff = statistics.fmean(a) - statistics.fmean(b)
    except (OverflowError, ZeroDivisionError):
        return None
    if not all(math.isfinite(x) for x in (se, dof, diff)) or se == 0:
        return None  # variances that underflow to 0 or overflow to inf: no interval to trust
    half = float(t.ppf(1 - (1 - level) / 2, dof))
    return diff, diff - half * se, diff + half * se, (half + float(t.ppf(power, dof))) * se


def undecidable(a: Sequence[float], b: Sequence[float], claim: float | None = None) -> str | None:
    """Why the runs ``a`` and ``b`` (and the claimed difference) cannot carry a decision, in words; ``None`` where
    they can. A value that is not finite (NaN, inf: a run that diverged), a claim that is not, fewer than
    :data:`MIN_RUNS` runs on a side, or no spread on either side (every run on each side the same value: copies of
    one run, or a metric pinned at chance) leave nothing to build an interval on."""
    if claim is not None and not math.isfinite(claim):
        return f"the claimed difference ({claim}) is not a finite number"
    if bad := sum(not math.isfinite(v) for v in (*a, *b)):
        return f"{bad} of the {len(a) + len(b)} values are not finite (NaN or infinite)"
    if min(len(a), len(b)) < MIN_RUNS:
        return f"fewer than {MIN_RUNS} runs on a side (n = {len(a)} and {len(b)}): no interval"
    if len(set(a)) == 1 and len(set(b)) == 1:
        return "every run on each side gives the same value: no spread to build an interval on"
    return None


def decide(
    a: Sequence[float], b: Sequence[float], claim: float | None = None, level: float = LEVEL, power: float = POWER
) -> Decision:
    """Decide the claim that ``mean(a) - mean(b)`` is ``claim`` (``None``: that it is above 0) from the runs.

    With the interval ``[low, high]`` of :func:`welch`:

    * a claimed size ``c``: *rejected* when ``c`` lies outside the interval; *confirmed* when the interval excludes
      0 on ``c``'s side (``low > 0`` for ``c > 0``, ``high < 0`` for ``c < 0``) and contains ``c``; else
      *inconclusive*;
    * no size (``a`` beats ``b``): *confirmed* when ``low > 0``, *rejected* when ``high <= 0`` (no positive
      difference is in the interval), else *inconclusive*.

    Runs that cannot carry a decision (:func:`undecidable`, or values that overflow the arithmetic) get
    :data:`NOT_DECIDED`, no interval, and the reason."""
    a, b = [float(v) for v in a], [float(v) for v in b]
    found = welch(a, b, level, power)
    if found is None:
        reason = undecidable(a, b, claim) or "the values are too large for the interval's arithmetic"
        diff = None
        if a and b and all(math.isfinite(v) for v in (*a, *b)):
            with contextlib.suppress(OverflowError):
                diff = statistics.fmean(a) - statistics.fmean(b)
        return Decision(len(a), len(b), diff, None, None, None, claim, NOT_DECIDED, reason)
    if claim is not None and not math.isfinite(claim):
        return Decision(len(a), len(b), *found[:4], claim, NOT_DECIDED, undecidable(a, b, claim))
    diff, low, high, detectable = found
    interval = f"the {level:.0%} interval [{low:+.2f}, {high:+.2f}]"
    if claim is None:
        if low > 0:
            verdict, reason = CONFIRMED, f"{interval} lies above 0"
        elif high <= 0:
            verdict, reason = REJECTED, f"{interval} holds no positive difference"
        else:
            verdict, reason = INCONCLUSIVE, f"{interval} contains 0"
    elif not low <= claim <= high:
        verdict = REJECTED
        reason = f"the claimed {claim:+.2f} lies {'above' if claim > high else 'below'} {interval}"
    elif (low > 0) if claim > 0 else (high < 0) if claim < 0 else False:
        verdict, reason = CONFIRMED, f"{interval} contains the claimed {claim:+.2f} and excludes 0"
    else:
        verdict, reason = INCONCLUSIVE, f"{interval} contains both 0 and the claimed {claim:+.2f}"
    return Decision(len(a), len(b), diff, low, high, detectable, claim, verdict, reason)


def _setting_key(match: dict) -> str:
    return json.dumps({k: v for k, v in match.items() if k != "neuron"}, sort_keys=True, default=str)


def paper_value(spec: dict, fields: dict) -> float | None:
    """The paper's mean in ``spec`` for the cell whose match (table, row and column together) has ``fields`` (the
    setting and the neuron): how a table that is not in the paper names the published cells its rows test."""
    for row in spec["rows"]:
        for column in spec["columns"]:
            match = {**(spec.get("match") or {}), **(row.get("match") or {}), **(column.get("match") or {})}
            if "neuron" in match and all(match[k] == v for k, v in fields.items() if k in match):
                value = (row.get("paper") or {}).get(column["key"])
                if value is not None:
                    return float(value[0] if isinstance(value, list) else value)
    return None


def claims(spec: dict, table: dict, specs: Sequence[dict] = ()) -> list[dict]:
    """Every claim in a built table (:func:`fsnn.report.tables.build_table`): in each setting with runs of the
    fractional neuron, one entry per integer-order neuron with runs of its own (a cell that shows another row's runs
    is not a second baseline), in the table's order. The claimed size is the paper's difference where the paper
    prints both cells, in this table or, for a row with ``claim_of: <table id>``, in that table of ``specs`` (the same
    setting there); else only the direction is claimed. A table that is not in the paper (``in_paper`` false) tests
    claims only in its rows with ``claim_of``. Each entry: ``setting``, ``fractional``, ``baseline`` (the
    neurons' labels), ``paper`` (``[fractional, baseline]`` means or ``None``), ``size`` (:func:`decide` on the
    claimed size, ``None`` where none is claimed) and ``beats`` (:func:`decide` on the direction alone)."""
    groups: dict[str, dict[str, tuple[dict, dict, str]]] = {}
    for row_spec, row in zip(spec["rows"], table["rows"]):
        for col_spec, column, cell in zip(spec["columns"], table["columns"], row["cells"]):
            neuron = (cell.get("match") or {}).get("neuron")
            if neuron is None or not cell["percent"] or not cell.get("judge", True) or not cell["n"]:
                continue
            # a paper table whose columns are neurons names the setting by its row; else the dataset (the column where
            # the columns are datasets), the backbone and a recipe switch
            label = row["label"]
            if "neuron" not in (col_spec.get("match") or {}) or not table.get("in_paper"):
                found = cell["match"]
                dataset = (
                    column if "neuron" not in (col_spec.get("match") or {}) else str(found.get("dataset")).capitalize()
                )
                label = (
                    dataset
                    + (f" / {found['backbone'].upper()}" if found.get("backbone") else "")
                    + (f", {found['recipe_switch']}" if found.get("recipe_switch") else "")
                )
            groups.setdefault(_setting_key(cell["match"]), {})[neuron] = (cell, row_spec, label)
    elsewhere = {s["id"]: s for s in specs}
    out = []
    for cells in groups.values():
        fractional = next((n for n in NEURONS.names(order="fractional") if n in cells), None)
        if fractional is None:
            continue
        frac, frac_row, setting = cells[fractional]
        if not table.get("in_paper") and not frac_row.get("claim_of"):
            continue  # a study of the suite's own tests the paper's claims only in the rows that say which
        for name, (cell, row_spec, _) in cells.items():
            if is_fractional(name) or cell.get("same_as") or cell["runs"] == frac["runs"]:
                continue  # a stand-in for another row's runs, or the fractional cell's own runs
            paper = [frac["paper_mean"], cell["paper_mean"]]
            source = frac_row.get("claim_of")
            if None in paper and source in elsewhere:
                paper = [paper_value(elsewhere[source], frac["match"]), paper_value(elsewhere[source], cell["match"])]
            paper = None if None in paper else paper
            claim = None if paper is None else paper[0] - paper[1]
            out.append(
                {
                    "setting": setting,
                    "fractional": neuron_label(fractional),
                    "baseline": neuron_label(name),
                    "paper": paper,
                    "size": None if paper is None else decide(frac["values"], cell["values"], claim),
                    "beats": decide(frac["values"], cell["values"]),
                }
            )
    return out


def tally(found: list[dict], key: str = "size") -> dict[str, int]:
    """How many of ``found`` (:func:`claims`) the runs confirm, reject, leave inconclusive and cannot decide, by their
    ``key`` decision (``size``: the claimed gaps; ``beats``: the direction); claims without that decision are not counted."""
    counts = {CONFIRMED: 0, REJECTED: 0, INCONCLUSIVE: 0, NOT_DECIDED: 0}
    for entry in found:
        if entry[key] is not None:
            counts[entry[key].verdict] += 1
    return counts


LEGEND = (
    f"Δ = fractional neuron - baseline, percentage points; {LEVEL:.0%} CI: {METHOD}; detectable: the smallest "
    f"true Δ a two-sided test at α = {1 - LEVEL:.2f} finds with power {POWER:g} at these runs' spread. "
    "Claimed gap: the paper's Δ, rejected when it lies outside the CI, confirmed when the CI contains it and "
    "excludes 0, else inconclusive. Beats: the direction alone (confirmed: the CI lies above 0; rejected: it "
    f"holds no positive Δ). Not decided: no interval can be built (fewer than {MIN_RUNS} runs on a side, no spread "
    "on either side, or a value that is not finite)."
)

#: the columns of a claim as a table shows it (:func:`claim_cells`), with their headers
COLUMNS = {
    "setting": "setting",
    "baseline": "vs",
    "n": "n",
    "diff": "Δ ours",
    "interval": "95 % CI",
    "claim": "paper Δ",
    "detectable": "detectable",
    "size": "claimed gap",
    "beats": "beats",
}


def claim_cells(entry: dict) -> dict[str, str]:
    """A claim (:func:`claims`) as the text of its table cells (:data:`COLUMNS`), plus ``reason``: why the claimed
    size (else the direction) was decided so."""
    beats, size = entry["beats"], entry["size"]
    return {
        "setting": entry["setting"],
        "baseline": entry["baseline"],
        "n": f"{beats.n_a} / {beats.n_b}",
        "diff": DASH if beats.diff is None else f"{beats.diff:+.2f}",
        "interval": DASH if beats.low is None else f"[{beats.low:+.2f}, {beats.high:+.2f}]",
        "claim": DASH if size is None else f"{size.claim:+.2f}",
        "detectable": DASH if beats.detectable is None else format_number(beats.detectable),
        "size": "not claimed" if size is None else size.verdict,
        "beats": beats.verdict,
        "reason": (beats if size is None else size).reason,
    }


def claims_markdown(table: dict, found: list[dict]) -> str:
    """The claims of one built table as a Markdown section (:data:`COLUMNS`, :data:`LEGEND`)."""
    lines = [
        f"### {table['id']}: the paper's claims, decided",
        "",
        LEGEND,
        "",
        "| " + " | ".join(COLUMNS.values()) + " |",
        "|---" * len(COLUMNS) + "|",
    ]
    for entry in found:
        cells = claim_cells(entry)
        lines.append("| " + " | ".join(cells[key].replace("|", "\\|") for key in COLUMNS) + " |")
    return "\n".join(lines) + "\n"
