#!/usr/bin/env python
"""Every paper figure the suite can compute, as PNG and PDF (see :mod:`fsnn.figures`).

    python scripts/figures.py [--results results] [--out results/figures]    (paths relative to the current directory)

* ``mittag_leffler_relaxation``: Mittag-Leffler relaxation vs exponential with fsnn's simulated f-LIF (Fig. 3);
* ``kernel_decay``: power-law memory kernel c_m vs the LIF's exponential kernel (Fig. 7);
* ``firing_rates``: firing rate per layer, LIF vs f-LIF (and the baselines), from the ``metrics.json`` of the
  complete runs of the suite's experiments under ``--results``;
* ``alpha_<dataset>_<backbone>``: test accuracy against f-LIF's alpha (``experiment=ablation_alpha_node``);
* ``robustness_<dataset>_<backbone>_curves`` / ``_radar``: accuracy vs corruption level and the radar of
  robustness scores (Fig. ``fig:robust``), from the ``robustness.json`` that ``evaluate.py robustness=...`` wrote;
* ``memory_horizon``: delayed-cue accuracy against the delay (``experiment=memory_horizon``).

A figure without data (no runs yet) is reported and skipped, and its files from an earlier call are removed;
``<out>/figures.json`` lists what was drawn, with captions. Nothing is hand-entered.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fsnn.figures import make_figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("results"), help="results folder to scan for runs")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: <results>/figures)")
    parser.add_argument("--dt", type=float, default=0.01, help="step of the simulated f-LIF markers (Fig. 3)")
    parser.add_argument("--t-max", type=float, default=100.0, help="end of the log-log relaxation panel")
    parser.add_argument("--t-lin", type=float, default=5.0, help="end of the linear relaxation panel")
    parser.add_argument("--engine", default="direct", choices=["direct", "soe", "auto"], help="f-LIF engine")
    parser.add_argument("--kernel-steps", type=int, default=10001, help="kernel length m of Fig. 7")
    parser.add_argument("--tau-lif", type=float, default=2.0, help="tau of the integer-order LIF reference kernel")
    args = parser.parse_args(argv)
    out = args.out if args.out is not None else args.results / "figures"
    paths = make_figures(args.results, out, args.dt, args.t_max, args.t_lin, args.engine, args.kernel_steps,
                         args.tau_lif)
    for path in paths:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
