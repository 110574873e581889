r"""Discrete f-IF / f-LIF dynamics: the equations, as pure per-step functions.

Notation: input $X_k$ ($k = 0, \dots, T-1$, step $dt$), threshold $\vartheta$, leak $L$ (1 for f-LIF, 0 for
f-IF), resting potential $v_{\text{rest}}$ (`v_reset` for a hard reset, 0 for a soft one), $U_{\text{init}}$
(`v_reset` for hard, 0 for soft), history kernel $K_m$ of :mod:`fsnn.neurons.memory`, Heaviside step $\Theta$.

**fsnn convention (default).** The Caputo equation $\tau\, D^{\alpha} U = L\,(v_{\text{rest}} - U) + X$ is
integrated as a convolution of currents (equation (1) of :mod:`fsnn.neurons.memory`), with $V_{-1} = U_{\text{init}}$:

$$
\begin{aligned}
f_k &= \bigl(X_k + L\,(v_{\text{rest}} - V_{k-1})\bigr) / \tau && \text{input current} \\
H_k &= U_{\text{init}} + \textstyle\sum_{j<k} K_{k-j}\, g_j + K_0 f_k && \text{charge (membrane before the spike)} \\
S_k &= \Theta(H_k - \vartheta) && \text{fire (at equality too)} \\
V_k &= H_k - \vartheta S_k && \text{soft reset} \\
V_k &= H_k - S_k\,(H_k - v_{\text{reset}}) && \text{hard reset} \\
g_k &= f_k + (V_k - H_k) / K_0 && \text{current entering the history}
\end{aligned}
$$

The reset is a current $(V_k - H_k)/K_0$ inside the fractional history: the drop at the spike is exactly
$\vartheta$ (or down to $v_{\text{reset}}$) and later steps remember it with the same power-law kernel. Read
literally, the paper's f-IF charge $U_k = U_0 + \sum_m c_m X_{k-m}$ sums inputs only and would never see a reset.
$V_k = U_{\text{init}} + \sum_{j \le k} K_{k-j}\, g_j$ holds identically. At $\alpha = 1$, $K_m = dt$; with
$dt = 1$ this is SpikingJelly's `LIFNode(decay_input=True)`:
$H_k = V_{k-1} + \bigl(X_k - (V_{k-1} - v_{\text{reset}})\bigr) / \tau$ (`IFNode`: $H_k = V_{k-1} + X_k$ at
$\tau = 1$). The paper's $c_m$ carries $\tau^{\alpha}$ where this module divides by $\tau$ (so that $\alpha = 1$ is
the first-order neuron for every $\tau$).

Engines store $\gamma_k = K_0 g_k$ and use $\kappa_m = K_m / K_0$; with the history potential
$Y_k = U_{\text{init}} + \sum_{j<k} \kappa_{k-j}\, \gamma_j$ one step is $H = Y + K_0 f$, $V = \text{reset}(H)$,
$\gamma = V - Y$.

**Backward** (reverse time). With $\bar G_k = \sum_{k'>k} \kappa_{k'-k}\, \bar H_{k'}$ (the history adjoint) and
$U_k = \bar H_k + \bar G_k$ (so $\partial \mathcal{L} / \partial X_k = K_0 U_k / \tau$), where
$s_k = \Theta'(H_k - \vartheta)$ is the surrogate derivative:

$$
\begin{aligned}
U_k &= d_k + c_k \bigl(\bar G_k - (L K_0 / \tau)\, U_{k+1}\bigr), \qquad \bar H_k = U_k - \bar G_k \\
c_k &= 1 - \vartheta s_k \;\;\text{(soft; 1 with detach\_reset)}, \qquad
c_k = 1 - S_k - s_k\,(H_k - v_{\text{reset}}) \;\;\text{(hard; } 1 - S_k \text{ with detach\_reset)} \\
d_k &= s_k\, \partial \mathcal{L} / \partial S_k + c_k\, \partial \mathcal{L} / \partial V_k
\end{aligned}
$$

**spikeDE convention** (`convention="spikede"`, the official toolbox's numerics): the spike is decided on a one-step
Euler look-ahead and the reset is a detached current of size $\vartheta / \tau$ ($\operatorname{sg}$: stop-gradient;
for IF drop the $-v_k$ terms):

$$
u_k = v_k + (I_k - v_k)/\tau, \qquad s_k = \Theta(u_k - \vartheta), \qquad
f_k = (I_k - v_k)/\tau - \vartheta \operatorname{sg}(s_k)/\tau, \qquad
v_{k+1} = \sum_{j \le k} K_{k-j}\, f_j, \quad v_0 = 0,
$$

which for `pred` is $v_{k+1} = \frac{dt^{\alpha}}{\Gamma(\alpha+1)} \sum_j \bigl[(k+1-j)^{\alpha} - (k-j)^{\alpha}\bigr]
f_j$ and for `gl` equals $v_{k+1} = dt^{\alpha} f_k - \sum_{m=1}^{k+1} w_m\, v_{k+1-m}$.
"""

