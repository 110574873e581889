"""The paper's figures, recomputed from what fsnn computes (never from hand-entered numbers).

Theory (no training):

* :func:`relaxation_figure` (paper Fig. 3, Proposition 1): ``E_alpha(-t^alpha)`` for alpha in {0.2, ..., 1.0}
  against the exponential ``e^{-t}``, with the subthreshold f-LIF simulated by fsnn on top (markers). With tau = 1
  and a constant input I = 1 from U(0) = 0 the f-LIF potential is ``U(t) = 1 - E_alpha(-t^alpha)``, so ``1 - U``
  is plotted; linear and log-log panels.
* :func:`kernel_figure` (paper Fig. 7): the memory kernel ``b_m`` (the paper's ``c_m`` up to the constant
  ``1/tau^alpha``) from :func:`fsnn.neurons.memory.history_kernel` on log-log axes, with the asymptote
  ``m^(alpha-1)/Gamma(alpha)`` and the exponential kernel ``(1 - 1/tau)^m`` of the integer-order LIF; second panel:
  the local log-log slope, which tends to ``alpha - 1``.

From runs (:func:`run_figures`; only runs of the suite's experiments, see :func:`fsnn.report.tables.suite_runs`):

* :func:`firing_rate_figure`: firing rate per layer, in the order the network applies its layers, one bar per neuron
  (mean ± std over its runs), from the ``firing_rates`` that ``train.py`` stores in ``metrics.json``; only runs of
  the experiments that compare neurons (:func:`neuron_comparisons`).
* :func:`robustness_figures` (paper Fig. ``fig:robust``): accuracy-vs-level curves per corruption and a radar chart
  of the robustness scores, from the ``robustness.json`` files written by ``evaluate.py robustness=...``.
* :func:`graph_robustness_figure` (paper Figs. ``fig:robustness_feature_masking``, ``fig:robustness_edge_dropout``):
  the two graph studies across their datasets and both backbones, the paper's claim in the caption.
* :func:`claims_figure` (not in the paper): the paper's claimed gaps (f-LIF or f-IF over a baseline) against our
  differences with their 95 % Welch intervals, one row per claim, one panel per table (:func:`claim_sections`).
* :func:`memory_horizon_figure` (not in the paper): delayed-cue test accuracy against the delay, one line per neuron
  variant, chance marked, and the seconds per training epoch against the delay, from the ``memory_horizon`` runs.
* :func:`alpha_curve_figure`: test accuracy against f-LIF's alpha from an alpha sweep (``ablation_alpha_node``),
  beside the other neurons' runs of Table 2 trained the same way, one panel per number of training epochs; the
  paper's Table 2 values only on a panel trained for the paper's epochs.

Every figure is written as PNG and PDF with fixed metadata (no creation date, no software version), so the same
runs give the same bytes. Text is at least 9 pt at the figure's own size. Fractional neurons (f-LIF, f-IF) are drawn
in warm colours, integer-order ones (the baselines and fsnn's alpha = 1 control) in cool colours, each with its own
marker. :func:`make_figures` draws them all and writes ``figures.json`` (each figure's name and caption, read by the
report page); a figure that is no longer drawn (its runs were removed) is deleted with it. Figures are built with
matplotlib's object API (``Figure``), not pyplot, so no GUI backend and no global figure state is involved.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

from fsnn.neurons.registry import neuron_label
from fsnn.records import fitting_name
from fsnn.report.claims import CONFIRMED, INCONCLUSIVE, LEVEL, METHOD, NOT_DECIDED, REJECTED, claims, tally
from fsnn.report.collect import (
    DEFAULT_RECIPE,
    dataset_backbone,
    epochs_of,
    experiment_of,
    neuron_name,
    recipe_of,
    scan_runs,
)
from fsnn.report.outputs import output_folder
from fsnn.report.robustness_claims import (
    GRAPH_BACKBONES,
    GRAPH_STUDIES,
    graph_records,
    level_values,
    panel_groups,
    panel_label,
    table_alpha,
)
from fsnn.report.style import MIN_FONT_PT, add_caption, family_styles, is_fractional, legend_below, save, styled
from fsnn.report.tables import (
    build_table,
    has_paper_values,
    load_spec,
    paper_protocol,
    remove_stale,
    suite_runs,
    table_variants,
)
from fsnn.report.theory import kernel_figure, relaxation_figure

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
MANIFEST = "figures.json"


# -- theory -----------------------------------------------------------------------------------


# -- from runs --------------------------------------------------------------------------------


def _by_neuron(records: Iterable[dict]) -> dict[str, list[dict]]:
    """Records by neuron name, fractional neurons first, then by name."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        groups[neuron_name(record)].append(record)
    return dict(sorted(groups.items(), key=lambda item: (not is_fractional(item[0]), item[0])))


