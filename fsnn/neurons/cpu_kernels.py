r"""Compiled CPU kernels for the fsnn-convention direct engine: forward and the adjoint recursion.

The torch engines (:mod:`fsnn.neurons.engines`) run a Python loop with a few small torch ops per time step. On
the CPU, for the small batches of training (a few hundred neurons), each op costs its dispatch, not its arithmetic:
about 80 microseconds a step forward at ``T = 100``. Here one C++ loop (``cpu_kernels.cpp`` beside this file) walks
the whole sequence for a tile of neurons, summing every lag of the kernel exactly (the ``direct`` engine's
arithmetic, in the engines' normalisation ``kappa_m = K_m / K_0``)::

    Y_k = U_init + sum_{m=1}^{min(k, L-1)} kappa_m gamma_{k-m}
    H_k = Y_k + (K_0/tau) (X_k + L_leak v_rest - L_leak V_{k-1}),   S_k = [H_k >= theta],   V_k = reset(H_k)
    gamma_k = V_k - Y_k

and backward, in reverse time, ``Gbar_k = sum_m kappa_m Hbar_{k+m}``, ``U_k = d_k + c_k (Gbar_k - L_leak (K_0/tau)
U_{k+1})``, ``Hbar_k = U_k - Gbar_k`` (``c_k, d_k`` of :func:`fsnn.neurons.dynamics.reset_adjoint_coefficients`).
``L = T`` for the whole history, ``memory + 1`` for a short-memory window.

The work is ``O(T^2 N)`` (``O(T M N)`` with a window), so ``engine="auto"`` uses it on the CPU up to
:data:`AUTO_MAX_STEPS` steps and the torch SOE engine beyond. It is built with PyTorch's C++ extension tools
(``torch.utils.cpp_extension.load``: a C++ compiler and ninja) the first time a neuron needs it, about a minute,
and cached (:mod:`fsnn.compiled`). Where it cannot be built, ``auto`` falls back to the torch engines with one
warning; ``FSNN_CPU_KERNELS=0`` turns it off.
"""

from __future__ import annotations

from pathlib import Path

import torch

from fsnn.compiled import CompiledExtension

AUTO_MAX_STEPS = 256  # beyond it the O(T^2) sums cost more than the torch SOE engine's O(T) per-step loop
EXTENSION = CompiledExtension("fsnn_cpu_kernels", Path(__file__).with_name("cpu_kernels.cpp"))


def unavailable_reason() -> str | None:
    """Why the kernels cannot run here (``None`` if they can); builds them on the first call."""
    return EXTENSION.unavailable_reason()


def forward(
    x: torch.Tensor,
    kappa: torch.Tensor,
    *,
    drive: float,
    offset: float,
    c_leak: float,
    theta: float,
    hard: bool,
    v_reset: float,
    v_init: float,
    store_v: bool,
):
    """``(H, gamma, V)`` of ``x [T, N]`` (``V`` is ``[0, N]`` unless ``store_v``); ``kappa [L]``, ``kappa[0]``
    unused."""
    return EXTENSION.module().forward(
        x, kappa.contiguous(), drive, offset, c_leak, theta, hard, v_reset, v_init, store_v
    )


def backward(coef: torch.Tensor, drive: torch.Tensor, kappa: torch.Tensor, c_leak: float) -> None:
    """In place, reverse time: ``coef`` (``c_k``) becomes ``Hbar``, ``drive`` (``d_k``) becomes ``U``."""
    EXTENSION.module().backward(coef, drive, kappa.contiguous(), c_leak)