from __future__ import annotations

import torch

from fsnn.neurons.surrogate import spike


class ChargeFireReset:
    """One fsnn-convention step: ``H = h_pre + near - c_leak V_prev``, fire, reset, current."""

    def __init__(self, leak: bool, reset: str, threshold: float, v_reset: float, c_leak: float):
        self.leak, self.hard = leak, reset == "hard"
        self.threshold, self.v_reset, self.c_leak = threshold, v_reset, c_leak
        self._v_reset_t: torch.Tensor | None = None
        self._spike: torch.Tensor | None = None  # the soft reset's 0/1 spike row, reused at every step

    def __call__(self, h_pre, y_far, near, v_prev, h_out, v_out, gamma_out):
        if near is None:
            h_out.copy_(h_pre)
        else:
            torch.add(h_pre, near, out=h_out)
        if self.leak:
            h_out.sub_(v_prev, alpha=self.c_leak)
        if self.hard:
            if self._v_reset_t is None:
                self._v_reset_t = h_out.new_tensor(self.v_reset)
            torch.where(h_out >= self.threshold, self._v_reset_t, h_out, out=v_out)
        else:
            if self._spike is None:
                self._spike = torch.empty_like(h_out)
            torch.sub(h_out, torch.ge(h_out, self.threshold, out=self._spike), alpha=self.threshold, out=v_out)
        torch.sub(v_out, y_far, out=gamma_out)
        if near is not None:
            gamma_out.sub_(near)
        return v_out


def reset_value(h, spikes, threshold: float, reset: str, v_reset: float):
    """``V = reset(H)`` for a whole sequence (spikes as 0/1 floats)."""
    if reset == "hard":
        return torch.where(spikes.bool(), v_reset, h)
    return h - threshold * spikes


def reset_adjoint_coefficients(h, sg, grad_spikes, grad_v, *, threshold, reset, v_reset, detach_reset):
    """``(c, d)`` of the backward recursion for all steps at once (``sg`` is consumed)."""
    drive = sg * grad_spikes
    if reset == "hard":
        coef = (h < threshold).to(h.dtype)
        if not detach_reset:
            coef.sub_(sg * (h - v_reset))
    elif detach_reset:
        coef = torch.ones_like(h)
    else:
        coef = sg.mul_(-threshold).add_(1.0)
    if grad_v is not None:
        drive.addcmul_(coef, grad_v)
    return coef, drive


def adjoint_step(gbar, u_next, c_leak: float, u_out, coef_to_hbar):
    """In place: ``U_k = d_k + c_k (Gbar - c_leak U_{k+1})``, then the ``c_k`` slot becomes ``Hbar_k``."""
    carry = gbar if u_next is None else torch.add(gbar, u_next, alpha=-c_leak)
    u_out.addcmul_(coef_to_hbar, carry)
    torch.sub(u_out, gbar, out=coef_to_hbar)


def threshold_grad(h, spikes, sg, v_bar, grad_spikes, threshold: float, cfg) -> torch.Tensor:
    """``dL/dtheta`` from the spike condition and (soft reset) the size of the drop."""
    if cfg.reset == "hard":
        spike_bar = -(h - cfg.v_reset) * v_bar
    else:
        spike_bar = -threshold * v_bar
    total = grad_spikes if cfg.detach_reset else grad_spikes + spike_bar
    grad = -(sg * total).sum()
    if cfg.reset == "soft":
        grad = grad - (spikes * v_bar).sum()
    return grad


def spikede_sequence(x, kernel, *, tau, threshold, leak: bool, surrogate: str, scale: float, past=None, v=None):
    """The official toolbox's recursion (module docstring), differentiated by autograd: ``(spikes, v, currents)``.

    ``past [L, N]``: currents of earlier steps (oldest first) and ``v [N]`` the membrane after them, to continue a
    run (default: none, ``v = 0``); ``kernel`` needs lags up to ``L + T - 1``. ``currents`` are ``past`` followed
    by the new ones."""
    T = x.shape[0]
    if v is None:
        v = torch.zeros_like(x[0])
    currents = [] if past is None else list(past.unbind(0))
    spikes, states = [], []
    for k in range(T):
        drive = (x[k] - v) / tau if leak else x[k] / tau
        s = spike(v + drive - threshold, surrogate, scale)
        currents.append(drive - threshold * s.detach() / tau)
        history = torch.stack(currents[::-1])  # the newest current first
        v = torch.tensordot(kernel[: len(currents)], history, dims=1)
        spikes.append(s)
        states.append(v)
    return torch.stack(spikes), torch.stack(states), torch.stack(currents)


__all__ = [
    "ChargeFireReset",
    "adjoint_step",
    "reset_adjoint_coefficients",
    "reset_value",
    "spikede_sequence",
    "threshold_grad",
]
