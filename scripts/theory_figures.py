#!/usr/bin/env python
"""Theory figures of the f-SNN paper, recomputed from fsnn.

(a) ``mittag_leffler_relaxation``: E_alpha(-t^alpha) for alpha in {0.2, ..., 1.0} against the
    exponential e^{-t}, with the subthreshold f-LIF simulated by fsnn (markers) on top; linear
    and log-log panels (paper Fig. 3, Proposition 1). With tau = 1 and a constant input I = 1
    from U(0) = 0 the f-LIF potential is U(t) = 1 - E_alpha(-t^alpha), so 1 - U is plotted.
(b) ``kernel_decay``: the memory kernel b_m (the paper's c_m up to the constant 1/tau^alpha)
    from ``fsnn.history.history_kernel`` on log-log axes for several alpha, with the asymptote
    m^(alpha-1)/Gamma(alpha) and the exponential kernel (1 - 1/tau)^m of the integer-order LIF
    (paper Fig. 7); second panel: local log-log slope, which tends to alpha - 1.

Usage: python scripts/theory_figures.py [--out results/figures] [--dt 0.01] [--t-max 100]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
import numpy as np  # noqa: E402
import pymittagleffler  # noqa: E402
import torch  # noqa: E402

from fsnn import FractionalLIF  # noqa: E402
from fsnn.history import history_kernel  # noqa: E402

ALPHAS = (0.2, 0.4, 0.6, 0.8, 1.0)


def mittag_leffler(z: np.ndarray, alpha: float) -> np.ndarray:
    return np.asarray(pymittagleffler.mittag_leffler(np.asarray(z, dtype=np.float64), alpha, 1.0)).real


def simulate_relaxation(alpha: float, dt: float, t_max: float, engine: str) -> tuple[np.ndarray, np.ndarray]:
    """1 - U(t) of a subthreshold f-LIF (tau = 1) charged by a constant unit input."""
    T = int(round(t_max / dt))
    x = torch.ones(T, 1, 1, dtype=torch.float64)
    neuron = FractionalLIF(alpha=alpha, tau=1.0, threshold=1e9, dt=dt, method="pred", engine=engine)
    with torch.no_grad():
        s, v = neuron(x, return_state=True)
    assert int(s.sum()) == 0
    t = (np.arange(T) + 1.0) * dt
    return t, 1.0 - v.reshape(-1).numpy()


def save(fig, out: Path, name: str) -> list[Path]:
    paths = []
    for ext in ("png", "pdf"):
        p = out / f"{name}.{ext}"
        fig.savefig(p, dpi=160, bbox_inches="tight")
        paths.append(p)
    plt.close(fig)
    return paths


def figure_relaxation(out: Path, dt: float, t_max: float, t_lin: float, engine: str) -> list[Path]:
    colors = plt.cm.viridis(np.linspace(0.0, 0.85, len(ALPHAS)))
    fig, (ax_lin, ax_log) = plt.subplots(1, 2, figsize=(11, 4.2))
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
        max_err[alpha] = (float(err.max()), float(err[t_sim >= 1.0 - 1e-9].max()))
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
        print(f"  relaxation alpha={alpha:g}: max |fsnn - E_alpha| over (0, {t_max:g}] = {e_all:.2e}, "
              f"over [1, {t_max:g}] = {e_away:.2e}")
    return save(fig, out, "mittag_leffler_relaxation")


def figure_kernel(out: Path, steps: int, tau_lif: float) -> list[Path]:
    colors = plt.cm.plasma(np.linspace(0.0, 0.8, len(ALPHAS)))
    m = np.arange(steps)
    fig, (ax_k, ax_s) = plt.subplots(1, 2, figsize=(11, 4.2))
    for alpha, c in zip(ALPHAS, colors):
        b = history_kernel("pred", alpha, steps, dt=1.0, dtype=torch.float64).numpy()
        ax_k.loglog(m[1:] , b[1:], color=c, lw=1.8, label=rf"$\alpha={alpha:g}$")
        if alpha < 1.0:
            ax_k.loglog(m[1:], m[1:] ** (alpha - 1.0) / math.gamma(alpha), ":", color=c, lw=1.0)
            for method, ls in (("pred", "-"), ("gl", "--")):
                bm = b if method == "pred" else history_kernel(method, alpha, steps, dt=1.0,
                                                               dtype=torch.float64).numpy()
                lm, lb = np.log(m[1:]), np.log(bm[1:])
                local = np.diff(lb) / np.diff(lm)
                ax_s.semilogx(np.sqrt(m[1:-1] * m[2:]), local, ls, color=c, lw=1.5)
                ax_s.axhline(alpha - 1.0, color=c, lw=0.6, alpha=0.6)
    beta = 1.0 - 1.0 / tau_lif
    expo = beta ** m[1:].astype(float)
    keep = expo > 1e-8
    ax_k.loglog(m[1:][keep], expo[keep], "k--", lw=1.5, label=rf"LIF $(1-1/\tau)^m$, $\tau={tau_lif:g}$")
    ax_k.set(xlabel="$m$ (steps into the past)", ylabel="$b_m$", ylim=(1e-8, 2),
             title=r"memory kernel $b_m=[(m+1)^\alpha-m^\alpha]/\Gamma(\alpha+1)$ (dotted: $m^{\alpha-1}/\Gamma(\alpha)$)")
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
        mm = np.unique(np.geomspace(100, steps - 1, 100).astype(int))
        slope = np.polyfit(np.log(mm), np.log(b[mm]), 1)[0]
        print(f"  kernel alpha={alpha:g}: fitted slope on m in [100, {steps - 1}] = {slope:.4f} (alpha-1 = {alpha - 1:.4f})")
    return save(fig, out, "kernel_decay")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("results/figures"))
    ap.add_argument("--dt", type=float, default=0.01, help="step of the simulated f-LIF markers")
    ap.add_argument("--t-max", type=float, default=100.0, help="end of the log-log relaxation panel")
    ap.add_argument("--t-lin", type=float, default=5.0, help="end of the linear relaxation panel")
    ap.add_argument("--engine", default="direct", choices=["direct", "soe", "auto"])
    ap.add_argument("--kernel-steps", type=int, default=10001)
    ap.add_argument("--tau-lif", type=float, default=2.0, help="tau of the integer-order LIF reference kernel")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    paths = figure_relaxation(args.out, args.dt, args.t_max, args.t_lin, args.engine)
    paths += figure_kernel(args.out, args.kernel_steps, args.tau_lif)
    for p in paths:
        print(f"wrote {p}")


if __name__ == "__main__":
    main()
