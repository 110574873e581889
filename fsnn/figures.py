"""The paper's figures, recomputed from what fsnn computes (never from hand-entered numbers).

Theory (no training):

* :func:`relaxation_figure` (paper Fig. 3, Proposition 1): ``E_alpha(-t^alpha)`` for alpha in {0.2, ..., 1.0}
  against the exponential ``e^{-t}``, with the subthreshold f-LIF simulated by fsnn on top (markers). With tau = 1
  and a constant input I = 1 from U(0) = 0 the f-LIF potential is ``U(t) = 1 - E_alpha(-t^alpha)``, so ``1 - U``
  is plotted; linear and log-log panels.
* :func:`kernel_figure` (paper Fig. 7): the memory kernel ``b_m`` (the paper's ``c_m`` up to the constant
  ``1/tau^alpha``) from :func:`fsnn.history.history_kernel` on log-log axes, with the asymptote
  ``m^(alpha-1)/Gamma(alpha)`` and the exponential kernel ``(1 - 1/tau)^m`` of the integer-order LIF; second panel:
  the local log-log slope, which tends to ``alpha - 1``.

From runs:

* :func:`firing_rate_figure`: firing rate per layer, one bar per neuron (LIF vs f-LIF and the baselines), from the
  ``firing_rates`` that ``train.py`` stores in ``metrics.json`` (measured on the test split at the best checkpoint).
* :func:`robustness_figures` (paper Fig. ``fig:robust``): accuracy-vs-level curves per corruption and a radar chart
  of the robustness scores, from the ``robustness.json`` files written by ``evaluate.py robustness=...``.
* :func:`memory_horizon_figure` (not in the paper): delayed-cue test accuracy against the delay, one line per neuron
  variant, chance marked, and the seconds per training epoch against the delay, from the ``memory_horizon`` runs.
* :func:`alpha_curve_figure`: test accuracy against f-LIF's alpha from an alpha sweep (``ablation_alpha_node``),
  beside the other neurons' runs of Table 2 on the same setting and the paper's Table 2 values.

Every figure is written as PNG and PDF. Figures are built with matplotlib's object API (``Figure``), not pyplot,
so no GUI backend and no global figure state is involved.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable

import matplotlib
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import ScalarFormatter

from fsnn.history import history_kernel
from fsnn.tables import build_table, experiment_of, load_spec, recipe_of, scan_runs

ALPHAS = (0.2, 0.4, 0.6, 0.8, 1.0)
NEURON_LABELS = {"flif": "f-LIF (f-SNN)", "sj_lif": "LIF (SpikingJelly)", "snntorch_leaky": "LIF (snnTorch)",
                 "lif": "LIF (fsnn, alpha=1)", "fif": "f-IF (f-SNN)", "sj_if": "IF (SpikingJelly)"}
CORRUPTION_LABELS = {"gaussian_noise": "Noise injection", "center_occlusion": "Occlude block",
                     "temporal_truncation": "Temporal truncate", "temporal_jitter": "Temporal jitter",
                     "frame_discard": "Discard frame", "feature_masking": "Feature masking",
                     "edge_dropping": "Edge dropping", "spike_noise": "Spike noise"}


def save(fig: Figure, out: str | Path, name: str) -> list[Path]:
    """``fig`` as ``<out>/<name>.png`` and ``.pdf``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("png", "pdf"):
        path = out / f"{name}.{ext}"
        fig.savefig(path, dpi=160, bbox_inches="tight")
        paths.append(path)
    return paths


def _colors(name: str, n: int, stop: float = 0.85) -> np.ndarray:
    return matplotlib.colormaps[name](np.linspace(0.0, stop, n))


# -- theory -----------------------------------------------------------------------------------


def mittag_leffler(z: np.ndarray, alpha: float) -> np.ndarray:
    """``E_alpha(z) = sum_k z^k / Gamma(alpha k + 1)`` (pymittagleffler), real part."""
    import pymittagleffler

    return np.asarray(pymittagleffler.mittag_leffler(np.asarray(z, dtype=np.float64), alpha, 1.0)).real