def _legend(label: str, runs: list) -> str:
    return f"{label} (n={len(runs)})"


def _mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value)."""
    return float(np.mean(values)), (float(np.std(values, ddof=1)) if len(values) > 1 else 0.0)


def _epochs_text(epochs: int | None) -> str:
    return "epochs not recorded" if epochs is None else f"{epochs} epochs"


def network_order(runs: Iterable[dict], layers: Iterable[str]) -> list[str]:
    """``layers`` (module names of the network of ``runs``) in the order the network registers them, which is the
    order it applies them: ``metrics.json`` stores its firing rates sorted by name, and that order as
    ``layer_order``, read here from the first of ``runs`` that has one (the runs of one panel share a backbone).
    Names it lacks, or all of them when no run has one, follow in sorted order."""
    order = next((run["layer_order"] for run in runs if run.get("layer_order")), [])
    position = {name: i for i, name in enumerate(order)}
    return sorted(layers, key=lambda name: (position.get(name, len(order)), name))


@styled
def firing_rate_figure(
    runs: list[dict], out: str | Path, name: str = "firing_rates", captions: dict | None = None
) -> list[Path]:
    """Firing rate of every spiking layer, one panel per setting (dataset + backbone, epochs, recipe), layers in
    network order (:func:`network_order`), one bar per neuron: the mean over that neuron's runs (e.g. seeds) with
    the standard deviation as an error bar. ``runs``: ``metrics.json`` records with ``firing_rates``
    (``{module name: spikes / elements}``). Nothing is written (``[]``) when no run has firing rates."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for run in runs:
        if run.get("firing_rates"):
            groups[(dataset_backbone(run), epochs_of(run) or 0, recipe_of(run))].append(run)
    if not groups:
        return []
    fig = Figure(figsize=(9, 0.6 + 3.0 * len(groups)))
    axes = fig.subplots(len(groups), 1, squeeze=False)[:, 0]
    panels = []
    styles = family_styles(_by_neuron(run for members in groups.values() for run in members))  # one colour a neuron
    for ax, ((key, epochs, recipe), members) in zip(axes, sorted(groups.items())):
        layers = network_order(members, {layer for run in members for layer in run["firing_rates"]})
        neurons = _by_neuron(members)
        width = 0.8 / len(neurons)
        for i, (neuron, group) in enumerate(neurons.items()):
            stats = [
                _mean_std([r["firing_rates"][layer] for r in group if layer in r["firing_rates"]] or [np.nan])
                for layer in layers
            ]
            ax.bar(
                np.arange(len(layers)) + (i - (len(neurons) - 1) / 2) * width,
                [m for m, _ in stats],
                width,
                yerr=[s for _, s in stats],
                capsize=3,
                color=styles[neuron]["color"],
                edgecolor="white",
                lw=0.5,
                error_kw={"lw": 1, "ecolor": "0.2"},
                label=_legend(neuron_label(neuron), group),
            )
        ax.set_xticks(
            np.arange(len(layers)),
            layers,
            rotation=30 if len(layers) > 4 else 0,
            ha="right" if len(layers) > 4 else "center",
        )
        where = f"{key.replace('_', ' / ')}, {_epochs_text(epochs or None)}" + (
            "" if recipe == "matched" else f", recipe {recipe}"
        )
        ax.set(ylabel="firing rate (spikes / element)", title=f"{where}: layers in network order")
        ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.grid(alpha=0.3, axis="y", lw=0.5)
        panels.append(where)
    fig.tight_layout()
    add_caption(
        captions,
        name,
        "Firing rate of each spiking layer on the test split at the best-validation checkpoint, "
        "layers in network order; bars: mean over the runs (n in the legend), error bars: ± one standard deviation. "
        f"Panels: {'; '.join(panels)}.",
    )
    return save(fig, out, name)


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
    groups = _by_neuron(records)
    styles = family_styles(groups)
    metric = records[0].get("metric", "acc")
    for ax, corruption in zip(axes, names):
        for neuron, group in groups.items():
            points = level_values(group, corruption)
            if points:
                levels = list(points)
                stats = [_mean_std(points[lv]) for lv in levels]
                ax.errorbar(
                    levels,
                    [m for m, _ in stats],
                    yerr=[s for _, s in stats],
                    capsize=2,
                    ms=5,
                    label=_legend(neuron_label(neuron), group),
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
    groups = _by_neuron(records)
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
            label=_legend(neuron_label(neuron), group),
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
            levels, stats = list(points), [_mean_std(v) for v in points.values()]
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


def _variant_labels(table_id: str) -> dict[str, str]:
    """``{neuron_variant: row label}`` of a table of ``paper_tables.yaml``, so figure and table name rows alike."""
    spec = next(t for t in load_spec() if t["id"] == table_id)
    return {row["match"]["neuron_variant"]: row["label"] for row in spec["rows"]}


def _plain_log_axis(axis, ticks=None) -> None:
    """Log-axis ticks written as plain numbers (4, 8, 16; 2, 5, 10), not as powers."""
    if ticks is not None:
        axis.set_major_locator(FixedLocator(ticks))
    else:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


@styled
def memory_horizon_figure(
    runs: list[dict], out: str | Path, name: str = "memory_horizon", captions: dict | None = None
) -> list[Path]:
    """Delayed cue: test accuracy (%) against the delay (log axis), one line per neuron variant (mean ± std over its
    seeds as error bars, n in the legend), chance (100 / num_cues) dotted and labelled beside the axes; second panel:
    seconds of training steps per epoch against the delay (mean ± std). ``runs``: complete ``metrics.json`` records;
    those of the ``memory_horizon`` experiment (or its smoke) with a ``neuron_variant`` are used. Nothing is written
    (``[]``) without such runs."""
    labels = _variant_labels("memory_horizon")
    groups, order = _horizon_groups(runs)
    if not groups:
        return []
    chance = {
        100.0 / int(r["config"]["dataset"]["num_cues"])
        for by_delay in groups.values()
        for group in by_delay.values()
        for r in group
    }
    styles = family_styles(order)
    fig = Figure(figsize=(10, 4.4))
    ax_acc, ax_time = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.5, 1]})
    all_delays = sorted({d for v in groups.values() for d in v})
    counts = set()
    for variant in order:
        delays = sorted(groups[variant])
        stats = [_mean_std([100 * r["test_acc"] for r in groups[variant][d]]) for d in delays]
        counts |= {len(groups[variant][d]) for d in delays}
        style = {**styles[variant], "ls": "-" if is_fractional(variant) else "--", "ms": 5, "capsize": 2}
        ax_acc.errorbar(
            delays, [m for m, _ in stats], yerr=[s for _, s in stats], label=labels.get(variant, variant), **style
        )
        # seconds on one kind of hardware only: the CPU's, where a sweep's long delays ran on a GPU
        times = [
            (d, _mean_std([r["train_epoch_s"] for r in groups[variant][d]]))
            for d in delays
            if all(r.get("train_epoch_s") and _on_cpu(r) for r in groups[variant][d])
        ]
        if times:
            ax_time.errorbar(
                [d for d, _ in times], [m for _, (m, _) in times], yerr=[s for _, (_, s) in times], **style
            )
    for level in sorted(chance):  # the label sits right of the axes, where no data is drawn
        ax_acc.axhline(level, color="0.3", ls=":", lw=1.2)
        ax_acc.annotate(
            f"chance\n{level:g} %",
            (1.0, level),
            xycoords=("axes fraction", "data"),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=MIN_FONT_PT,
            color="0.3",
        )
    n_text = "/".join(str(n) for n in sorted(counts))
    ax_acc.set(
        xlabel="delay between cue and recall (steps)",
        ylabel="test accuracy (%)",
        ylim=(0, 102),
        title=f"delayed cue: accuracy (mean ± std, n={n_text} seeds)",
    )
    ax_time.set(
        yscale="log",
        xlabel="delay (steps)",
        ylabel="train steps, s / epoch",
        title="training time per epoch (CPU runs)",
    )
    for ax in (ax_acc, ax_time):
        ax.set_xscale("log", base=2)
        _plain_log_axis(ax.xaxis, all_delays)
        ax.grid(alpha=0.3, which="both", lw=0.5)
    _plain_log_axis(ax_time.yaxis)
    handles, names = ax_acc.get_legend_handles_labels()
    legend_below(
        fig, handles, names, ncol=2, title="warm, solid: fractional order (f-LIF); cool, dashed: first order (LIF)"
    )
    add_caption(
        captions,
        name,
        "Delayed cue (not in the paper): test accuracy against the delay between cue and recall, "
        f"mean ± std over seeds (n={n_text} per point), chance dotted; right: seconds of training steps per epoch "
        "of the delays that ran on a CPU.",
    )
    return save(fig, out, name)


