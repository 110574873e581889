r"""History engines: the multi-step fractional neuron as one autograd Function.

The forward is the recursion of :mod:`fsnn.neurons.dynamics` (``fsnn`` convention); the history sum
``Y_k = U_init + sum_{j<k} kappa_{k-j} gamma_j`` is the only costly part. Time is processed in
blocks of ``B`` steps. Inside a block each step adds the exact within-block history (one small
matrix-vector product); everything older than the block is added for the whole block at once:

* ``direct``: exact, one GEMM per block with the Toeplitz slice of the kernel (O(T^2) work,
  no Python loop over the past). With ``memory=M`` the kernel is cut at lag ``M`` and the GEMM
  only reaches ``M`` steps back: the short-memory window, O(T M).
* ``soe``: lags ``<= B`` exact, older lags from ``W`` exponential modes (:mod:`fsnn.neurons.memory`),
  carried as a ``[W, N]`` state updated once per block: O(T W) work, O(W N) state.

``backend="triton"`` runs the same recursion in one fused GPU kernel per direction
(:mod:`fsnn.neurons.triton_kernels`), ``backend="cpp"`` the direct engine's in one compiled CPU loop per direction
(:mod:`fsnn.neurons.cpu_kernels`); this Function then only allocates, calls them and computes the parameter
gradients, which are sums over the whole sequence.

Backward is analytic and runs in reverse time. The adjoint of the causal convolution is the
time-reversed convolution with the same kernel, so the same two engines serve it. Only the
charged potentials ``H`` (and the input when ``tau``/``alpha`` learn) are saved. Learnable
``alpha`` gets ``dL/dK_m = sum_k <Hbar_k, g_{k-m}>`` (one FFT cross-correlation), which autograd
maps through ``torch.lgamma`` onto ``alpha``.

The backward is differentiable once (:func:`once_differentiable`): it runs in place, in compiled loops or in
Triton kernels that autograd cannot follow, so ``create_graph=True`` through it (a second derivative) is refused
in one line instead of coming out silently wrong.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from fsnn.neurons import cpu_kernels, dynamics, triton_kernels as kernels
from fsnn.neurons.surrogate import surrogate_derivative, surrogate_derivative_


@dataclass(frozen=True)
class EngineConfig:
    """What one engine call needs besides the tensors: the neuron's reset and surrogate, the block size of the
    direct engine or the SOE decays, and the backend (torch or the fused Triton kernels)."""

    leak: bool
    reset: str  # "soft" | "hard"
    v_reset: float
    detach_reset: bool
    surrogate: str
    surrogate_scale: float
    block: int
    memory: int | None  # direct engine only
    decays: torch.Tensor | None  # SOE decay factors lam_i; None for the direct engine
    return_state: bool = True  # False: keep only the last potential (saves a [T, N] buffer)
    chunk: bool = False  # a chunk continued from a state: takes prior and v0, returns the currents too (torch only)
    backend: str = "torch"  # "torch" | "triton" (fsnn.neurons.triton_kernels) | "cpp" (fsnn.neurons.cpu_kernels)

    @property
    def v_init(self) -> float:
        return self.v_reset if self.reset == "hard" else 0.0

    v_rest = v_init  # the leak pulls towards the same potential the membrane starts from


def once_differentiable(what: str):
    """Decorator of an autograd Function's ``backward`` that autograd cannot differentiate (in-place adjoints,
    compiled or Triton kernels): asked for a graph of the gradient (``create_graph=True``), it refuses with one
    ``RuntimeError`` naming ``what`` before computing anything. A gradient it returned under ``create_graph`` would
    carry no derivative of its own, and a second derivative through it would come out silently wrong, or as
    torch's error about a tensor "not used in the graph" (torch's ``once_differentiable`` only refuses when an
    incoming gradient requires one).

    Args:
        what: what the message names, e.g. ``"the backward of FractionalLIF / FractionalIF"``.
    """
    message = (
        f"{what} is differentiable once: create_graph=True through it (for a second derivative: a backward "
        "of a gradient, gradgradcheck, a penalty on a gradient) is not supported"
    )

    def decorate(backward):
        @functools.wraps(backward)
        def wrapper(ctx, *grads):
            if torch.is_grad_enabled():  # autograd runs a backward with grad mode on only under create_graph=True
                raise RuntimeError(message)
            return backward(ctx, *grads)

        return wrapper

    return decorate


#: the words of a refused second derivative through the neurons' engines
NEURON_BACKWARD = (
    "the backward of fsnn's fractional neurons (FractionalLIF, FractionalIF, every engine of convention='fsnn')"
)


def _toeplitz(kappa: torch.Tensor, rows: range, cols: range) -> torch.Tensor:
    """``[kappa_{r-c}]`` for ``1 <= r - c < len(kappa)``, zero elsewhere."""
    r = torch.arange(rows.start, rows.stop, device=kappa.device)
    c = torch.arange(cols.start, cols.stop, device=kappa.device)
    lag = r[:, None] - c[None, :]
    padded = torch.cat([kappa, kappa.new_zeros(1)])
    lag = torch.where((lag >= 1) & (lag < len(kappa)), lag, len(kappa))
    return padded[lag]


class _History:
    """Far-field (older than the current block) history sums for one call, both directions."""

    def __init__(self, kappa: torch.Tensor, cfg: EngineConfig, soe_w: torch.Tensor | None, T: int):
        self.kappa, self.cfg, self.T, self.B = kappa, cfg, T, cfg.block
        self.near = _toeplitz(kappa, range(self.B), range(self.B))  # within-block lags
        if cfg.decays is not None:
            lam = cfg.decays
            i = torch.arange(self.B, device=lam.device, dtype=lam.dtype)
            # mode i of the state at block start s covers j < s - B: lag = (k - s) + B + 1 + age
            self.read = soe_w[None, :] * lam[None, :] ** (i[:, None] + self.B + 1)
            self.lam_block = lam**self.B

    def _reach(self, s: int) -> int:
        if self.cfg.decays is not None:
            return max(0, s - self.B)
        return 0 if self.cfg.memory is None else max(0, s - self.cfg.memory)

    def forward_far(self, s: int, e: int, G: torch.Tensor, state: list) -> torch.Tensor | None:
        lo = self._reach(s)
        far = None
        if s > lo:
            far = _toeplitz(self.kappa, range(s, e), range(lo, s)) @ G[lo:s]
        if self.cfg.decays is not None and s >= 2 * self.B:
            lam = self.cfg.decays
            age = torch.arange(self.B - 1, -1, -1, device=lam.device, dtype=lam.dtype)
            add = (lam[:, None] ** age[None, :]) @ G[s - 2 * self.B : s - self.B]
            state[0] = add if state[0] is None else torch.addcmul(add, self.lam_block[:, None], state[0])
            far = torch.addmm(far, self.read[: e - s], state[0])
        return far

    def backward_far(self, s: int, e: int, Hbar: torch.Tensor, state: list) -> torch.Tensor | None:
        T, B = self.T, self.B
        if self.cfg.decays is not None:
            hi = min(T, e + B)
        else:
            hi = T if self.cfg.memory is None else min(T, e + self.cfg.memory)
        far = None
        if hi > e:
            far = _toeplitz(self.kappa, range(e, hi), range(s, e)).t() @ Hbar[e:hi]
        if self.cfg.decays is not None and e + B < T:
            lam = self.cfg.decays
            lo2, hi2 = e + B, min(T, e + 2 * B)
            age = torch.arange(hi2 - lo2, device=lam.device, dtype=lam.dtype)
            add = (lam[:, None] ** age[None, :]) @ Hbar[lo2:hi2]
            state[0] = add if state[0] is None else torch.addcmul(add, self.lam_block[:, None], state[0])
            # lag from k = s + i to k' = e + B + age is (e - s - i) + B + age
            far = torch.addmm(far, self.read[: e - s].flip(0), state[0])
        return far


def _lag_correlation(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``C_m = sum_{k, n} a[k, n] b[k - m, n]`` for ``m = 0 .. T-1`` (FFT along time)."""
    T = a.shape[0]
    fa = torch.fft.rfft(a, n=2 * T, dim=0)
    fb = torch.fft.rfft(b, n=2 * T, dim=0)
    return torch.fft.irfft((fa * fb.conj()).sum(1), n=2 * T)[:T]


