"""The alpha curve: test accuracy against f-LIF's alpha from an alpha sweep, beside the other neurons' runs of
Table 2 trained the same way and the paper's values."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from fsnn.neurons.registry import neuron_label
from fsnn.report.collect import (
    by_neuron,
    dataset_backbone,
    epochs_of,
    experiment_of,
    neuron_name,
    recipe_of,
    test_percent,
    training_setting,
)
from fsnn.report.style import (
    add_caption,
    epochs_text,
    family_styles,
    legend_below,
    mean_std,
    save,
    styled,
)
from fsnn.report.tables import (
    build_table,
    load_spec,
    paper_protocol,
)


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
                by_alpha[float(run["config"]["neuron"]["alpha"])].append(test_percent(run))
            alphas = sorted(by_alpha)
            warm = family_styles(["flif"])["flif"]["color"]
            for alpha in alphas:
                dots = ax.scatter(
                    [alpha] * len(by_alpha[alpha]), by_alpha[alpha], s=16, color=warm, alpha=0.35, lw=0, zorder=2
                )
            handles["dots"] = (dots, "f-LIF, one run (one dot per seed)")
            stats = [mean_std(by_alpha[a]) for a in alphas]
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
            others = by_neuron(
                r
                for r in runs
                if experiment_of(r) == reference
                and training_setting(r) == training_setting(members[0])
                and neuron_name(r) != "flif"
            )
            styles = family_styles(others)
            dashes = ["-", (0, (6, 3)), (0, (1.5, 1.5)), (0, (6, 2, 1.5, 2))]
            for i, (neuron, group) in enumerate(others.items()):
                mean, std = mean_std([test_percent(r) for r in group])
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
                title = f"{epochs_text(epochs)} (the paper's protocol)"
            else:
                title = f"{epochs_text(epochs)} (paper: {paper_epochs}; its values not drawn)"
                notes.append(f"{epochs_text(epochs)}: the paper's values ({paper_epochs} epochs) not drawn")
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
