"""The claims figure (not in the paper): the paper's claimed gaps against our differences with their 95 % Welch
intervals, one row per claim, one panel per table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from fsnn.report.claims import CONFIRMED, INCONCLUSIVE, LEVEL, METHOD, NOT_DECIDED, REJECTED, claims, tally
from fsnn.report.collect import (
    DEFAULT_RECIPE,
)
from fsnn.report.style import (
    add_caption,
    legend_below,
    save,
    styled,
)
from fsnn.report.tables import (
    build_table,
    load_spec,
    table_variants,
)

VERDICT_COLORS = {CONFIRMED: "#238b45", REJECTED: "#b2182b", INCONCLUSIVE: "#737373", NOT_DECIDED: "#bdbdbd"}


@styled
def claims_figure(
    sections: list[tuple[str, list[dict]]], out: str | Path, name: str = "claims", captions: dict | None = None
) -> list[Path]:
    """The paper's claimed gaps against ours: one panel per table, one row per claim (:func:`fsnn.report.claims.claims`
    with a claimed size): our difference with its confidence interval (a bar, coloured by the decision), the paper's
    claimed difference (a cross) and 0 (a line)."""
    sections = [(title, [c for c in found if c["size"] is not None]) for title, found in sections]
    sections = [(title, found) for title, found in sections if found]
    if not sections:
        return []
    heights = [len(found) + 2.0 for _, found in sections]
    fig = Figure(figsize=(8.0, 0.3 * sum(heights) + 1.0))
    axes = fig.subplots(len(sections), 1, squeeze=False, gridspec_kw={"height_ratios": heights}).ravel()
    for ax, (title, found) in zip(axes, sections):
        y = np.arange(len(found))[::-1]
        for row, entry in zip(y, found):
            decision = entry["size"]
            color = VERDICT_COLORS[decision.verdict]
            if decision.diff is not None:  # fewer than two runs on a side: a point without an interval, or none
                xerr = (
                    None if decision.low is None else [[decision.diff - decision.low], [decision.high - decision.diff]]
                )
                ax.errorbar([decision.diff], [row], xerr=xerr, fmt="o", color=color, capsize=3, ms=5)
            ax.plot([decision.claim], [row], "x", color="black", ms=7, mew=1.5)
        ax.axvline(0.0, color="#525252", lw=0.8)
        ax.set_yticks(y, [f"{c['setting']} vs {c['baseline']} (n={c['size'].n_a}/{c['size'].n_b})" for c in found])
        ax.set_title(title, loc="left")
        ax.grid(axis="x", alpha=0.3, lw=0.5)
    fractional = " / ".join(dict.fromkeys(c["fractional"] for _, found in sections for c in found))
    axes[-1].set_xlabel(f"difference, {fractional} - baseline (percentage points)")
    shown = {c["size"].verdict for _, found in sections for c in found}
    handles = [Line2D([], [], color=c, marker="o", ls="-", label=v) for v, c in VERDICT_COLORS.items() if v in shown]
    handles.append(Line2D([], [], color="black", marker="x", ls="", mew=1.5, label="the paper's claimed difference"))
    legend_below(fig, handles, [h.get_label() for h in handles], ncol=4, axes_height=0.3 * sum(heights) + 1.0)
    counts = [f"{title}: {', '.join(f'{n} {v}' for v, n in tally(found).items() if n)}" for title, found in sections]
    add_caption(
        captions,
        name,
        f"The paper's claimed gaps against the runs: per pair of cells that differ only in the "
        f"neuron, our difference with its {LEVEL:.0%} confidence interval ({METHOD}), coloured by the decision on "
        f"the claimed size (rejected: the claim lies outside the interval; confirmed: the interval contains it and "
        f"excludes 0; else inconclusive); the cross is the paper's difference. {'; '.join(counts)}.",
    )
    return save(fig, out, name)


def claim_sections(runs: list[dict]) -> list[tuple[str, list[dict]]]:
    """``(title, claims)`` of every table of the matched recipe whose runs test a claimed size, in the spec's order."""
    specs = load_spec()
    sections = []
    for spec in specs:
        for recipe, epochs in table_variants(spec, runs):
            if recipe != DEFAULT_RECIPE:
                continue
            table = build_table(spec, runs, (), recipe, epochs)
            found = claims(spec, table, specs)
            if any(c["size"] is not None for c in found):
                sections.append((f"{spec.get('title') or spec['id']} ({table['id']})", found))
    return sections