def simulate_relaxation(alpha: float, dt: float, t_max: float, engine: str) -> tuple[np.ndarray, np.ndarray]:
    """``(t, 1 - U(t))`` of a subthreshold f-LIF (tau = 1) charged by a constant unit input from ``U(0) = 0``."""
    from fsnn import FractionalLIF

    T = int(round(t_max / dt))
    x = torch.ones(T, 1, 1, dtype=torch.float64)
    neuron = FractionalLIF(alpha=alpha, tau=1.0, threshold=1e9, dt=dt, method="pred", engine=engine)
    with torch.no_grad():
        s, v = neuron(x, return_state=True)
    if s.any():  # the threshold is out of reach by construction: a spike means the neuron is broken
        raise RuntimeError(f"the subthreshold f-LIF fired (alpha={alpha}, dt={dt})")
    t = (np.arange(T) + 1.0) * dt
    return t, 1.0 - v.reshape(-1).numpy()


def relaxation_figure(out: str | Path, dt: float = 0.01, t_max: float = 100.0, t_lin: float = 5.0,
                      engine: str = "direct", echo: Callable = print) -> list[Path]:
    """Paper Fig. 3: Mittag-Leffler relaxation vs exponential, exact curves and fsnn's simulated f-LIF."""
    colors = _colors("viridis", len(ALPHAS))
    fig = Figure(figsize=(11, 4.2))
    ax_lin, ax_log = fig.subplots(1, 2)
    t_dense_lin = np.linspace(0.0, t_lin, 400)
    t_dense_log = np.geomspace(1e-2, t_max, 400)
    max_err = {}
    for alpha, c in zip(ALPHAS, colors):
        t_sim, r_sim = simulate_relaxation(alpha, dt, t_max, engine)
        label = rf"$\alpha={alpha:g}$" + (" (LIF, $e^{-t}$)" if alpha == 1.0 else "")
        ax_lin.plot(t_dense_lin, mittag_leffler(-(t_dense_lin**alpha), alpha), color=c, lw=1.8, label=label)
        ax_log.loglog(t_dense_log, mittag_leffler(-(t_dense_log**alpha), alpha), color=c, lw=1.8, label=label)
        # markers: fsnn's simulated f-LIF, subsampled
        idx_lin = np.unique(np.linspace(0, int(round(t_lin / dt)) - 1, 21).astype(int))
        ax_lin.plot(t_sim[idx_lin], r_sim[idx_lin], "o", ms=4, mfc="none", color=c)
        idx_log = np.unique(np.geomspace(max(1, int(0.05 / dt)), len(t_sim), 18).astype(int) - 1)
        keep = r_sim[idx_log] > 0
        ax_log.loglog(t_sim[idx_log][keep], r_sim[idx_log][keep], "o", ms=4, mfc="none", color=c)
        if alpha < 1.0:  # power-law tail E_alpha(-t^alpha) ~ t^-alpha / Gamma(1 - alpha)
            t_tail = np.geomspace(3.0, t_max, 50)
            ax_log.loglog(t_tail, t_tail**-alpha / math.gamma(1.0 - alpha), ":", color=c, lw=1.0)
        err = np.abs(r_sim - mittag_leffler(-(t_sim**alpha), alpha))
        max_err[alpha] = (float(err.max()), float(err[t_sim >= 1.0 - 1e-9].max(initial=0.0)))
    ax_lin.set(xlabel="$t$", ylabel=r"$E_\alpha(-t^\alpha)$", xlim=(0, t_lin), ylim=(0, 1.02),
               title="Mittag-Leffler relaxation (linear axes)")
    ax_log.set(xlabel="$t$", ylabel=r"$E_\alpha(-t^\alpha)$", ylim=(1e-4, 1.5),
               title="log-log axes (dotted: $t^{-\\alpha}/\\Gamma(1-\\alpha)$)")
    ax_lin.legend(fontsize=8, frameon=False)
    ax_log.legend(handles=[Line2D([], [], color="k", lw=1.8, label="exact (Mittag-Leffler)"),
                           Line2D([], [], color="k", marker="o", mfc="none", ls="none",
                                  label=f"fsnn f-LIF, $1-U$ (dt={dt:g})")],
                  fontsize=8, frameon=False, loc="lower left")
    for ax in (ax_lin, ax_log):
        ax.grid(alpha=0.3, which="both", lw=0.5)
    fig.tight_layout()
    for alpha, (e_all, e_away) in max_err.items():
        # the max over all t sits at the first step (t = dt): the t^alpha initial layer
        echo(f"  relaxation alpha={alpha:g}: max |fsnn - E_alpha| over (0, {t_max:g}] = {e_all:.2e}, "
             f"over [1, {t_max:g}] = {e_away:.2e}")
    return save(fig, out, "mittag_leffler_relaxation")