class FractionalNeuronFunction(torch.autograd.Function):
    """``(x [T, N], tau, theta, k_head, soe_w, cfg[, prior, v0]) -> (spikes [T, N], v [T, N][, gamma [T, N]])``.

    ``k_head``: exact kernel lags ``0..len-1`` (the whole kernel for ``direct``); ``soe_w``: weights
    of ``cfg.decays`` for lags ``>= len(k_head)`` (empty for ``direct``).

    A chunk continued from a state (``cfg.chunk``, torch backend): ``prior [T, N]`` is the history potential that
    the steps before the chunk add to each of its steps (:mod:`fsnn.neurons.stepping`), ``v0 [N]`` the membrane
    before its first step (the leak's ``V_{-1}``), and the currents ``gamma`` that enter the history are a third
    output, for the next chunk's ``prior``. Gradients flow to ``prior`` (``dL/dY_k = Hbar_k``) and ``v0``
    (``-c_leak U_0``), and from ``gamma`` (added to the history adjoint ``Gbar``).
    """

    @staticmethod
    def forward(ctx, x, tau, theta, k_head, soe_w, cfg: EngineConfig, prior=None, v0=None):
        need_x = tau.requires_grad or k_head.requires_grad or soe_w.requires_grad
        ctx.cfg = cfg
        ctx.set_materialize_grads(False)  # an unused V output must not cost a zero [T, N] gradient
        if cfg.backend == "triton":
            spikes, H, V = kernels.forward(x, tau, theta, k_head, soe_w, cfg)
            ctx.save_for_backward(H, x if need_x else None, tau, theta, k_head, soe_w, None)
            ctx.x_dtype = x.dtype
            return spikes, V if cfg.return_state else H[:0]
        T, N = x.shape
        tau_f, theta_f, k0 = float(tau), float(theta), float(k_head[0])
        kappa = k_head / k0
        drive = k0 / tau_f  # H_k = Y_k + (K0/tau) (X_k + leak v_rest) - (K0/tau) leak V_{k-1}
        offset = drive * cfg.v_rest if cfg.leak else 0.0
        if cfg.backend == "cpp":
            H, _, V = cpu_kernels.forward(
                x,
                kappa,
                drive=drive,
                offset=offset,
                c_leak=drive if cfg.leak else 0.0,
                theta=theta_f,
                hard=cfg.reset == "hard",
                v_reset=cfg.v_reset,
                v_init=cfg.v_init,
                store_v=cfg.return_state,
            )
            ctx.save_for_backward(H, x if need_x else None, tau, theta, k_head, soe_w, None)
            ctx.kappa = kappa
            return (H >= theta_f).to(x.dtype), V
        if cfg.decays is not None:  # exact head, SOE values up to the largest in-block lag 2B - 1
            lags = torch.arange(len(k_head), 2 * cfg.block, device=x.device, dtype=x.dtype)
            tail = (cfg.decays[None, :] ** lags[:, None]) @ (soe_w / k0)
            kappa = torch.cat([kappa, tail])
        hist = _History(kappa, cfg, soe_w / k0 if cfg.decays is not None else None, T)
        step = dynamics.ChargeFireReset(
            leak=cfg.leak, reset=cfg.reset, threshold=theta_f, v_reset=cfg.v_reset, c_leak=drive
        )

        G = torch.empty_like(x)  # gamma_k = K0 g_k: the current that enters the history
        H = torch.empty_like(x)
        V = torch.empty_like(x) if cfg.return_state else x.new_empty(2, N)  # else: ping-pong rows
        v_prev = x.new_full((N,), cfg.v_init) if v0 is None else v0
        state: list = [None]
        B = cfg.block
        # the step loop is Python-bound for small N: rows as views made once, not indexed at every step
        H_rows, G_rows, V_rows = H.unbind(0), G.unbind(0), V.unbind(0)
        near_rows = [hist.near[i : i + 1, :i] for i in range(min(B, T))]  # [1, i]: vector @ matrix is this mm
        for s in range(0, T, B):
            e = min(s + B, T)
            far = hist.forward_far(s, e, G, state)
            y_far = far + cfg.v_init if far is not None else x.new_full((e - s, N), cfg.v_init)
            if prior is not None:
                y_far += prior[s:e]
            h_pre = torch.add(y_far, x[s:e], alpha=drive)
            if offset:
                h_pre += offset
            for i, (h_i, y_i) in enumerate(zip(h_pre.unbind(0), y_far.unbind(0))):
                k = s + i
                near = torch.mm(near_rows[i], G[s:k]).view(N) if i else None
                v_out = V_rows[k] if cfg.return_state else V_rows[k % 2]
                v_prev = step(h_i, y_i, near, v_prev, H_rows[k], v_out, G_rows[k])
        spikes = (H >= theta_f).to(x.dtype)
        ctx.save_for_backward(H, x if need_x else None, tau, theta, k_head, soe_w, v0)
        ctx.hist = hist
        if cfg.chunk:
            return spikes, V, G
        return spikes, V if cfg.return_state else V[:0]

    @staticmethod
    @once_differentiable(NEURON_BACKWARD)
    def backward(ctx, grad_spikes, grad_v, grad_gamma=None):
        if ctx.cfg.backend == "triton":
            return _triton_backward(ctx, grad_spikes, grad_v)
        saved = ctx.saved_tensors  # read once: non-reentrant checkpointing unpacks each saved tensor only once
        H, x, tau, theta, k_head, soe_w, v0 = saved
        cfg = ctx.cfg
        T, N = H.shape
        tau_f, theta_f, k0 = float(tau), float(theta), float(k_head[0])
        c_leak = k0 / tau_f if cfg.leak else 0.0
        if grad_spikes is None:
            grad_spikes = torch.zeros_like(H)

        sg = surrogate_derivative_(H - theta_f, cfg.surrogate, cfg.surrogate_scale)
        coef, drive = dynamics.reset_adjoint_coefficients(  # consumes sg
            H,
            sg,
            grad_spikes,
            grad_v,
            threshold=theta_f,
            reset=cfg.reset,
            v_reset=cfg.v_reset,
            detach_reset=cfg.detach_reset,
        )
        # coef becomes Hbar and drive becomes U in place, step by step, in reverse time
        U, Hbar = drive.contiguous(), coef.contiguous()
        if cfg.backend == "cpp":
            cpu_kernels.backward(Hbar, U, ctx.kappa, c_leak)
        else:
            _adjoint_recursion(ctx.hist, cfg, U, Hbar, c_leak, grad_gamma)
        grads = _parameter_grads(ctx, saved, U, Hbar, grad_spikes, grad_v, grad_gamma)
        if not cfg.chunk:
            return (U.mul_(k0 / tau_f), *grads, None)
        grad_prior = Hbar if ctx.needs_input_grad[6] else None
        grad_v0 = -c_leak * U[0] if ctx.needs_input_grad[7] else None
        return (U.mul(k0 / tau_f), *grads, None, grad_prior, grad_v0)


