r"""A fractional neuron continued from a state: the history the earlier steps leave, and one step by itself.

The state (:class:`fsnn.neurons.state.HistoryState`) holds the currents $\gamma_j$ that entered the history before
the chunk (row ``r`` of ``L`` rows, oldest first, is step $j = r - L$ relative to the chunk's first step) and, for the
``soe`` kind, the exponential modes of everything older. Step $k$ of the chunk then starts from the history
potential (:mod:`fsnn.neurons.dynamics`, with $\kappa_m = K_m / K_0$)

$$
P_k = \sum_{r < L} \kappa_{k + L - r}\, \gamma_r \;+\; \sum_i \frac{w_i}{K_0}\, \lambda_i^{k+1}\, M_i,
\qquad M_i = \sum_{j < -L} \lambda_i^{-j-1}\, \gamma_j ,
$$

the *prior* that the engine adds to its own within-chunk sums (:class:`fsnn.neurons.engines.FractionalNeuronFunction`),
so that the chunk's spikes are those of one whole-sequence call. The ``exact`` kind keeps every current ($M$ absent,
$L$ grows), the ``window`` kind the last ``memory`` (the kernel is cut at lag ``memory``), and the ``soe`` kind
``L = head`` currents, the lags below ``head`` exact and the older ones in the modes, $\kappa_m = \sum_i w_i
\lambda_i^m / K_0$ for $m \ge$ ``head``: a constant state. After a chunk of ``T`` steps the rows that leave the
window of ``L`` enter the modes:

$$
M_i' = \lambda_i^{T} M_i + \sum_{c < T} \lambda_i^{L + T - 1 - c}\, \rho_c ,
$$

with $\rho$ the ``[L + T]`` rows of the old window followed by the chunk's currents. Everything here is plain
torch, so gradients cross the chunk boundary through autograd.
"""

from __future__ import annotations

import torch

from fsnn.neurons.surrogate import spike


def toeplitz_rows(kappa: torch.Tensor, steps: int, rows: int) -> torch.Tensor:
    """``[steps, rows]`` with entry ``(k, r) = kappa[k + rows - r]``: the lags from ``rows`` past currents (oldest
    first) to the chunk's ``steps`` steps; ``kappa`` must hold lags up to ``steps + rows - 1``."""
    k = torch.arange(steps, device=kappa.device)
    r = torch.arange(rows, device=kappa.device)
    return kappa[k[:, None] + rows - r[None, :]]


def prior(history: torch.Tensor, lags: torch.Tensor, modes=None, mode_read=None) -> torch.Tensor:
    """``P [steps, N]`` of the module docstring: ``history [L, N]`` through ``lags [steps, L]``
    (:func:`toeplitz_rows` of the kernel), plus, for the ``soe`` kind, ``mode_read [steps, W] @ modes [W, N]``."""
    if lags.shape[0] == 1:  # one step: matrix-vector products, about twice as fast on CPU as a [1, K] @ [K, N]
        out = torch.mv(history.t(), lags[0]) if history.shape[0] else history.new_zeros(history.shape[1])
        if modes is not None:
            out = out.addmv_(modes.t(), mode_read[0]) if history.shape[0] else torch.mv(modes.t(), mode_read[0])
        return out[None]
    out = lags @ history if history.shape[0] else history.new_zeros(lags.shape[0], history.shape[1])
    if modes is not None:
        out = torch.addmm(out, mode_read, modes)
    return out


def mode_read(weights: torch.Tensor, decays: torch.Tensor, steps: int) -> torch.Tensor:
    """``[steps, W]``: ``weights_i decays_i^(k+1)``, how the modes reach step ``k`` of a chunk."""
    k = torch.arange(1, steps + 1, device=decays.device, dtype=decays.dtype)
    return weights[None, :] * decays[None, :] ** k[:, None]


def mode_shift(decays: torch.Tensor, total: int, kept: int) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``(carry [W, 1], spread [W, total - kept])``: the factors $\lambda_i^{T}$ and $\lambda_i^{L + T - 1 - c}$ of
    $M'$ (module docstring) when the first ``total - kept`` of ``total`` rows leave a window of ``kept`` rows."""
    leaving = total - kept
    ages = torch.arange(total - 1, kept - 1, -1, device=decays.device, dtype=decays.dtype)
    return decays[:, None] ** leaving, decays[:, None] ** ages[None, :]


def advance_modes(modes: torch.Tensor, shift: tuple[torch.Tensor, torch.Tensor], rows: torch.Tensor) -> torch.Tensor:
    r"""$M'$ of the module docstring: ``modes [W, N]`` after the leading rows of ``rows`` (the old window and the chunk,
    oldest first) leave the window, with ``shift`` the :func:`mode_shift` of those sizes."""
    carry, spread = shift
    return (modes * carry).addmm_(spread, rows[: spread.shape[1]])  # in place on the fresh product: one pass less


def charge_fire_reset(
    y, x, v_prev, *, drive, offset: float, c_leak, threshold, reset: str, v_reset: float, detach_reset: bool, surrogate
):
    r"""One step of the fsnn convention (:mod:`fsnn.neurons.dynamics`), differentiable by autograd:
    ``(S, V, gamma)`` from the history potential $Y$, the input $X$ and the last membrane $V_{k-1}$:

    $$
    H = Y + \frac{K_0}{\tau}\bigl(X + L\, v_{\text{rest}}\bigr) - L\,\frac{K_0}{\tau}\, V_{k-1}, \qquad
    S = \Theta(H - \vartheta), \qquad V = \operatorname{reset}(H), \qquad \gamma = V - Y
    $$

    with the surrogate gradient of $\Theta$ (``surrogate``: ``(name, scale)``), $\operatorname{sg}(S)$ in the reset
    with ``detach_reset``. ``drive`` is $K_0 / \tau$, ``offset`` $L (K_0/\tau) v_{\text{rest}}$, ``c_leak``
    $L K_0 / \tau$ (numbers or 0-d tensors).
    """
    h = y + drive * x
    if offset:
        h = h + offset
    if c_leak is not None:
        h = h - c_leak * v_prev
    s = spike(h - threshold, *surrogate)
    r = s.detach() if detach_reset else s
    v = h - r * (h - v_reset) if reset == "hard" else h - threshold * r
    return s, v, v - y


__all__ = ["advance_modes", "charge_fire_reset", "mode_read", "mode_shift", "prior", "toeplitz_rows"]