def _horizon_groups(runs: list[dict], part: Callable[[dict], Any] = lambda run: run):
    """``({neuron_variant: {delay: [part(run), ...]}}, variants in the table's row order)`` of the complete
    ``memory_horizon`` runs among ``runs`` whose ``part`` is not empty."""
    labels = _variant_labels("memory_horizon")
    groups: dict[str, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        variant = (run.get("choices") or {}).get("neuron_variant")
        if experiment_of(run) == "memory_horizon" and variant is not None and (value := part(run)):
            groups[variant][int(run["config"]["dataset"]["delay"])].append(value)
    return groups, [v for v in labels if v in groups] + sorted(set(groups) - set(labels))


def _on_cpu(run: dict) -> bool:
    return str(run.get("device", "cpu")).startswith("cpu")


@styled
def learned_tau_figure(
    runs: list[dict], out: str | Path, name: str = "memory_horizon_tau", captions: dict | None = None
) -> list[Path]:
    """Delayed cue: the learned time constant against the training epoch (``metrics.json``'s ``neurons_by_epoch``),
    one panel per neuron variant that learns tau, one colour per delay, the last hidden layer solid and the first
    dashed, mean over seeds (log axis). ``runs``: complete ``memory_horizon`` records; nothing is written without a
    run that learned tau."""
    labels = _variant_labels("memory_horizon")

    def tau_history(run: dict) -> list[dict]:
        return [e for e in run.get("neurons_by_epoch") or [] if any("tau_mean" in v for v in e["neurons"].values())]

    groups, order = _horizon_groups(runs, tau_history)
    if not groups:
        return []
    delays = sorted({d for v in groups.values() for d in v})
    colours = dict(zip(delays, matplotlib.colormaps["viridis"](np.linspace(0.0, 0.9, len(delays)))))
    fig = Figure(figsize=(3.2 * len(order), 3.6))
    axes = np.atleast_1d(fig.subplots(1, len(order), sharey=True))
    for ax, variant in zip(axes, order):
        for delay in delays:
            histories = groups[variant].get(delay, [])
            if not histories:
                continue
            layers = sorted(histories[0][0]["neurons"])
            for layer, ls in zip(layers, ("--", "-")):
                epochs = sorted({e["epoch"] for h in histories for e in h})
                means = [
                    np.nanmean(
                        [
                            e["neurons"][layer]["tau_mean"]
                            for h in histories
                            for e in h
                            if e["epoch"] == epoch and layer in e["neurons"]
                        ]
                    )
                    for epoch in epochs
                ]
                ax.plot(epochs, means, ls=ls, color=colours[delay], label=f"delay {delay}" if ls == "-" else None)
        ax.set(title=labels.get(variant, variant), xlabel="epoch", yscale="log")
        ax.grid(alpha=0.3, which="both", lw=0.5)
    axes[0].set_ylabel("learned tau (mean over seeds)")
    _plain_log_axis(axes[0].yaxis)
    handles, names = axes[0].get_legend_handles_labels()
    legend_below(fig, handles, names, ncol=len(delays), title="solid: last hidden layer; dashed: first")
    add_caption(
        captions,
        name,
        "Delayed cue (not in the paper): the time constant that the learned-tau neurons learn, "
        "epoch by epoch, per delay (mean over seeds; solid: last hidden layer, dashed: first).",
    )
    return save(fig, out, name)


def _test_percent(run: dict) -> float:
    return 100.0 * run[f"test_{run.get('metric', 'acc')}"]


def _comparable(run: dict, sweep_run: dict) -> bool:
    """A Table 2 run trained like the sweep's runs: same setting, recipe, epochs and Poisson steps."""

    def key(r):
        config = r.get("config") or {}
        return (
            dataset_backbone(r),
            recipe_of(r),
            (config.get("trainer") or {}).get("max_epochs"),
            (config.get("dataset") or {}).get("T"),
        )

    return key(run) == key(sweep_run)


def _paper_marks(dataset: str, backbone: str) -> tuple[list[tuple[str, str, float, float | None]], float | None]:
    """The paper's Table 2 values of a setting, ``[(neuron, row label, mean, std)]``, and f-SNN's alpha there
    (tab:alpha_gnn)."""
    specs = {spec["id"]: spec for spec in load_spec()}
    spec = specs["node_classification"]
    column = next((i for i, c in enumerate(spec["columns"]) if (c.get("match") or {}).get("dataset") == dataset), None)
    if column is None:
        return [], None
    table = build_table(spec, [])
    marks = [
        (row_spec["match"]["neuron"], row["label"], cell["paper_mean"], cell["paper_std"])
        for row_spec, row in zip(spec["rows"], table["rows"])
        if row_spec["match"].get("backbone") == backbone and (cell := row["cells"][column])["paper_mean"] is not None
    ]
    alpha = next(
        (row["paper"].get(dataset) for row in specs["alpha_gnn"]["rows"] if row["match"].get("backbone") == backbone),
        None,
    )
    return marks, alpha


@styled
def alpha_curve_figure(
    runs: list[dict],
    out: str | Path,
    experiment: str = "ablation_alpha_node",
    reference: str = "table2_node_classification",
    captions: dict | None = None,
) -> list[Path]:
    """Test accuracy (%) against f-LIF's alpha, one figure per setting (``alpha_<dataset>_<backbone>``) and in it one
    panel per number of training epochs: each run of the sweep ``experiment`` (fixed alpha, the matched recipe) as a
    dot, their mean ± std per alpha as a line with error bars; the other neurons' runs of ``reference`` trained the
    same way (setting, recipe, epochs, T) as horizontal lines (mean) with their ± std as bars right of alpha = 1; the
    paper's Table 2 values (f-SNN as a star at its tab:alpha_gnn alpha) only on the panel trained for the paper's
    epochs (``protocol`` of Table 2 in ``paper_tables.yaml``), since other panels do not measure what the paper did.
    A panel needs a sweep of three alphas or more; a figure without panels is not written."""
    sweep = [
        r
        for r in runs
        if experiment_of(r) == experiment
        and recipe_of(r) == "matched"
        and neuron_name(r) == "flif"
        and not r["config"]["neuron"].get("learn_alpha")
    ]
    groups: dict[str, dict[int | None, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for run in sweep:
        groups[dataset_backbone(run)][epochs_of(run)].append(run)
    paper_epochs = paper_protocol(next(s for s in load_spec() if s["id"] == "node_classification")).get("epochs")
    paths: list[Path] = []
    for key, by_epochs in sorted(groups.items()):
        panels = {
            e: members
            for e, members in sorted(by_epochs.items(), key=lambda i: i[0] or 0)
            if len({r["config"]["neuron"]["alpha"] for r in members}) >= 3
        }
        if not panels:
            continue
        first = next(iter(panels.values()))[0]
        dataset, backbone = first["config"]["dataset"]["name"], first["config"]["backbone"]["name"]
        marks, paper_alpha = _paper_marks(dataset, backbone)
        fig = Figure(figsize=(4.6 * len(panels) + 1.0, 4.4))
        axes = fig.subplots(1, len(panels), squeeze=False, sharey=True)[0]
        handles: dict[str, object] = {}
        notes = []
        for ax, (epochs, members) in zip(axes, panels.items()):
            by_alpha: dict[float, list[float]] = defaultdict(list)
            for run in members:
                by_alpha[float(run["config"]["neuron"]["alpha"])].append(_test_percent(run))
            alphas = sorted(by_alpha)
            warm = family_styles(["flif"])["flif"]["color"]
            for alpha in alphas:
                dots = ax.scatter(
                    [alpha] * len(by_alpha[alpha]), by_alpha[alpha], s=16, color=warm, alpha=0.35, lw=0, zorder=2
                )
            handles["dots"] = (dots, "f-LIF, one run (one dot per seed)")
            stats = [_mean_std(by_alpha[a]) for a in alphas]
            seeds = "/".join(map(str, sorted({len(v) for v in by_alpha.values()})))
            line = ax.errorbar(
                alphas,
                [m for m, _ in stats],
                yerr=[s for _, s in stats],
                color=warm,
                marker="o",
                ms=5,
                capsize=3,
                zorder=3,
            )
            handles["flif"] = (line, f"f-LIF, mean ± std over seeds (n={seeds} per alpha)")
            others = _by_neuron(
                r
                for r in runs
                if experiment_of(r) == reference and _comparable(r, members[0]) and neuron_name(r) != "flif"
            )
            styles = family_styles(others)
            dashes = ["-", (0, (6, 3)), (0, (1.5, 1.5)), (0, (6, 2, 1.5, 2))]
            for i, (neuron, group) in enumerate(others.items()):
                mean, std = _mean_std([_test_percent(r) for r in group])
                color = styles[neuron]["color"]
                # equivalent neurons (SpikingJelly's LIF, fsnn's alpha = 1) land on one line: dash each its own way
                ax.axhline(mean, color=color, ls=dashes[i % len(dashes)], lw=1.6, zorder=1)
                ax.errorbar(
                    [1.08 + 0.05 * i],
                    [mean],
                    yerr=[std],
                    color=color,
                    marker=styles[neuron]["marker"],
                    ms=6,
                    capsize=3,
                    ls="none",
                    zorder=3,
                )
                proxy = Line2D([], [], color=color, ls=dashes[i % len(dashes)], lw=1.6, marker=styles[neuron]["marker"])
                handles[neuron] = (
                    proxy,
                    f"{neuron_label(neuron)}, Table 2 runs, n={len(group)}: "
                    "mean (line), ± std (bar right of alpha = 1)",
                )
            ax.set_xlim(min(alphas) - 0.05, 1.08 + 0.05 * max(len(others), 1))
            if paper_epochs is not None and epochs == paper_epochs:
                for neuron, label, mean, std in marks:
                    if neuron == "flif" and paper_alpha is not None:
                        star = ax.errorbar(
                            [paper_alpha],
                            [mean],
                            yerr=[std or 0],
                            color="k",
                            marker="*",
                            ms=12,
                            capsize=3,
                            ls="none",
                            zorder=4,
                        )
                        handles[f"paper {label}"] = (star, f"paper: {label} {mean:.2f} at its alpha {paper_alpha:g}")
                    else:
                        ref = ax.axhline(mean, color="k", ls=(0, (4, 3)) if neuron == "sj_lif" else ":", lw=1)
                        handles[f"paper {label}"] = (ref, f"paper: {label} {mean:.2f}")
                title = f"{_epochs_text(epochs)} (the paper's protocol)"
            else:
                title = f"{_epochs_text(epochs)} (paper: {paper_epochs}; its values not drawn)"
                notes.append(f"{_epochs_text(epochs)}: the paper's values ({paper_epochs} epochs) not drawn")
            ax.set(xlabel="alpha (f-LIF order; 1 = LIF)", title=title)
            ax.set_xticks(alphas, [f"{a:g}" for a in alphas])
            ax.grid(alpha=0.3, lw=0.5)
        axes[0].set_ylabel("test accuracy (%)")
        fig.suptitle(f"{dataset} / {backbone}: test accuracy against f-LIF's alpha")
        legend_below(fig, [h for h, _ in handles.values()], [t for _, t in handles.values()])
        name = f"alpha_{dataset}_{backbone}"
        add_caption(
            captions,
            name,
            f"f-LIF's alpha swept on {dataset} / {backbone} ({experiment}), beside the other neurons' "
            f"runs of Table 2 trained the same way; one panel per number of training epochs."
            + (f" {'; '.join(notes)}." if notes else ""),
        )
        paths += save(fig, out, name)
    return paths


def neuron_comparisons() -> set[str]:
    """The experiments whose runs of one setting differ only in the neuron and the seed, so that the firing-rate
    figure may average them per neuron: those behind a table the paper prints values for, less its ablations, which
    vary the neuron itself (alpha, memory); the suite's own studies (a recipe switched per row, a delay sweep) vary
    more than the neuron."""
    return {
        name
        for spec in load_spec()
        if has_paper_values(spec)
        for name in spec.get("experiments") or ()
        if not name.startswith("ablation_")
    }


def run_figures(
    results_dir: str | Path, out: str | Path, echo: Callable = print, captions: dict | None = None
) -> list[Path]:
    """The figures from the complete runs of the suite's experiments under ``results_dir``
    (:func:`fsnn.report.tables.suite_runs`): firing rates (``metrics.json``), per setting, robustness curves and radar
    (``robustness.json``), the alpha curve and the memory horizon. Says so and skips a figure that has no data."""
    results_dir = Path(results_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # corrupt files are listed below instead
        found = scan_runs(results_dir)
    for path, reason in found.corrupt:
        echo(f"  corrupt, skipped: {path} ({reason})")
    runs, ad_hoc = suite_runs(found.complete)
    if ad_hoc:
        echo(
            f"  not of a suite experiment, not drawn: {len(ad_hoc)} run(s) "
            f"({', '.join(sorted({experiment_of(r) or '?' for r in ad_hoc}))})"
        )
    compared = neuron_comparisons()
    paths = firing_rate_figure([r for r in runs if experiment_of(r) in compared], out, captions=captions)
    if not paths:
        echo(f"no complete run with firing_rates under {results_dir}: firing-rate figure skipped")
    alpha = alpha_curve_figure(runs, out, captions=captions)
    if not alpha:
        echo(f"no alpha sweep (experiment=ablation_alpha_node) under {results_dir}: alpha curve skipped")
    paths += alpha
    records = [run["robustness"] for run in runs if "robustness" in run]
    if not records:
        echo(
            f"no robustness.json under {results_dir} (run evaluate.py run_dir=<run> robustness=events): "
            "robustness figures skipped"
        )
    groups: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        groups[dataset_backbone(record)].append(record)
    for key, group in sorted(groups.items()):
        # the setting names a file in out: a record's dataset or backbone name cannot lead it out of there
        paths += robustness_figures(
            group, out, f"robustness_{fitting_name(key.replace('/', '_'), 200)}", echo, captions
        )
    for corruption in GRAPH_STUDIES:
        paths += graph_robustness_figure(graph_records(runs), corruption, out, captions)
    paths += claims_figure(claim_sections(runs), out, captions=captions)
    horizon = memory_horizon_figure(runs, out, captions=captions)
    horizon += learned_tau_figure(runs, out, captions=captions)
    if not horizon:
        echo(
            f"no memory_horizon runs under {results_dir} (python train.py experiment=memory_horizon): "
            "memory-horizon figure skipped"
        )
    return paths + horizon


def make_figures(
    results_dir: str | Path,
    out: str | Path,
    dt: float = 0.01,
    t_max: float = 100.0,
    t_lin: float = 5.0,
    engine: str = "direct",
    kernel_steps: int = 10001,
    tau_lif: float = 2.0,
    echo: Callable = print,
) -> list[Path]:
    """Every figure: those from the runs under ``results_dir`` (:func:`run_figures`), then the theory ones; writes
    ``<out>/figures.json`` (``written``: the figures' names in page order, ``captions``) and deletes the files of a
    figure the previous manifest listed and this call did not draw, so ``out`` holds exactly what the runs give.
    ``out`` under ``results_dir`` must stay in it (:func:`fsnn.report.outputs.output_folder`)."""
    out = output_folder(out, results_dir)
    captions: dict[str, str] = {}
    paths = run_figures(results_dir, out, echo, captions)
    paths += relaxation_figure(out, dt, t_max, t_lin, engine, echo, captions)
    paths += kernel_figure(out, kernel_steps, tau_lif, echo, captions)
    names = list(dict.fromkeys(p.stem for p in paths))
    for stale in remove_stale(out, names, (".png", ".pdf"), MANIFEST, {"captions": captions}):
        echo(f"removed {stale} (its runs are gone)")
    return paths