def _adjoint_recursion(
    hist: _History, cfg: EngineConfig, U: torch.Tensor, Hbar: torch.Tensor, c_leak: float, grad_gamma=None
):
    """The torch engines' reverse-time loop: ``U`` (holding ``d``) and ``Hbar`` (holding ``c``) in place;
    ``grad_gamma``: a gradient of the currents from outside the call (a later chunk's), added to ``Gbar``."""
    T, N = U.shape
    state: list = [None]
    B = cfg.block
    zero = U.new_zeros(N)
    U_rows, Hbar_rows = U.unbind(0), Hbar.unbind(0)  # views made once (see forward)
    near_t = hist.near.t()
    for s in reversed(range(0, T, B)):
        e = min(s + B, T)
        far = hist.backward_far(s, e, Hbar, state)
        far_rows = far.unbind(0) if far is not None else None
        for i in reversed(range(e - s)):
            k = s + i
            gbar = far_rows[i] if far is not None else zero
            if grad_gamma is not None:
                gbar = gbar + grad_gamma[k]
            if i < e - s - 1:
                gbar = torch.addmv(gbar, Hbar[k + 1 : e].t(), near_t[i, i + 1 : e - s])
            u_next = U_rows[k + 1] if (cfg.leak and k + 1 < T) else None
            dynamics.adjoint_step(gbar, u_next, c_leak, U_rows[k], Hbar_rows[k])


