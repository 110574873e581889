"""The robustness figures: accuracy-vs-level curves per corruption and a radar chart of the robustness scores
(paper Fig. ``fig:robust``), and the paper's two graph studies across their datasets and backbones."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

import numpy as np
from matplotlib.figure import Figure

from fsnn.neurons.registry import neuron_label
from fsnn.report.collect import (
    by_neuron,
    neuron_name,
)
from fsnn.report.robustness_claims import (
    GRAPH_BACKBONES,
    GRAPH_STUDIES,
    level_values,
    panel_groups,
    panel_label,
    table_alpha,
)
from fsnn.report.style import (
    add_caption,
    family_styles,
    legend_below,
    legend_text,
    mean_std,
    save,
    styled,
)

CORRUPTION_LABELS = {
    "gaussian_noise": "Noise injection",
    "center_occlusion": "Occlude block",
    "temporal_truncation": "Temporal truncate",
    "temporal_jitter": "Temporal jitter",
    "frame_discard": "Discard frame",
    "feature_masking": "Feature masking",
    "edge_dropping": "Edge dropping",
    "spike_noise": "Spike noise",
}


def _corruptions(records: list[dict]) -> list[str]:
    return list(dict.fromkeys(name for r in records for name in r.get("corruptions", {})))


@styled
def robustness_curves(
    records: list[dict], out: str | Path, name: str = "robustness_curves", captions: dict | None = None
) -> list[Path]:
    """Metric (in %) vs corruption level, one panel per corruption, one line per neuron (mean ± std over its runs
    at each level); the clean metric is drawn at level 0. ``records``: ``robustness.json`` contents."""
    names = _corruptions(records)
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    fig = Figure(figsize=(3.6 * cols, 3.2 * rows))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    groups = by_neuron(records)
    styles = family_styles(groups)
    metric = records[0].get("metric", "acc")
    for ax, corruption in zip(axes, names):
        for neuron, group in groups.items():
            points = level_values(group, corruption)
            if points:
                levels = list(points)
                stats = [mean_std(points[lv]) for lv in levels]
                ax.errorbar(
                    levels,
                    [m for m, _ in stats],
                    yerr=[s for _, s in stats],
                    capsize=2,
                    ms=5,
                    label=legend_text(neuron_label(neuron), group),
                    **styles[neuron],
                )
        ax.set(
            xlabel="level (0 = clean)", ylabel=f"test {metric} (%)", title=CORRUPTION_LABELS.get(corruption, corruption)
        )
        ax.grid(alpha=0.3, lw=0.5)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    handles, labels = axes[0].get_legend_handles_labels()
    legend_below(fig, handles, labels, ncol=min(3, len(labels)), axes_height=3.2 * rows)
    add_caption(
        captions,
        name,
        f"Test {metric} under each corruption against its level (level 0: clean); mean ± std over "
        "each neuron's runs (n in the legend).",
    )
    return save(fig, out, name)


@styled
def robustness_radar(
    records: list[dict], out: str | Path, name: str = "robustness_radar", captions: dict | None = None
) -> list[Path]:
    """Radar chart of the paper's robustness scores, one axis per corruption, one polygon per neuron (mean score
    over its runs; a missing score leaves a gap). Needs at least three corruptions (``[]`` otherwise)."""
    names = _corruptions(records)
    if len(names) < 3:
        return []
    angles = np.linspace(0.0, 2 * np.pi, len(names), endpoint=False)
    fig = Figure(figsize=(6.5, 5.5))
    ax = fig.add_subplot(projection="polar")
    groups = by_neuron(records)
    styles = family_styles(groups)
    for neuron, group in groups.items():
        scores = []
        for corruption in names:
            values = [s for r in group if (s := r.get("corruptions", {}).get(corruption, {}).get("score")) is not None]
            scores.append(np.mean(values) if values else np.nan)
        closed = np.append(angles, angles[0])
        ax.plot(
            closed,
            np.append(scores, scores[0]),
            "-",
            ms=5,
            label=legend_text(neuron_label(neuron), group),
            **styles[neuron],
        )
        ax.fill(closed, np.append(scores, scores[0]), color=styles[neuron]["color"], alpha=0.08)
    ax.set_xticks(angles, [CORRUPTION_LABELS.get(n, n) for n in names])
    ax.set_ylim(0, max(100.0, ax.get_ylim()[1]))
    ax.tick_params(axis="x", pad=22)  # the axis names sit outside the rim, clear of the polygons
    ax.set_title("robustness score (100 x mean corrupted / clean)", pad=18)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.08, 1.0))
    add_caption(
        captions,
        name,
        "Robustness score per corruption (100 x mean corrupted accuracy / clean accuracy, larger is "
        "better), mean over each neuron's runs.",
    )
    return save(fig, out, name)


def robustness_figures(
    records: list[dict],
    out: str | Path,
    prefix: str = "robustness",
    echo: Callable = print,
    captions: dict | None = None,
) -> list[Path]:
    """Curves (``<prefix>_curves``) and radar (``<prefix>_radar``, when three or more corruptions) of ``records``.
    Without a radar, an older ``<prefix>_radar`` file in ``out`` is removed, so the figures beside a
    ``robustness.json`` always show that study."""
    if not records:
        return []
    paths = robustness_curves(records, out, f"{prefix}_curves", captions)
    radar = robustness_radar(records, out, f"{prefix}_radar", captions)
    if not radar:
        echo(f"{prefix}: fewer than three corruptions, no radar chart")
        for ext in ("png", "pdf"):
            (Path(out) / f"{prefix}_radar.{ext}").unlink(missing_ok=True)
    return paths + radar


@styled
def graph_robustness_figure(
    records: list[dict], corruption: str, out: str | Path, captions: dict | None = None
) -> list[Path]:
    """One of the paper's graph robustness studies (:data:`GRAPH_STUDIES`): test accuracy against the corruption
    level, one panel per dataset and backbone, one line per neuron (mean ± std over its seeds; level 0 is the clean
    test of the same pass). A neuron with a single run (a same-computation check, see Table 2) is left out. The
    caption states the paper's claim and what the runs give at the strongest level."""
    study = GRAPH_STUDIES[corruption]
    name = f"graph_{corruption}"
    panels = [(d, b) for d in study["datasets"] for b in GRAPH_BACKBONES]
    chosen = [r for r in records if corruption in r.get("corruptions", {})]
    by_panel = {p: panel_groups(chosen, corruption, *p) for p in panels}
    panels = [p for p in panels if by_panel[p]]
    if not panels:
        return []
    fig = Figure(figsize=(3.4 * len(panels), 3.4))
    axes = fig.subplots(1, len(panels), squeeze=False).ravel()
    styles = family_styles(neuron_name(r) for r in chosen)
    handles: dict[str, Any] = {}
    strongest = []
    for ax, (dataset, backbone) in zip(axes, panels):
        for neuron, group in by_panel[(dataset, backbone)].items():
            points = level_values(group, corruption)
            levels, stats = list(points), [mean_std(v) for v in points.values()]
            label = f"{neuron_label(neuron)}"
            line = ax.errorbar(
                levels,
                [m for m, _ in stats],
                yerr=[s for _, s in stats],
                capsize=2,
                ms=5,
                label=label,
                **styles[neuron],
            )
            handles.setdefault(label, line)
            strongest.append((dataset, backbone, neuron, levels[-1], *stats[-1], len(group)))
        ax.set(
            xlabel=f"{CORRUPTION_LABELS[corruption].lower()} ratio (0 = clean)",
            ylabel="test accuracy (%)",
            title=panel_label(dataset, backbone),
        )
        ax.grid(alpha=0.3, lw=0.5)
    legend_below(fig, list(handles.values()), list(handles), ncol=min(4, len(handles)), axes_height=3.4)
    at_strongest: dict[tuple, list[str]] = defaultdict(list)
    for dataset, backbone, neuron, level, mean, std, n in strongest:
        at_strongest[(dataset, backbone, level)].append(f"{neuron_label(neuron)} {mean:.1f} ± {std:.1f} (n={n})")
    summary = "; ".join(
        f"{dataset}/{backbone} at {level:g}: {', '.join(items)}"
        for (dataset, backbone, level), items in at_strongest.items()
    )
    integer = [f"{d}/{b}" for d, b in panels if any(table_alpha(r, d, b) == 1.0 for r in chosen)]
    same = (
        f" On {' and '.join(integer)} tab:alpha_gnn sets f-LIF's alpha to 1.0, which makes f-LIF fsnn's LIF "
        f"(alpha = 1): one computation, drawn once, under the name with more runs."
        if integer
        else ""
    )
    add_caption(
        captions,
        name,
        f"{CORRUPTION_LABELS[corruption]} at test time (the trained model tested on the corrupted "
        f"graph, its input rebuilt with the run's own preprocessing), test accuracy against the ratio, mean ± std "
        f"over seeds (Table 2's matched runs). The paper claims: {study['claim']}. Measured at the strongest level: "
        f"{summary}.{same}",
    )
    return save(fig, out, name)
