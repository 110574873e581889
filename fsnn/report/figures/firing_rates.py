"""The firing-rate figure: firing rate per layer, in the order the network applies its layers, one bar per
neuron (mean ± std over its runs)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Iterable

import numpy as np
from matplotlib.figure import Figure

from fsnn.neurons.registry import neuron_label
from fsnn.report.collect import (
    by_neuron,
    dataset_backbone,
    epochs_of,
    recipe_of,
)
from fsnn.report.style import (
    add_caption,
    epochs_text,
    family_styles,
    legend_text,
    mean_std,
    save,
    styled,
)


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
    styles = family_styles(by_neuron(run for members in groups.values() for run in members))  # one colour a neuron
    for ax, ((key, epochs, recipe), members) in zip(axes, sorted(groups.items())):
        layers = network_order(members, {layer for run in members for layer in run["firing_rates"]})
        neurons = by_neuron(members)
        width = 0.8 / len(neurons)
        for i, (neuron, group) in enumerate(neurons.items()):
            stats = [
                mean_std([r["firing_rates"][layer] for r in group if layer in r["firing_rates"]] or [np.nan])
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
                label=legend_text(neuron_label(neuron), group),
            )
        ax.set_xticks(
            np.arange(len(layers)),
            layers,
            rotation=30 if len(layers) > 4 else 0,
            ha="right" if len(layers) > 4 else "center",
        )
        where = f"{key.replace('_', ' / ')}, {epochs_text(epochs or None)}" + (
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
