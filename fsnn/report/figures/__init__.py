"""The paper's figures, recomputed from what fsnn computes (never from hand-entered numbers).

Theory (no training):

* :func:`~fsnn.report.theory.relaxation_figure` (paper Fig. 3, Proposition 1): ``E_alpha(-t^alpha)`` for alpha in
  {0.2, ..., 1.0} against the exponential ``e^{-t}``, with the subthreshold f-LIF simulated by fsnn on top
  (markers). With tau = 1 and a constant input I = 1 from U(0) = 0 the f-LIF potential is ``U(t) = 1 -
  E_alpha(-t^alpha)``, so ``1 - U`` is plotted; linear and log-log panels.
* :func:`~fsnn.report.theory.kernel_figure` (paper Fig. 7): the memory kernel ``b_m`` (the paper's ``c_m`` up to the
  constant ``1/tau^alpha``) from :func:`fsnn.neurons.memory.history_kernel` on log-log axes, with the asymptote
  ``m^(alpha-1)/Gamma(alpha)`` and the exponential kernel ``(1 - 1/tau)^m`` of the integer-order LIF; second panel:
  the local log-log slope, which tends to ``alpha - 1``.

From runs (:func:`run_figures`; only runs of the suite's experiments, see :func:`fsnn.report.tables.suite_runs`):

* :func:`~fsnn.report.figures.firing_rates.firing_rate_figure`: firing rate per layer, in the order the network
  applies its layers, one bar per neuron (mean ± std over its runs), from the ``firing_rates`` that ``train.py``
  stores in ``metrics.json``; only runs of the experiments that compare neurons (:func:`neuron_comparisons`).
* :func:`~fsnn.report.figures.robustness.robustness_figures` (paper Fig. ``fig:robust``): accuracy-vs-level curves
  per corruption and a radar chart of the robustness scores, from the ``robustness.json`` files written by
  ``evaluate.py robustness=...``.
* :func:`~fsnn.report.figures.robustness.graph_robustness_figure` (paper Figs. ``fig:robustness_feature_masking``,
  ``fig:robustness_edge_dropout``): the two graph studies across their datasets and both backbones, the paper's
  claim in the caption.
* :func:`~fsnn.report.figures.claims.claims_figure` (not in the paper): the paper's claimed gaps (f-LIF or f-IF over
  a baseline) against our differences with their 95 % Welch intervals, one row per claim, one panel per table
  (:func:`~fsnn.report.figures.claims.claim_sections`).
* :func:`~fsnn.report.figures.memory_horizon.memory_horizon_figure` (not in the paper): delayed-cue test accuracy
  against the delay, one line per neuron variant, chance marked, and the seconds per training epoch against the
  delay, from the ``memory_horizon`` runs; :func:`~fsnn.report.figures.memory_horizon.memory_horizon_long_figure` the
  same past 128 steps, feed-forward beside recurrent, from the ``memory_horizon_long`` runs.
* :func:`~fsnn.report.figures.alpha.alpha_curve_figure`: test accuracy against f-LIF's alpha from an alpha sweep
  (``ablation_alpha_node``), beside the other neurons' runs of Table 2 trained the same way, one panel per number of
  training epochs; the paper's Table 2 values only on a panel trained for the paper's epochs.

Every figure is written as PNG and PDF with fixed metadata (no creation date, no software version), so the same
runs give the same bytes. Text is at least 9 pt at the figure's own size. Fractional neurons (f-LIF, f-IF) are drawn
in warm colours, integer-order ones (the baselines and fsnn's alpha = 1 control) in cool colours, each with its own
marker. :func:`make_figures` draws them all and writes ``figures.json`` (each figure's name and caption, read by the
report page); a figure that is no longer drawn (its runs were removed) is deleted with it. Figures are built with
matplotlib's object API (``Figure``), not pyplot, so no GUI backend and no global figure state is involved.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from pathlib import Path
from typing import Callable

from fsnn.report.collect import dataset_backbone, experiment_of, scan_runs
from fsnn.report.figures.alpha import alpha_curve_figure
from fsnn.report.figures.claims import claim_sections, claims_figure
from fsnn.report.figures.firing_rates import firing_rate_figure
from fsnn.report.figures.memory_horizon import learned_tau_figure, memory_horizon_figure, memory_horizon_long_figure
from fsnn.report.figures.robustness import graph_robustness_figure, robustness_figures
from fsnn.report.outputs import output_folder
from fsnn.report.robustness_claims import GRAPH_STUDIES, graph_records
from fsnn.report.tables import has_paper_values, load_spec, remove_stale, suite_runs
from fsnn.report.theory import kernel_figure, relaxation_figure
from fsnn.runs.records import fitting_name

MANIFEST = "figures.json"


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
    horizon += memory_horizon_long_figure(runs, out, captions=captions)
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