def _triton_backward(ctx, grad_spikes, grad_v):
    saved = ctx.saved_tensors  # read once (see FractionalNeuronFunction.backward)
    H, x, tau, theta, k_head, soe_w, _ = saved
    cfg = ctx.cfg
    need_params = any(ctx.needs_input_grad[1:5])
    grad_x, U, Hbar = kernels.backward(
        grad_spikes, grad_v, H, tau, theta, k_head, soe_w, cfg, x_dtype=ctx.x_dtype, need_uh=need_params
    )
    if not need_params:
        return grad_x, None, None, None, None, None
    if grad_spikes is None:
        grad_spikes = torch.zeros_like(H)
    grads = _parameter_grads(ctx, saved, U, Hbar, grad_spikes, grad_v)
    return (grad_x, *grads, None)


def _parameter_grads(ctx, saved, U, Hbar, grad_spikes, grad_v, grad_gamma=None):
    """Gradients for tau, theta, k_head, soe_w (``None`` where not required); ``saved``: ``ctx.saved_tensors``;
    ``grad_gamma``: the gradient of a chunk's currents from outside the call."""
    H, x, tau, theta, k_head, soe_w, v0 = saved
    cfg = ctx.cfg
    need_tau, need_theta, need_k = ctx.needs_input_grad[1:4]
    need_w = ctx.needs_input_grad[4]
    if not (need_tau or need_theta or need_k or need_w):
        return None, None, None, None
    tau_f, theta_f, k0 = float(tau), float(theta), float(k_head[0])  # learning parameters: one sync is fine
    spikes = (H >= theta_f).to(H.dtype)
    v_post = dynamics.reset_value(H, spikes, theta_f, cfg.reset, cfg.v_reset)
    gamma_bar = U - Hbar
    c_leak = k0 / tau_f if cfg.leak else 0.0
    u_next = torch.cat([U[1:], U.new_zeros(1, U.shape[1])])
    g_tau = g_theta = g_k = g_w = None
    if need_theta:
        v_bar = gamma_bar - c_leak * u_next
        if grad_v is not None:
            v_bar = v_bar + grad_v
        sg = surrogate_derivative(H - theta_f, cfg.surrogate, cfg.surrogate_scale)
        g_theta = dynamics.threshold_grad(H, spikes, sg, v_bar, grad_spikes, theta_f, cfg)
        g_theta = g_theta.reshape(theta.shape).to(theta.dtype)
    if need_tau or need_k or need_w:
        first = v_post.new_full((1, v_post.shape[1]), cfg.v_init) if v0 is None else v0[None]
        v_prev = torch.cat([first, v_post[:-1]])
        f = (x + (cfg.v_rest - v_prev) if cfg.leak else x) / tau_f
        if need_tau:
            g_tau = (-(k0 / tau_f) * (U * f).sum()).reshape(tau.shape).to(tau.dtype)
        if need_k or need_w:
            gamma = v_post - H + k0 * f
            corr = _lag_correlation(Hbar, gamma) / k0
            if len(corr) < len(k_head):  # fewer steps than exact lags (the SOE head): the later lags never act
                corr = torch.cat([corr, corr.new_zeros(len(k_head) - len(corr))])
            k_bar = corr[: len(k_head)].clone()
            if grad_gamma is not None:  # K_0 acts through the call's own history sums, not a later chunk's
                gamma_bar, Hbar = gamma_bar - grad_gamma, Hbar + grad_gamma
            k_bar[0] = (f * Hbar).sum() - ((v_post - H) * gamma_bar).sum() / k0
            g_k = k_bar.to(k_head.dtype)
            if need_w:
                lags = torch.arange(len(k_head), len(corr), device=H.device, dtype=H.dtype)
                modes = cfg.decays[:, None] ** lags[None, :]
                g_w = (modes @ corr[len(k_head) :]).to(soe_w.dtype)
    return g_tau, g_theta, g_k, g_w