def kernel_figure(out: str | Path, steps: int = 10001, tau_lif: float = 2.0, echo: Callable = print) -> list[Path]:
    """Paper Fig. 7: power-law decay of the memory kernel ``b_m`` vs the exponential kernel of the LIF."""
    colors = _colors("plasma", len(ALPHAS), stop=0.8)
    m = np.arange(steps)
    fig = Figure(figsize=(11, 4.2))
    ax_k, ax_s = fig.subplots(1, 2)
    for alpha, c in zip(ALPHAS, colors):
        b = history_kernel("pred", alpha, steps, dt=1.0, dtype=torch.float64).numpy()
        ax_k.loglog(m[1:], b[1:], color=c, lw=1.8, label=rf"$\alpha={alpha:g}$")
        if alpha < 1.0:
            ax_k.loglog(m[1:], m[1:] ** (alpha - 1.0) / math.gamma(alpha), ":", color=c, lw=1.0)
            for method, ls in (("pred", "-"), ("gl", "--")):
                bm = b if method == "pred" else history_kernel(method, alpha, steps, dt=1.0,
                                                               dtype=torch.float64).numpy()
                local = np.diff(np.log(bm[1:])) / np.diff(np.log(m[1:]))
                ax_s.semilogx(np.sqrt(m[1:-1] * m[2:]), local, ls, color=c, lw=1.5)
                ax_s.axhline(alpha - 1.0, color=c, lw=0.6, alpha=0.6)
    beta = 1.0 - 1.0 / tau_lif
    expo = beta ** m[1:].astype(float)
    keep = expo > 1e-8
    ax_k.loglog(m[1:][keep], expo[keep], "k--", lw=1.5, label=rf"LIF $(1-1/\tau)^m$, $\tau={tau_lif:g}$")
    ax_k.set(xlabel="$m$ (steps into the past)", ylabel="$b_m$", ylim=(1e-8, 2),
             title=r"memory kernel $b_m=[(m+1)^\alpha-m^\alpha]/\Gamma(\alpha+1)$ "
                   r"(dotted: $m^{\alpha-1}/\Gamma(\alpha)$)")
    ax_k.title.set_fontsize(9)
    ax_s.set(xlabel="$m$", ylabel=r"local slope $d\log b_m / d\log m$",
             title=r"local log-log slope $\to \alpha-1$ (pred solid, gl dashed)")
    ax_s.title.set_fontsize(9)
    ax_k.legend(fontsize=8, frameon=False, loc="lower left")
    handles = [Line2D([], [], color=c, lw=1.5, label=rf"$\alpha={a:g}$") for a, c in zip(ALPHAS[:-1], colors)]
    handles += [Line2D([], [], color="gray", ls="-", label="pred"), Line2D([], [], color="gray", ls="--", label="gl")]
    ax_s.set_ylim(-0.85, -0.1)
    ax_s.legend(handles=handles, fontsize=8, frameon=True, framealpha=0.9, ncol=3,
                loc="center right", bbox_to_anchor=(1.0, 0.47))
    for ax in (ax_k, ax_s):
        ax.grid(alpha=0.3, which="both", lw=0.5)
    fig.tight_layout()
    for alpha in ALPHAS[:-1]:
        b = history_kernel("pred", alpha, steps, dt=1.0, dtype=torch.float64).numpy()
        mm = np.unique(np.geomspace(min(100, steps // 2), steps - 1, 100).astype(int))
        slope = np.polyfit(np.log(mm), np.log(b[mm]), 1)[0]
        echo(f"  kernel alpha={alpha:g}: fitted slope on m in [{mm[0]}, {steps - 1}] = {slope:.4f} "
             f"(alpha-1 = {alpha - 1:.4f})")
    return save(fig, out, "kernel_decay")


# -- from runs --------------------------------------------------------------------------------


def setting(record: dict) -> str:
    """``<dataset>_<backbone>`` of a run record (``metrics.json`` or ``robustness.json``): runs that one figure
    compares across neurons."""
    config = record.get("config") or {}
    return "_".join((config.get(group) or {}).get("name", "unknown") for group in ("dataset", "backbone"))


def neuron_label(record: dict) -> str:
    """The display name of a run's neuron (its config's ``neuron.name``)."""
    name = ((record.get("config") or {}).get("neuron") or {}).get("name", "unknown")
    return NEURON_LABELS.get(name, name)


def _by_label(records: Iterable[dict]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        groups[neuron_label(record)].append(record)
    return dict(groups)


def _legend(label: str, runs: list) -> str:
    return label if len(runs) == 1 else f"{label} (mean of {len(runs)})"


def firing_rate_figure(runs: list[dict], out: str | Path, name: str = "firing_rates") -> list[Path]:
    """Firing rate of every spiking layer, one panel per setting (dataset + backbone), one bar per neuron
    (mean over that neuron's runs, e.g. seeds). ``runs``: ``metrics.json`` records with ``firing_rates``
    (``{module name: spikes / elements}``). Nothing is written (``[]``) when no run has firing rates."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for run in runs:
        if run.get("firing_rates"):
            groups[setting(run)].append(run)
    if not groups:
        return []
    fig = Figure(figsize=(11, 3.2 * len(groups)))
    axes = np.atleast_1d(fig.subplots(len(groups), 1, squeeze=False)[:, 0])
    for ax, (key, members) in zip(axes, sorted(groups.items())):
        layers = list(dict.fromkeys(layer for run in members for layer in run["firing_rates"]))
        neurons = sorted(_by_label(members).items())
        width = 0.8 / len(neurons)
        for i, (label, group) in enumerate(neurons):
            rates = [np.mean([r["firing_rates"][layer] for r in group if layer in r["firing_rates"]] or [np.nan])
                     for layer in layers]
            ax.bar(np.arange(len(layers)) + (i - (len(neurons) - 1) / 2) * width, rates, width,
                   label=_legend(label, group))
        ax.set_xticks(np.arange(len(layers)), layers, rotation=30, ha="right", fontsize=8)
        ax.set(ylabel="firing rate", title=f"{key}: firing rate per layer (test split, best checkpoint)")
        ax.legend(fontsize=8, frameon=False)
        ax.grid(alpha=0.3, axis="y", lw=0.5)
    fig.tight_layout()
    return save(fig, out, name)


def _corruptions(records: list[dict]) -> list[str]:
    return list(dict.fromkeys(name for r in records for name in r.get("corruptions", {})))


def robustness_curves(records: list[dict], out: str | Path, name: str = "robustness_curves") -> list[Path]:
    """Metric (in %) vs corruption level, one panel per corruption, one line per neuron (mean over its runs at
    each level); the clean metric is drawn at level 0. ``records``: ``robustness.json`` contents."""
    names = _corruptions(records)
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    fig = Figure(figsize=(4.2 * cols, 3.4 * rows))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    groups = sorted(_by_label(records).items())
    metric = records[0].get("metric", "acc")
    for ax, corruption in zip(axes, names):
        for label, group in groups:
            points: dict[float, list[float]] = defaultdict(list)
            for r in group:
                entry = r.get("corruptions", {}).get(corruption)
                if entry:
                    points[0.0].append(r["clean"])
                    for level, value in zip(entry["levels"], entry[r["metric"]]):
                        points[float(level)].append(value)
            if points:
                levels = sorted(points)
                ax.plot(levels, [100 * np.mean(points[v]) for v in levels], "o-", ms=4, label=_legend(label, group))
        ax.set(xlabel="level (0 = clean)", ylabel=f"test {metric} (%)",
               title=CORRUPTION_LABELS.get(corruption, corruption))
        ax.grid(alpha=0.3, lw=0.5)
        ax.legend(fontsize=7, frameon=False)
    for ax in axes[len(names):]:
        ax.set_visible(False)
    fig.tight_layout()
    return save(fig, out, name)


def robustness_radar(records: list[dict], out: str | Path, name: str = "robustness_radar") -> list[Path]:
    """Radar chart of the paper's robustness scores, one axis per corruption, one polygon per neuron (mean score
    over its runs; a missing score leaves a gap). Needs at least three corruptions (``[]`` otherwise)."""
    names = _corruptions(records)
    if len(names) < 3:
        return []
    angles = np.linspace(0.0, 2 * np.pi, len(names), endpoint=False)
    fig = Figure(figsize=(5.5, 5.5))
    ax = fig.add_subplot(projection="polar")
    for label, group in sorted(_by_label(records).items()):
        scores = []
        for corruption in names:
            values = [s for r in group if (s := r.get("corruptions", {}).get(corruption, {}).get("score")) is not None]
            scores.append(np.mean(values) if values else np.nan)
        closed = np.append(angles, angles[0])
        ax.plot(closed, np.append(scores, scores[0]), "o-", ms=3, label=_legend(label, group))
        ax.fill(closed, np.append(scores, scores[0]), alpha=0.08)
    ax.set_xticks(angles, [CORRUPTION_LABELS.get(n, n) for n in names], fontsize=8)
    ax.tick_params(axis="x", pad=10)
    ax.tick_params(axis="y", labelsize=7)
    ax.set_title("robustness score (100 x mean corrupted / clean)", fontsize=9)
    ax.legend(fontsize=7, frameon=False, loc="upper right", bbox_to_anchor=(1.3, 1.12))
    return save(fig, out, name)


def robustness_figures(records: list[dict], out: str | Path, prefix: str = "robustness",
                       echo: Callable = print) -> list[Path]:
    """Curves (``<prefix>_curves``) and radar (``<prefix>_radar``, when three or more corruptions) of ``records``.
    Without a radar, an older ``<prefix>_radar`` file in ``out`` is removed, so the figures beside a
    ``robustness.json`` always show that study."""
    if not records:
        return []
    paths = robustness_curves(records, out, f"{prefix}_curves")
    radar = robustness_radar(records, out, f"{prefix}_radar")
    if not radar:
        echo(f"{prefix}: fewer than three corruptions, no radar chart")
        for ext in ("png", "pdf"):
            (Path(out) / f"{prefix}_radar.{ext}").unlink(missing_ok=True)
    return paths + radar


def _variant_labels(table_id: str) -> dict[str, str]:
    """``{neuron_variant: row label}`` of a table of ``paper_tables.yaml``, so figure and table name rows alike."""
    spec = next(t for t in load_spec() if t["id"] == table_id)
    return {row["match"]["neuron_variant"]: row["label"] for row in spec["rows"]}


def memory_horizon_figure(runs: list[dict], out: str | Path, name: str = "memory_horizon") -> list[Path]:
    """Delayed cue: test accuracy (%) against the delay (log axis), one line per neuron variant (mean and std over its
    seeds, n in the legend), chance (100 / num_cues) dashed; second panel: seconds of training steps per epoch against
    the delay. ``runs``: complete ``metrics.json`` records; those of the ``memory_horizon`` experiment (or its smoke)
    with a ``neuron_variant`` are used. Nothing is written (``[]``) without such runs."""
    labels = _variant_labels("memory_horizon")
    groups: dict[str, dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    chance = set()
    for run in runs:
        variant = (run.get("choices") or {}).get("neuron_variant")
        if experiment_of(run) != "memory_horizon" or variant is None:
            continue
        dataset = run["config"]["dataset"]
        groups[variant][int(dataset["delay"])].append(run)
        chance.add(100.0 / int(dataset["num_cues"]))
    if not groups:
        return []
    order = [v for v in labels if v in groups] + sorted(set(groups) - set(labels))
    fractional = [v for v in order if v.startswith("flif")]
    colors = dict(zip(fractional, _colors("plasma", len(fractional), stop=0.8)))
    colors |= dict(zip([v for v in order if v not in colors], _colors("winter", len(order) - len(fractional), 1.0)))
    fig = Figure(figsize=(14, 4.6))
    ax_acc, ax_time = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.6, 1]})
    for variant in order:
        delays = sorted(groups[variant])
        accs = [[100 * r["test_acc"] for r in groups[variant][d]] for d in delays]
        mean, std = np.array([np.mean(a) for a in accs]), np.array([np.std(a, ddof=1) if len(a) > 1 else 0 for a in accs])
        n = sorted({len(a) for a in accs})
        style = {"color": colors[variant], "ls": "-" if variant in fractional else "--", "marker": "o", "ms": 4}
        label = f"{labels.get(variant, variant)} (n={'/'.join(map(str, n))})"
        ax_acc.plot(delays, mean, label=label, **style)
        ax_acc.fill_between(delays, mean - std, mean + std, color=colors[variant], alpha=0.12, lw=0)
        times = [(d, np.mean([r["train_epoch_s"] for r in groups[variant][d]])) for d in delays
                 if all(r.get("train_epoch_s") for r in groups[variant][d])]
        if times:
            ax_time.plot(*zip(*times), **style)
    for level in sorted(chance):
        ax_acc.axhline(level, color="k", ls=":", lw=1.2)
        ax_acc.text(0.01, level + 1, f"chance {level:.0f} %", transform=ax_acc.get_yaxis_transform(), fontsize=8)
    ax_acc.set(xlabel="delay between cue and recall (steps)", ylabel="test accuracy (%)", ylim=(0, 102),
               title="delayed cue: accuracy vs delay (mean ± std over seeds)")
    ax_acc.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside: lines fill the panel
    ax_time.set(yscale="log", xlabel="delay (steps)", ylabel="train steps, s / epoch",
                title="training time per epoch (this run's hardware)")
    for ax in (ax_acc, ax_time):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.grid(alpha=0.3, which="both", lw=0.5)
    fig.tight_layout()
    return save(fig, out, name)


def _test_percent(run: dict) -> float:
    return 100.0 * run[f"test_{run.get('metric', 'acc')}"]


def _comparable(run: dict, sweep_run: dict) -> bool:
    """A Table 2 run trained like the sweep's runs: same setting, recipe, epochs and Poisson steps."""
    def key(r):
        config = r.get("config") or {}
        return (setting(r), recipe_of(r), (config.get("trainer") or {}).get("max_epochs"),
                (config.get("dataset") or {}).get("T"))
    return key(run) == key(sweep_run)


def alpha_curve_figure(runs: list[dict], out: str | Path, experiment: str = "ablation_alpha_node",
                       reference: str = "table2_node_classification") -> list[Path]:
    """Test accuracy (%) against f-LIF's alpha, one figure per setting (``alpha_<dataset>_<backbone>``): each run of
    the sweep ``experiment`` (fixed alpha, one recipe at a time: the matched one) as a dot, mean and std over seeds
    as a line with error bars; the other neurons' runs of ``reference`` trained the same way (setting, recipe,
    epochs, T) as mean +- std bands; the paper's Table 2 values for that setting (``paper_tables.yaml``) as dashed
    lines, f-SNN's at its tab:alpha_gnn alpha as a star. Nothing is written without a sweep of three alphas or more."""
    sweep = [r for r in runs if experiment_of(r) == experiment and recipe_of(r) == "matched"
             and ((r.get("config") or {}).get("neuron") or {}).get("name") == "flif"
             and not r["config"]["neuron"].get("learn_alpha")]
    groups: dict[str, list[dict]] = defaultdict(list)
    for run in sweep:
        groups[setting(run)].append(run)
    paths: list[Path] = []
    specs = {spec["id"]: spec for spec in load_spec()}
    for key, members in sorted(groups.items()):
        by_alpha: dict[float, list[float]] = defaultdict(list)
        for run in members:
            by_alpha[float(run["config"]["neuron"]["alpha"])].append(_test_percent(run))
        if len(by_alpha) < 3:
            continue
        dataset, backbone = members[0]["config"]["dataset"]["name"], members[0]["config"]["backbone"]["name"]
        alphas = sorted(by_alpha)
        fig = Figure(figsize=(10, 4.6))
        ax = fig.subplots()
        for alpha in alphas:
            ax.scatter([alpha] * len(by_alpha[alpha]), by_alpha[alpha], s=12, color="0.6", zorder=2)
        means = [np.mean(by_alpha[a]) for a in alphas]
        stds = [np.std(by_alpha[a], ddof=1) if len(by_alpha[a]) > 1 else 0.0 for a in alphas]
        seeds = sorted({len(v) for v in by_alpha.values()})
        ax.errorbar(alphas, means, yerr=stds, color="C3", marker="o", capsize=3, zorder=3,
                    label=f"f-LIF, fsnn (mean ± std, n={'/'.join(map(str, seeds))} per alpha)")
        others = [r for r in runs if experiment_of(r) == reference and _comparable(r, members[0])
                  and r["config"]["neuron"]["name"] != "flif"]
        for i, (label, group) in enumerate(sorted(_by_label(others).items())):
            values = [_test_percent(r) for r in group]
            mean, std = np.mean(values), (np.std(values, ddof=1) if len(values) > 1 else 0.0)
            color = f"C{i}"
            # equivalent neurons (SpikingJelly's and snnTorch's LIF) land on one line: dash each differently
            style = [dict(ls="-", lw=2.6), dict(ls=(0, (6, 3)), lw=1.4), dict(ls=(0, (1.5, 1.5)), lw=1.4)][i % 3]
            ax.axhline(mean, color=color, **style, label=f"{label}, fsnn (n={len(values)})")
            ax.axhspan(mean - std, mean + std, color=color, alpha=0.12, lw=0)
        table = build_table(specs["node_classification"], [])
        column = next((i for i, c in enumerate(specs["node_classification"]["columns"])
                       if (c.get("match") or {}).get("dataset") == dataset), None)
        paper_alpha = None
        for row in specs["alpha_gnn"]["rows"]:
            if row["match"].get("backbone") == backbone:
                paper_alpha = row["paper"].get(dataset)
        for row_spec, row in zip(specs["node_classification"]["rows"], table["rows"]):
            cell = row["cells"][column] if column is not None else None
            if row_spec["match"].get("backbone") != backbone or cell is None or cell["paper_mean"] is None:
                continue
            neuron = row_spec["match"]["neuron"]
            text = f"paper: {row['label']} {cell['paper_mean']:.2f}"
            if neuron == "flif" and paper_alpha is not None:
                ax.errorbar([paper_alpha], [cell["paper_mean"]], yerr=[cell["paper_std"] or 0], color="k",
                            marker="*", markersize=11, capsize=3, ls="none", zorder=4, label=text)
            else:
                ax.axhline(cell["paper_mean"], color="k", ls=(0, (4, 3)) if neuron == "sj_lif" else ":", lw=1,
                           label=text)
        epochs = members[0]["config"]["trainer"]["max_epochs"]
        ax.set(xlabel="alpha (f-LIF order; 1 = LIF)", ylabel="test accuracy (%)", xticks=alphas,
               title=f"{dataset} / {backbone}: accuracy against alpha ({epochs} epochs, best validation checkpoint)")
        ax.grid(alpha=0.3, lw=0.5)
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0), handlelength=3.5)  # no dot hidden
        fig.tight_layout()
        paths += save(fig, out, f"alpha_{dataset}_{backbone}")
    return paths


def run_figures(results_dir: str | Path, out: str | Path, echo: Callable = print) -> list[Path]:
    """The figures from the complete runs under ``results_dir`` (:func:`fsnn.tables.scan_runs`): firing rates
    (``metrics.json``), per setting, robustness curves and radar (``robustness.json``), and the memory horizon. Says
    so and skips a figure that has no data."""
    results_dir = Path(results_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # corrupt files are listed below instead
        found = scan_runs(results_dir)
    for path, reason in found.corrupt:
        echo(f"  corrupt, skipped: {path} ({reason})")
    # an ablation varies the neuron itself (alpha, memory): its runs would blur the neurons' bars
    paths = firing_rate_figure([r for r in found.complete if not experiment_of(r).startswith("ablation_")], out)
    if not paths:
        echo(f"no complete run with firing_rates under {results_dir}: firing-rate figure skipped")
    alpha = alpha_curve_figure(found.complete, out)
    if not alpha:
        echo(f"no alpha sweep (experiment=ablation_alpha_node) under {results_dir}: alpha curve skipped")
    paths += alpha
    records = [run["robustness"] for run in found.complete if "robustness" in run]
    if not records:
        echo(f"no robustness.json under {results_dir} (run evaluate.py run_dir=<run> robustness=events): "
             "robustness figures skipped")
    groups: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        groups[setting(record)].append(record)
    for key, group in sorted(groups.items()):
        paths += robustness_figures(group, out, f"robustness_{key}", echo)
    horizon = memory_horizon_figure(found.complete, out)
    if not horizon:
        echo(f"no memory_horizon runs under {results_dir} (python train.py experiment=memory_horizon): "
             "memory-horizon figure skipped")
    return paths + horizon
