r"""History kernels of the fractional neuron and their sum-of-exponentials (SOE) approximation.

Every discretisation fsnn offers turns the Caputo equation $\tau\, D^{\alpha} U = F$ into a causal convolution of
the per-step currents $g_j$ with a kernel $K$:

$$
U_k = U_{\text{init}} + \sum_{j \le k} K_{k-j}\, g_j \tag{1}
$$

- `method="pred"`: fractional Adams–Bashforth predictor (the paper's Section 3.1, Diethelm et al.),
  $K_m = dt^{\alpha} \bigl[(m+1)^{\alpha} - m^{\alpha}\bigr] / \Gamma(\alpha+1)$.
- `method="gl"`: Grünwald–Letnikov on the state history, $\sum_m w_m U_{k-m} = dt^{\alpha} g_k$ with $w_0 = 1$,
  $w_m = w_{m-1}\bigl(1 - (1+\alpha)/m\bigr)$; inverting the generating function $(1-z)^{\alpha}$ gives
  $K_m = dt^{\alpha}\, \Gamma(m+\alpha) / \bigl(\Gamma(\alpha)\, \Gamma(m+1)\bigr)$.
- `method="l1"`: the L1 scheme $\frac{dt^{-\alpha}}{\Gamma(2-\alpha)} \sum_j a_j\, (U_{k-j} - U_{k-j-1}) = g_k$ with
  $a_j = (j+1)^{1-\alpha} - j^{1-\alpha}$; in generating functions
  $K(z) = dt^{\alpha}\, \Gamma(2-\alpha)\, \bigl[(1-z)\, A(z)\bigr]^{-1}$.

All three equal $dt$ for every $m$ at $\alpha = 1$ (explicit Euler) and decay like $m^{\alpha-1}$ (power-law
memory). Kernels are built with `torch.lgamma` in float64 so a learnable $\alpha$ receives its gradient through the
Gamma functions too.

**SOE engine.** `pred` and `gl` are completely monotone: each is a continuum of exponentials (the spectral
representation the paper's Theorem 3 proof uses for the f-IF impulse response):

$$
K_m = dt^{\alpha}\, \frac{\sin \pi\alpha}{\pi} \int_0^{\infty} \rho_{\alpha}(x)\, e^{-m x}\, dx, \qquad
\rho_{\text{pred}}(x) = x^{-\alpha-1}\,(1 - e^{-x}), \qquad \rho_{\text{gl}}(x) = e^{-\alpha x}\,(1 - e^{-x})^{-\alpha}
$$

The trapezoidal rule in $u = \log x$ converges exponentially; the nodes below $x_{\text{lo}}$ (where
$\rho \sim x^{-\alpha}$) are summed in closed form into one extra, slowest mode. The lags $m < \text{head}$ stay
exact. The node spacing is the coarsest one whose kernel error, checked against the exact kernel over the whole
horizon, is within the relative tolerance; the weights are analytic in $\alpha$ (differentiable), the decay rates
are constants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch

METHODS = ("pred", "gl", "l1")
SOE_METHODS = ("pred", "gl")


def _powers(base_count: int, exponent: torch.Tensor) -> torch.Tensor:
    """``[0^p, 1^p, ..., (n-1)^p]`` with ``0^p := 0`` and no NaN gradient at the zero entry."""
    j = torch.arange(1, base_count, dtype=torch.float64, device=exponent.device)
    return torch.cat([exponent.new_zeros(1), j.pow(exponent)])


def _as_alpha(alpha: torch.Tensor | float) -> torch.Tensor:
    if isinstance(alpha, torch.Tensor):
        return alpha.to(torch.float64).reshape(())
    return torch.tensor(float(alpha), dtype=torch.float64)


def history_kernel(
    method: str, alpha: torch.Tensor | float, steps: int, dt: float = 1.0, dtype=torch.float64
) -> torch.Tensor:
    r"""Kernel ``K_0 .. K_{steps-1}`` of equation (1) for ``method``; differentiable in ``alpha``.

    Args:
        method: the discretisation, ``"pred"``, ``"gl"`` or ``"l1"`` (module docstring); no default.
        alpha: the order, a number in $(0, 1]$ (a float, or a tensor that gradients flow to); no default.
        steps: how many lags, an integer $\ge 1$; no default.
        dt: the time step, a number $> 0$; default ``1.0`` (the kernel scales as $dt^{\alpha}$).
        dtype: the dtype of the result; default ``torch.float64`` (the kernel is computed in float64 anyway).
    """
    a = _as_alpha(alpha)
    m = torch.arange(steps, dtype=torch.float64, device=a.device)
    scale = torch.exp(a * math.log(dt))
    if method == "pred":
        k = torch.diff(_powers(steps + 1, a)) * torch.exp(-torch.lgamma(a + 1))
    elif method == "gl":
        k = torch.exp(torch.lgamma(m + a) - torch.lgamma(a) - torch.lgamma(m + 1))
    elif method == "l1":
        a_j = torch.diff(_powers(steps + 1, 1 - a))  # a_0 = 1 even at alpha = 1 (no 0^0 trap)
        e = torch.cat([a_j[:1], torch.diff(a_j)])  # coefficients of (1 - z) A(z)
        lag = m[:, None] - m[None, :]
        toeplitz = torch.where(lag >= 0, e[lag.clamp(min=0).long()], e.new_zeros(()))
        rhs = torch.zeros(steps, 1, dtype=torch.float64, device=a.device)
        rhs[0] = 1.0
        inv = torch.linalg.solve_triangular(toeplitz, rhs, upper=False).squeeze(1)
        k = inv * torch.exp(torch.lgamma(2 - a))
    else:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    return (scale * k).to(dtype)


@lru_cache(maxsize=256)
def stable_tau(method: str, alpha: float, dt: float = 1.0, memory: int | None = None) -> float:
    r"""The leaky neuron's discrete dynamics are stable only for ``tau`` above this bound (``> 0``).

    Without input or spikes the f-LIF membrane follows ``V_k = -c sum_{j<=k} kappa_{k-j} V_{j-1}`` with
    ``c = K_0 / tau`` and ``kappa_m = K_m / K_0`` (:mod:`fsnn.neurons.dynamics`; the spikeDE convention has the same
    characteristic equation), i.e. ``1 + c z kappa(z) = 0`` with ``kappa(z) = sum_m kappa_m z^m``. A root inside
    the unit circle grows like ``|z|^-k``: the potentials, then the gradients, overflow to inf and NaN. Roots first
    cross the circle where ``z kappa(z)`` is real and negative, so the bound is
    ``tau* = K_0 max{-z kappa(z) : |z| = 1, z kappa(z) < 0}``. The full-memory kernels are completely monotone,
    which puts that point at ``z = -1``: ``tau* = K_0 sum_m (-1)^m kappa_m`` (Abel-summed; ``dt / 2`` at
    ``alpha = 1``, explicit Euler's bound, and ``(dt / 2)^alpha`` for ``gl``). A ``memory`` window cuts the
    kernel at lag ``memory``, and the point is searched on the whole circle.
    """
    with torch.device("cpu"):  # a number, whatever default device is in force (a model built on "meta")
        if memory is None:
            # Euler's transform of the alternating series: binomial means of its partial sums converge geometrically
            # for a completely monotone kernel; 128 terms are far beyond float64's precision
            k = history_kernel(method, alpha, 128, dt)
            signs = torch.ones(128, dtype=torch.float64)
            signs[1::2] = -1
            sums = torch.cumsum(signs * k, 0)
            weights = torch.exp(
                torch.lgamma(torch.tensor(128.0, dtype=torch.float64))
                - torch.lgamma(torch.arange(1, 129, dtype=torch.float64))
                - torch.lgamma(torch.arange(128, 0, -1, dtype=torch.float64))
                - 127 * math.log(2)
            )
            return float((weights * sums).sum())
        k = history_kernel(method, alpha, memory + 1, dt)
        points = max(1 << 14, 16 * (memory + 1))
        w = torch.fft.fft(torch.cat([k.new_zeros(1), k]), n=points).conj()  # z K(z) at z = e^{i theta}
        w = torch.cat([w, w[:1]])
        cross = (w.imag[:-1] * w.imag[1:] <= 0) & (w.real[:-1] < 0)
        i = torch.nonzero(cross).flatten()
        share = w.imag[i] / (w.imag[i] - w.imag[i + 1]).where(w.imag[i] != w.imag[i + 1], torch.ones_like(w.imag[i]))
        reals = w.real[i] + share * (w.real[i + 1] - w.real[i])
        return float(-reals.min()) if len(reals) else 0.0


@lru_cache(maxsize=256)
def _fixed_kernel(method: str, alpha: float, steps: int, dt: float) -> torch.Tensor:
    with torch.device("cpu"):  # cached: never a tensor of the default device of the first caller
        return history_kernel(method, alpha, steps, dt)


def kernel_for(method: str, alpha: torch.Tensor, steps: int, dt: float, like: torch.Tensor):
    """``history_kernel`` in ``like``'s dtype/device; cached when ``alpha`` needs no gradient."""
    if alpha.requires_grad:
        k = history_kernel(method, alpha, steps, dt)
    else:
        k = _fixed_kernel(method, float(alpha), steps, dt)
    return k.to(dtype=like.dtype, device=like.device)


# ----------------------------------------------------------------------------------------------
# Sum of exponentials


def _sinc(z: torch.Tensor) -> torch.Tensor:
    return torch.sinc(z)  # sin(pi z) / (pi z), smooth through z = 0


def _z_over_expm1(z: torch.Tensor) -> torch.Tensor:
    safe = torch.where(z.abs() < 1e-8, torch.ones_like(z), z)
    return torch.where(z.abs() < 1e-8, 1 - z / 2, safe / torch.expm1(safe))


@dataclass(frozen=True)
class SOEBank:
    """Exponential modes approximating ``K_m`` for ``m >= head``: ``K_m ~ sum_i w_i(alpha) lam_i^m``."""

    method: str
    dt: float
    head: int
    step: float  # node spacing in log x
    nodes: tuple[float, ...]  # x_i of the regular nodes (empty at alpha = 1)
    tail_rate: float  # decay rate of the lumped slowest mode
    error: float  # verified max relative kernel error over lags [head, horizon)

    @property
    def size(self) -> int:
        return len(self.nodes) + 1

    def decays(self, like: torch.Tensor) -> torch.Tensor:
        x = torch.tensor((*self.nodes, self.tail_rate), dtype=torch.float64)
        return torch.exp(-x).to(dtype=like.dtype, device=like.device)

    def weights(self, alpha: torch.Tensor) -> torch.Tensor:
        """``w_i(alpha)`` in float64, differentiable in ``alpha``."""
        a = _as_alpha(alpha)
        p = 1 - a
        pref = torch.exp(a * math.log(self.dt))
        x = torch.tensor(self.nodes, dtype=torch.float64, device=a.device)
        if self.method == "pred":
            x_rho = x.pow(-a) * -torch.expm1(-x)
        else:
            x_rho = x * torch.exp(-a * x) * (-torch.expm1(-x)).pow(-a)
        # sin(pi alpha)/pi = (1-alpha) sinc(1-alpha): exactly 0 at alpha = 1
        regular = pref * p * _sinc(p) * self.step * x_rho
        x_lo = self.nodes[0] if self.nodes else 1.0
        tail = pref * _sinc(p) * x_lo**p * _z_over_expm1(p * self.step)
        return torch.cat([regular, tail.reshape(1)])

    def kernel(self, alpha: torch.Tensor, lags: torch.Tensor) -> torch.Tensor:
        w = self.weights(alpha)
        x = torch.tensor((*self.nodes, self.tail_rate), dtype=torch.float64, device=w.device)
        return torch.exp(-lags.to(torch.float64)[:, None] * x[None, :]) @ w


_SOE_STEPS = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.45, 0.4, 0.35, 0.3)


