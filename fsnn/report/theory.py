"""The paper's theory figures (no training): the Mittag-Leffler relaxation of the subthreshold f-LIF (paper
Fig. 3) and its power-law memory kernel (paper Fig. 7), from what fsnn computes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from fsnn.neurons.memory import history_kernel
from fsnn.report.style import add_caption, colormap_colors, legend_below, save, styled

ALPHAS = (0.2, 0.4, 0.6, 0.8, 1.0)


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


@styled
def relaxation_figure(
    out: str | Path,
    dt: float = 0.01,
    t_max: float = 100.0,
    t_lin: float = 5.0,
    engine: str = "direct",
    echo: Callable = print,
    captions: dict | None = None,
) -> list[Path]:
    """Paper Fig. 3: Mittag-Leffler relaxation vs exponential, exact curves and fsnn's simulated f-LIF."""
    colors = colormap_colors("viridis", len(ALPHAS))
    fig = Figure(figsize=(10, 4.2))
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
    ax_lin.set(
        xlabel="$t$",
        ylabel=r"$E_\alpha(-t^\alpha)$",
        xlim=(0, t_lin),
        ylim=(0, 1.02),
        title="Mittag-Leffler relaxation (linear axes)",
    )
    ax_log.set(xlabel="$t$", ylabel=r"$E_\alpha(-t^\alpha)$", ylim=(1e-4, 1.5), title="log-log axes")
    ax_lin.legend(frameon=False)
    ax_log.legend(
        handles=[
            Line2D([], [], color="k", lw=1.8, label="exact (Mittag-Leffler)"),
            Line2D([], [], color="k", marker="o", mfc="none", ls="none", label=f"fsnn f-LIF, $1-U$ (dt={dt:g})"),
            Line2D([], [], color="k", ls=":", lw=1.0, label=r"tail $t^{-\alpha}/\Gamma(1-\alpha)$"),
        ],
        frameon=False,
        loc="lower left",
    )
    for ax in (ax_lin, ax_log):
        ax.grid(alpha=0.3, which="both", lw=0.5)
    fig.tight_layout()
    for alpha, (e_all, e_away) in max_err.items():
        # the max over all t sits at the first step (t = dt): the t^alpha initial layer
        echo(
            f"  relaxation alpha={alpha:g}: max |fsnn - E_alpha| over (0, {t_max:g}] = {e_all:.2e}, "
            f"over [1, {t_max:g}] = {e_away:.2e}"
        )
    add_caption(
        captions,
        "mittag_leffler_relaxation",
        "Theory (paper Fig. 3): the subthreshold f-LIF relaxes as the Mittag-Leffler function E_alpha(-t^alpha), "
        "a power-law tail instead of the LIF's exponential (alpha = 1). Lines: exact; circles: fsnn's simulated "
        f"f-LIF (dt = {dt:g}).",
    )
    return save(fig, out, "mittag_leffler_relaxation")


@styled
def kernel_figure(
    out: str | Path, steps: int = 10001, tau_lif: float = 2.0, echo: Callable = print, captions: dict | None = None
) -> list[Path]:
    """Paper Fig. 7: power-law decay of the memory kernel ``b_m`` vs the exponential kernel of the LIF."""
    colors = colormap_colors("plasma", len(ALPHAS), stop=0.8)
    m = np.arange(steps)
    fig = Figure(figsize=(10, 4.2))
    ax_k, ax_s = fig.subplots(1, 2)
    for alpha, c in zip(ALPHAS, colors):
        b = history_kernel("pred", alpha, steps, dt=1.0, dtype=torch.float64).numpy()
        ax_k.loglog(m[1:], b[1:], color=c, lw=1.8, label=rf"$\alpha={alpha:g}$")
        if alpha < 1.0:
            ax_k.loglog(m[1:], m[1:] ** (alpha - 1.0) / math.gamma(alpha), ":", color=c, lw=1.0)
            for method, ls in (("pred", "-"), ("gl", "--")):
                bm = (
                    b if method == "pred" else history_kernel(method, alpha, steps, dt=1.0, dtype=torch.float64).numpy()
                )
                local = np.diff(np.log(bm[1:])) / np.diff(np.log(m[1:]))
                ax_s.semilogx(np.sqrt(m[1:-1] * m[2:]), local, ls, color=c, lw=1.5)
                ax_s.axhline(alpha - 1.0, color=c, lw=0.6, alpha=0.6)
    beta = 1.0 - 1.0 / tau_lif
    expo = beta ** m[1:].astype(float)
    keep = expo > 1e-8
    ax_k.loglog(m[1:][keep], expo[keep], "k--", lw=1.5)
    ax_k.set(
        xlabel="$m$ (steps into the past)",
        ylabel="$b_m$",
        ylim=(1e-8, 2),
        title=r"memory kernel $b_m=[(m+1)^\alpha-m^\alpha]/\Gamma(\alpha+1)$",
    )
    ax_s.set(
        xlabel="$m$",
        ylabel=r"local slope $d\log b_m / d\log m$",
        ylim=(-0.85, -0.1),
        title=r"local log-log slope $\to \alpha-1$",
    )
    for ax in (ax_k, ax_s):
        ax.grid(alpha=0.3, which="both", lw=0.5)
    # one legend for both panels, under them: the exponential kernel crosses every corner of the left panel
    handles = [
        Line2D([], [], color=c, lw=1.8, label=rf"$\alpha={a:g}$" + (" (LIF)" if a == 1.0 else ""))
        for a, c in zip(ALPHAS, colors)
    ]
    handles += [
        Line2D([], [], color="k", ls="--", lw=1.5, label=rf"LIF kernel $(1-1/\tau)^m$, $\tau={tau_lif:g}$"),
        Line2D([], [], color="k", ls=":", lw=1.0, label=r"asymptote $m^{\alpha-1}/\Gamma(\alpha)$"),
        Line2D([], [], color="gray", ls="-", label="slope, pred scheme"),
        Line2D([], [], color="gray", ls="--", label="slope, gl scheme"),
        Line2D([], [], color="gray", lw=0.6, label=r"$\alpha-1$"),
    ]
    legend_below(fig, handles, [h.get_label() for h in handles], ncol=5, axes_height=4.2)
    for alpha in ALPHAS[:-1]:
        b = history_kernel("pred", alpha, steps, dt=1.0, dtype=torch.float64).numpy()
        mm = np.unique(np.geomspace(min(100, steps // 2), steps - 1, 100).astype(int))
        slope = np.polyfit(np.log(mm), np.log(b[mm]), 1)[0]
        echo(
            f"  kernel alpha={alpha:g}: fitted slope on m in [{mm[0]}, {steps - 1}] = {slope:.4f} "
            f"(alpha-1 = {alpha - 1:.4f})"
        )
    add_caption(
        captions,
        "kernel_decay",
        "Theory (paper Fig. 7): f-LIF's memory kernel b_m decays as a power law m^(alpha-1) (the local slope tends "
        f"to alpha - 1), the LIF's as an exponential (tau = {tau_lif:g}); pred and gl are fsnn's two discretizations.",
    )
    return save(fig, out, "kernel_decay")
