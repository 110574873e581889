"""The delayed-cue figures (not in the paper): test accuracy and seconds per epoch against the delay, and the
learned time constant epoch by epoch, from the ``memory_horizon`` runs."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from fsnn.report.collect import (
    experiment_of,
    on_cpu,
)
from fsnn.report.style import (
    MIN_FONT_PT,
    add_caption,
    family_styles,
    is_fractional,
    legend_below,
    mean_std,
    plain_log_axis,
    save,
    styled,
)
from fsnn.report.tables import (
    load_spec,
)


def _variant_labels(table_id: str) -> dict[str, str]:
    """``{neuron_variant: row label}`` of a table of ``paper_tables.yaml``, so figure and table name rows alike."""
    spec = next(t for t in load_spec() if t["id"] == table_id)
    return {row["match"]["neuron_variant"]: row["label"] for row in spec["rows"]}


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
    styles = family_styles(order)
    fig = Figure(figsize=(10, 4.4))
    ax_acc, ax_time = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.5, 1]})
    all_delays = sorted({d for v in groups.values() for d in v})
    counts = _accuracy_panel(ax_acc, groups, order, labels, styles)
    for variant in order:
        delays = sorted(groups[variant])
        style = {**styles[variant], "ls": "-" if is_fractional(variant) else "--", "ms": 5, "capsize": 2}
        # seconds on one kind of hardware only: the CPU's, where a sweep's long delays ran on a GPU
        times = [
            (d, mean_std([r["train_epoch_s"] for r in groups[variant][d]]))
            for d in delays
            if all(r.get("train_epoch_s") and on_cpu(r) for r in groups[variant][d])
        ]
        if times:
            ax_time.errorbar(
                [d for d, _ in times], [m for _, (m, _) in times], yerr=[s for _, (_, s) in times], **style
            )
    n_text = "/".join(str(n) for n in sorted(counts))
    ax_acc.set_title(f"delayed cue: accuracy (mean ± std, n={n_text} seeds)")
    ax_time.set(
        yscale="log",
        xlabel="delay (steps)",
        ylabel="train steps, s / epoch",
        title="training time per epoch (CPU runs)",
    )
    ax_time.set_xscale("log", base=2)
    plain_log_axis(ax_time.xaxis, all_delays)
    ax_time.grid(alpha=0.3, which="both", lw=0.5)
    plain_log_axis(ax_time.yaxis)
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


def _accuracy_panel(ax, groups: dict, order: list[str], labels: dict[str, str], styles: dict) -> set[int]:
    """Test accuracy (%) against the delay on ``ax``: one line per variant of ``order`` (mean ± std over seeds),
    chance dotted and labelled right of the axes, the delay on a log axis; returns the seed counts drawn."""
    counts, chance = set(), set()
    for variant in order:
        delays = sorted(groups[variant])
        stats = [mean_std([100 * r["test_acc"] for r in groups[variant][d]]) for d in delays]
        counts |= {len(groups[variant][d]) for d in delays}
        chance |= {100.0 / int(r["config"]["dataset"]["num_cues"]) for d in delays for r in groups[variant][d]}
        style = {**styles[variant], "ls": "-" if is_fractional(variant) else "--", "ms": 5, "capsize": 2}
        ax.errorbar(
            delays, [m for m, _ in stats], yerr=[s for _, s in stats], label=labels.get(variant, variant), **style
        )
    for level in sorted(chance):  # the label sits right of the axes, where no data is drawn
        ax.axhline(level, color="0.3", ls=":", lw=1.2)
        ax.annotate(
            f"chance\n{level:g} %",
            (1.0, level),
            xycoords=("axes fraction", "data"),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=MIN_FONT_PT,
            color="0.3",
        )
    delays = sorted({d for variant in order for d in groups[variant]})
    ax.set(xlabel="delay between cue and recall (steps)", ylabel="test accuracy (%)", ylim=(0, 102))
    ax.set_xscale("log", base=2)
    plain_log_axis(ax.xaxis, delays)
    ax.grid(alpha=0.3, which="both", lw=0.5)
    return counts


def _horizon_groups(
    runs: list[dict],
    part: Callable[[dict], Any] = lambda run: run,
    experiment: str = "memory_horizon",
    keep: Callable[[dict], bool] = lambda run: True,
):
    """``({neuron_variant: {delay: [part(run), ...]}}, variants in the table's row order)`` of the complete
    ``experiment`` runs among ``runs`` that ``keep`` keeps and whose ``part`` is not empty."""
    labels = _variant_labels("memory_horizon")
    groups: dict[str, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        variant = (run.get("choices") or {}).get("neuron_variant")
        if experiment_of(run) == experiment and variant is not None and keep(run) and (value := part(run)):
            groups[variant][int(run["config"]["dataset"]["delay"])].append(value)
    return groups, [v for v in labels if v in groups] + sorted(set(groups) - set(labels))


@styled
def memory_horizon_long_figure(
    runs: list[dict], out: str | Path, name: str = "memory_horizon_long", captions: dict | None = None
) -> list[Path]:
    """Delayed cue past 128 steps: test accuracy (%) against the delay, feed-forward (left) and recurrent (right)
    SeqMLP, one line per neuron variant (mean ± std over seeds). ``runs``: complete ``metrics.json`` records; those
    of the ``memory_horizon_long`` experiment are used. Nothing is written (``[]``) without such runs."""
    labels = _variant_labels("memory_horizon")
    panels = {
        recurrent: _horizon_groups(
            runs,
            experiment="memory_horizon_long",
            keep=lambda run, r=recurrent: bool(run["config"]["backbone"].get("recurrent")) == r,
        )
        for recurrent in (False, True)
    }
    if not any(groups for groups, _ in panels.values()):
        return []
    styles = family_styles(sorted({v for _, order in panels.values() for v in order}))
    fig = Figure(figsize=(10, 4.4))
    axes = fig.subplots(1, 2, sharey=True)
    counts = set()
    for ax, (recurrent, (groups, order)) in zip(axes, panels.items()):
        counts |= _accuracy_panel(ax, groups, order, labels, styles) if groups else set()
        ax.set_title("recurrent (R s_{t-1} in every layer)" if recurrent else "feed-forward")
    n_text = "/".join(str(n) for n in sorted(counts))
    handles = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    legend_below(
        fig,
        list(handles.values()),
        list(handles),
        ncol=3,
        title="warm, solid: fractional order (f-LIF); cool, dashed: first order (LIF)",
    )
    add_caption(
        captions,
        name,
        "Delayed cue past 128 steps (not in the paper): test accuracy against the delay, feed-forward and recurrent "
        f"SeqMLP, mean ± std over seeds (n={n_text} per point), chance dotted.",
    )
    return save(fig, out, name)


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
    plain_log_axis(axes[0].yaxis)
    handles, names = axes[0].get_legend_handles_labels()
    legend_below(fig, handles, names, ncol=len(delays), title="solid: last hidden layer; dashed: first")
    add_caption(
        captions,
        name,
        "Delayed cue (not in the paper): the time constant that the learned-tau neurons learn, "
        "epoch by epoch, per delay (mean over seeds; solid: last hidden layer, dashed: first).",
    )
    return save(fig, out, name)