def _bank(method, alpha: float, horizon: int, dt: float, head: int, step: float, lo: float):
    x_lo, x_hi = lo / horizon, 15.0 / head
    i_lo, i_hi = math.floor(math.log(x_lo) / step), math.ceil(math.log(x_hi) / step)
    nodes = tuple(math.exp(step * i) for i in range(i_lo, i_hi + 1)) if alpha < 1 else ()
    if alpha < 1:
        # first moment of the lumped nodes below x_lo over their mass: the mode's decay rate
        p, q = 1 - alpha, 2 - alpha
        tail_rate = nodes[0] * math.expm1(p * step) / math.expm1(q * step)
    else:
        tail_rate = 0.0
    return SOEBank(method, dt, head, step, nodes, tail_rate, float("nan"))


@lru_cache(maxsize=256)
def soe_bank(method: str, alpha: float, horizon: int, dt: float, head: int, tol: float):
    r"""Coarsest verified bank for lags ``[head, horizon)``, or ``None`` if none reaches ``tol``.

    Args:
        method: ``"pred"`` or ``"gl"`` (``"l1"`` is not completely monotone: ``None``); no default.
        alpha: the order, a float in $(0, 1]$; no default.
        horizon: the sequence length the bank is verified over, an integer $>$ ``head``; no default.
        dt: the time step, a number $> 0$; no default.
        head: the lags below it that stay exact (not in the bank), an integer $\ge 1$; no default.
        tol: the relative kernel error allowed over ``[head, horizon)``, a number $> 0$; no default.
    """
    if method not in SOE_METHODS:
        return None
    a = torch.tensor(alpha, dtype=torch.float64)
    lags = torch.arange(head, max(horizon, head + 1), dtype=torch.float64)
    exact = history_kernel(method, a, int(lags[-1]) + 1, dt)[head:]
    best = None
    for lo in (1e-2, 1e-3) if alpha < 1 else (1e-2,):
        for step in _SOE_STEPS if alpha < 1 else (1.0,):
            bank = _bank(method, alpha, horizon, dt, head, step, lo)
            err = ((bank.kernel(a, lags) - exact).abs() / exact).max().item()
            if err <= tol and (best is None or bank.size < best.size):
                best = SOEBank(**{**bank.__dict__, "error": err})
                break
    return best
