r"""Fused Triton kernels for the fsnn-convention engines: forward and analytic backward.

The torch engines (:mod:`fsnn.neurons.engines`) run a Python loop with a few small torch ops per time step;
on a GPU each op is one kernel launch, so a step costs launches, not arithmetic. Here one program
owns ``BLOCK`` neurons and walks the whole sequence inside one kernel. Per neuron it keeps in
registers

* the last ``R`` history currents ``gamma`` (lags ``1..R``, exact) as a tuple of registers that
  shifts by one each step; the time loop is unrolled by ``UNROLL`` steps, inside which the shift
  is only a renaming (no dynamic register indexing);
* the ``W`` exponential modes of the SOE engine (lags ``> R``), each advanced by one FMA per step,
  ``S_q(k+1) = lam_q S_q(k) + gamma_{k-R}``, and read with one FMA as ``w_q lam_q^(R+1) S_q(k) / K_0``;
* the previous potential (leak).

Exact lags beyond ``R`` (the ``direct`` engine past ``R_MAX`` steps, or a window ``memory > R_MAX``)
are read back from the ``G`` buffer the kernel writes (``FAR``). The recursion is the one of
:mod:`fsnn.neurons.dynamics`, in the engines' normalisation ``kappa_m = K_m / K_0``::

    Y_k = U_init + sum_{m>=1} kappa_m gamma_{k-m}
    H_k = Y_k + (K_0/tau) (X_k + L v_rest - L V_{k-1}),   S_k = [H_k >= theta],   V_k = reset(H_k)
    gamma_k = V_k - Y_k

and backward, in reverse time with the same ring/modes over ``Hbar`` (``Gbar_k = sum_m kappa_m Hbar_{k+m}``)::

    U_k = d_k + c_k (Gbar_k - L (K_0/tau) U_{k+1}),   Hbar_k = U_k - Gbar_k,   dL/dX_k = (K_0/tau) U_k

with ``c_k, d_k`` of :func:`fsnn.neurons.dynamics.reset_adjoint_coefficients`. Only ``H`` is saved for the
backward, in fp32 (fp64 for fp64 inputs); ``U`` and ``Hbar`` are written only when ``tau``, the
threshold or ``alpha`` learn (their gradients are sums over them, computed in torch). ``tau``,
``theta`` and the kernel are read on the device, so a call never synchronises with the host.

Without a GPU, Triton's interpreter (``TRITON_INTERPRET=1``, set before Triton is imported) runs
the same kernels on CPU tensors; the tests use it.
"""

from __future__ import annotations

import functools
import os

import torch

R_MAX = 64  # the longest exact history kept in registers; beyond it the direct engine reads G
R_DIRECT = 32  # auto stays exact up to this many lags; beyond, the SOE's ~8 + 2W registers cost less
# launch: one neuron per thread (the state is ~R + W registers a neuron), UNROLL time steps per loop iteration
LAUNCH = {"block": 128, "num_warps": 4, "unroll": 4}
SURROGATE_IDS = {"sigmoid": 0, "arctan": 1, "piecewise_linear": 2, "gaussian": 3}


def interpreting() -> bool:
    """Whether Triton runs its interpreter (``TRITON_INTERPRET=1``: the kernels on CPU tensors, for the tests)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def unavailable_reason(device: torch.device) -> str | None:
    """Why the kernels cannot run on ``device`` (``None`` if they can)."""
    if _TRITON_MISSING:
        return _TRITON_MISSING
    if device.type == "cuda" or (device.type == "cpu" and interpreting()):
        return None
    return f"the kernels need a CUDA tensor (or TRITON_INTERPRET=1 on the CPU), got device {device.type!r}"


def unavailable_here() -> str | None:
    """Why the kernels cannot run on this machine at all (``None`` if a CUDA GPU or the interpreter runs them)."""
    if _TRITON_MISSING:
        return _TRITON_MISSING
    if torch.cuda.is_available() or interpreting():
        return None
    return "the Triton kernels need a CUDA GPU or TRITON_INTERPRET=1, and no GPU is visible"


def ring_size(length: int, soe: bool) -> tuple[int, int]:
    """``(R, far_reach)`` for an exact kernel ``K_0..K_{length-1}`` (``soe``: the bank's exact head)."""
    lags = length - 1
    if soe:
        return max(lags, 1), 0
    if lags <= R_MAX:
        return max(1, 1 << max(lags - 1, 0).bit_length()), 0  # a power of two: few compiled variants
    return R_MAX, lags


def _launch_grid(N: int, block: int):
    return (triton.cdiv(N, block),)


try:
    import triton
    import triton.language as tl
except ImportError as error:  # not installed, or its interpreter (TRITON_INTERPRET=1) lacks numpy
    _TRITON_MISSING = f"Triton cannot be imported ({error})"
else:
    _TRITON_MISSING = None

if not _TRITON_MISSING:

    @triton.jit
    def _surrogate(z, scale, SURROGATE: tl.constexpr):
        """``s(z)`` of :mod:`fsnn.neurons.surrogate` at ``z = H - theta``."""
        if SURROGATE == 0:
            sig = 1.0 / (1.0 + tl.exp(-scale * z))
            out = scale * sig * (1.0 - sig)
        elif SURROGATE == 1:
            a = 1.5707963267948966 * scale * z
            out = 0.5 * scale / (1.0 + a * a)
        elif SURROGATE == 2:
            out = tl.where(tl.abs(z) <= scale, 0.5 / scale, 0.0 * z)
        else:
            u = z / scale
            out = tl.exp(-0.5 * u * u) / (scale * 2.5066282746310002)
        return out

    @triton.jit
    def _constants(kappa_ptr, length, lam_ptr, w_ptr, tau_ptr, R: tl.constexpr, W: tl.constexpr, DT: tl.constexpr):
        """``K_0 / tau``, ``kappa_1..kappa_R`` and the SOE ``(lam_q, w_q lam_q^(R+1) / K_0)``."""
        k0 = tl.load(kappa_ptr).to(DT)
        drive = k0 / tl.load(tau_ptr).to(DT)
        kap = ()
        for m in tl.static_range(1, R + 1):
            kap = kap + (tl.load(kappa_ptr + m, mask=m < length, other=0.0).to(DT) / k0,)
        lam = ()
        read = ()
        for q in tl.static_range(W):
            lq = tl.load(lam_ptr + q).to(DT)
            rq = tl.load(w_ptr + q).to(DT) / k0
            for _ in tl.static_range(R + 1):
                rq = rq * lq
            lam = lam + (lq,)
            read = read + (rq,)
        return drive, kap, lam, read

    @triton.jit
    def _history(ring, modes, kap, read, R: tl.constexpr, W: tl.constexpr):
        """``sum_m kappa_m ring[m-1] + sum_q read_q modes_q``: the history sum of one step.

        Four partial sums: one serial chain of ``R + W`` dependent FMAs would stall on FMA latency.
        """
        acc = ()
        for t in tl.static_range(R + W):
            if t < R:
                term = ring[t] * kap[t]
            else:
                term = modes[t - R] * read[t - R]
            if t < 4:
                acc = acc + (term,)
            else:
                acc = acc[: t % 4] + (acc[t % 4] + term,) + acc[t % 4 + 1 :]
        total = acc[0]
        for j in tl.static_range(1, len(acc)):
            total += acc[j]
        return total

    @triton.jit
    def _far(buf_ptr, kappa_ptr, col, k, lo, hi, N, k0, SIGN: tl.constexpr, mask, DT: tl.constexpr):
        """Exact lags ``lo..hi`` read back from a ``[T, N]`` buffer (past for SIGN -1, future for +1)."""
        acc = tl.zeros(col.shape, DT)
        for m in range(lo, hi + 1):
            row = tl.cast(k + SIGN * m, col.dtype) * N
            acc += tl.load(buf_ptr + row + col, mask=mask, other=0.0).to(DT) * (tl.load(kappa_ptr + m).to(DT) / k0)
        return acc

    @triton.jit
    def _advance(ring, modes, lam, new, W: tl.constexpr):
        """The oldest ring entry moves into the modes (one FMA each); ``new`` becomes lag 1."""
        out = ()
        for q in tl.static_range(W):
            out = out + (modes[q] * lam[q] + ring[len(ring) - 1],)
        return (new,) + ring[:-1], out

    @triton.jit
    def _prefetch(ptr, col, mask, k, SIGN: tl.constexpr, T, N, UNROLL: tl.constexpr, DT: tl.constexpr):
        """Row ``k + SIGN j`` of a ``[T, N]`` input for ``j < UNROLL`` (zero outside ``[0, T)``).

        The kernels load one loop iteration ahead: a load issued right before its use would stall
        every step on memory latency, which the few warps a register-heavy kernel runs cannot hide.
        """
        out = ()
        for j in tl.static_range(UNROLL):
            t = k + SIGN * j
            ok = mask & (t >= 0) & (t < T)
            out = out + (tl.load(ptr + tl.cast(t, col.dtype) * N + col, mask=ok, other=0.0).to(DT),)
        return out

    @triton.jit
    def _forward_step(where, consts, CFG: tl.constexpr, k, x, ring, modes, v_prev):
        """One forward step at time ``k``. The arguments every step of a program shares travel as three tuples,
        so that each call is written once: ``where`` (the buffers it writes, its neurons ``col`` and their
        ``mask``, the sizes), ``consts`` (the loop's constants) and ``CFG``, the kernel's compile-time options,
        read by index: a constexpr tuple unpacked in one assignment would give plain values. The compute dtype
        is ``x``'s."""
        s_ptr, h_ptr, v_ptr, g_ptr, kappa_ptr, col, mask, N, reach = where
        kap, lam, read, drive, k0, theta, v_reset, v_init = consts
        R: tl.constexpr = CFG[0]
        W: tl.constexpr = CFG[1]
        FAR: tl.constexpr = CFG[2]
        LEAK: tl.constexpr = CFG[3]
        HARD: tl.constexpr = CFG[4]
        STORE_V: tl.constexpr = CFG[5]
        DT = x.dtype
        row = tl.cast(k, col.dtype) * N
        y = _history(ring, modes, kap, read, R, W) + v_init
        if FAR:
            y += _far(g_ptr, kappa_ptr, col, k, R + 1, tl.minimum(k, reach), N, k0, -1, mask, DT)
        h = y + drive * x
        if LEAK:
            h += drive * (v_init - v_prev)
        fired = h >= theta
        if HARD:
            v = tl.where(fired, v_reset, h)
        else:
            v = h - tl.where(fired, theta, 0.0)
        gamma = v - y
        tl.store(s_ptr + row + col, tl.where(fired, 1.0, 0.0).to(s_ptr.dtype.element_ty), mask=mask)
        tl.store(h_ptr + row + col, h.to(h_ptr.dtype.element_ty), mask=mask)
        if STORE_V:
            tl.store(v_ptr + row + col, v.to(v_ptr.dtype.element_ty), mask=mask)
        if FAR:
            tl.store(g_ptr + row + col, gamma.to(g_ptr.dtype.element_ty), mask=mask)
        ring, modes = _advance(ring, modes, lam, gamma, W)
        return ring, modes, v

    @triton.jit
    def _forward_kernel(
        x_ptr,
        s_ptr,
        h_ptr,
        v_ptr,
        g_ptr,
        kappa_ptr,
        length,
        lam_ptr,
        w_ptr,
        tau_ptr,
        theta_ptr,
        const_ptr,
        T,
        N,
        reach,
        R: tl.constexpr,
        W: tl.constexpr,
        FAR: tl.constexpr,
        LEAK: tl.constexpr,
        HARD: tl.constexpr,
        STORE_V: tl.constexpr,
        UNROLL: tl.constexpr,
        DT: tl.constexpr,
        IDX: tl.constexpr,
        BLOCK: tl.constexpr,
    ):
        col = tl.program_id(0).to(IDX) * BLOCK + tl.arange(0, BLOCK)
        mask = col < N
        drive, kap, lam, read = _constants(kappa_ptr, length, lam_ptr, w_ptr, tau_ptr, R, W, DT)
        k0 = tl.load(kappa_ptr).to(DT)
        theta = tl.load(theta_ptr).to(DT)
        v_reset = tl.load(const_ptr).to(DT)
        v_init = tl.load(const_ptr + 1).to(DT)
        zero = tl.zeros([BLOCK], DT)
        ring = (zero,) * R
        modes = (zero,) * W
        v_prev = zero + v_init
        where = (s_ptr, h_ptr, v_ptr, g_ptr, kappa_ptr, col, mask, N, reach)
        consts = (kap, lam, read, drive, k0, theta, v_reset, v_init)
        CFG: tl.constexpr = (R, W, FAR, LEAK, HARD, STORE_V)
        full = (T // UNROLL) * UNROLL
        xs = _prefetch(x_ptr, col, mask, 0, 1, T, N, UNROLL, DT)
        for c in range(0, full, UNROLL):
            ahead = _prefetch(x_ptr, col, mask, c + UNROLL, 1, T, N, UNROLL, DT)
            for j in tl.static_range(UNROLL):
                ring, modes, v_prev = _forward_step(where, consts, CFG, c + j, xs[j], ring, modes, v_prev)
            xs = ahead
        for j in tl.static_range(UNROLL - 1):
            if full + j < T:
                ring, modes, v_prev = _forward_step(where, consts, CFG, full + j, xs[j], ring, modes, v_prev)

    @triton.jit
    def _backward_step(where, consts, CFG: tl.constexpr, k, h, gs, gv, ring, modes, u_next):
        """One backward step at time ``k`` (reverse time), its arguments grouped as :func:`_forward_step`'s."""
        gx_ptr, u_ptr, hb_ptr, kappa_ptr, col, mask, T, N, reach = where
        kap, lam, read, drive, k0, theta, v_reset, scale = consts
        R: tl.constexpr = CFG[0]
        W: tl.constexpr = CFG[1]
        FAR: tl.constexpr = CFG[2]
        LEAK: tl.constexpr = CFG[3]
        HARD: tl.constexpr = CFG[4]
        DETACH: tl.constexpr = CFG[5]
        SURROGATE: tl.constexpr = CFG[6]
        HAS_GS: tl.constexpr = CFG[7]
        HAS_GV: tl.constexpr = CFG[8]
        STORE_UH: tl.constexpr = CFG[9]
        DT = h.dtype
        row = tl.cast(k, col.dtype) * N
        sg = _surrogate(h - theta, scale, SURROGATE)
        if HARD:
            c = tl.where(h < theta, 1.0, 0.0)
            if not DETACH:
                c -= sg * (h - v_reset)
        elif DETACH:
            c = 1.0 + 0.0 * h
        else:
            c = 1.0 - theta * sg
        d = tl.zeros(h.shape, DT)
        if HAS_GS:
            d += sg * gs
        if HAS_GV:
            d += c * gv
        gbar = _history(ring, modes, kap, read, R, W)
        if FAR:
            gbar += _far(hb_ptr, kappa_ptr, col, k, R + 1, tl.minimum(T - 1 - k, reach), N, k0, 1, mask, DT)
        if LEAK:
            u = d + c * (gbar - drive * u_next)
        else:
            u = d + c * gbar
        hbar = u - gbar
        tl.store(gx_ptr + row + col, (u * drive).to(gx_ptr.dtype.element_ty), mask=mask)
        if STORE_UH:
            tl.store(u_ptr + row + col, u.to(u_ptr.dtype.element_ty), mask=mask)
        if FAR or STORE_UH:
            tl.store(hb_ptr + row + col, hbar.to(hb_ptr.dtype.element_ty), mask=mask)
        ring, modes = _advance(ring, modes, lam, hbar, W)
        return ring, modes, u

    @triton.jit
    def _backward_kernel(
        gs_ptr,
        gv_ptr,
        h_ptr,
        gx_ptr,
        u_ptr,
        hb_ptr,
        kappa_ptr,
        length,
        lam_ptr,
        w_ptr,
        tau_ptr,
        theta_ptr,
        const_ptr,
        T,
        N,
        reach,
        R: tl.constexpr,
        W: tl.constexpr,
        FAR: tl.constexpr,
        LEAK: tl.constexpr,
        HARD: tl.constexpr,
        DETACH: tl.constexpr,
        SURROGATE: tl.constexpr,
        HAS_GS: tl.constexpr,
        HAS_GV: tl.constexpr,
        STORE_UH: tl.constexpr,
        UNROLL: tl.constexpr,
        DT: tl.constexpr,
        IDX: tl.constexpr,
        BLOCK: tl.constexpr,
    ):
        col = tl.program_id(0).to(IDX) * BLOCK + tl.arange(0, BLOCK)
        mask = col < N
        drive, kap, lam, read = _constants(kappa_ptr, length, lam_ptr, w_ptr, tau_ptr, R, W, DT)
        k0 = tl.load(kappa_ptr).to(DT)
        theta = tl.load(theta_ptr).to(DT)
        v_reset = tl.load(const_ptr).to(DT)
        scale = tl.load(const_ptr + 2).to(DT)
        zero = tl.zeros([BLOCK], DT)
        ring = (zero,) * R
        modes = (zero,) * W
        u_next = zero
        where = (gx_ptr, u_ptr, hb_ptr, kappa_ptr, col, mask, T, N, reach)
        consts = (kap, lam, read, drive, k0, theta, v_reset, scale)
        CFG: tl.constexpr = (R, W, FAR, LEAK, HARD, DETACH, SURROGATE, HAS_GS, HAS_GV, STORE_UH)
        none = (zero,) * UNROLL
        full = (T // UNROLL) * UNROLL
        hs = _prefetch(h_ptr, col, mask, T - 1, -1, T, N, UNROLL, DT)
        gss = _prefetch(gs_ptr, col, mask, T - 1, -1, T, N, UNROLL, DT) if HAS_GS else none
        gvs = _prefetch(gv_ptr, col, mask, T - 1, -1, T, N, UNROLL, DT) if HAS_GV else none
        for c in range(0, full, UNROLL):
            k = T - 1 - c - UNROLL
            h_ahead = _prefetch(h_ptr, col, mask, k, -1, T, N, UNROLL, DT)
            gs_ahead = _prefetch(gs_ptr, col, mask, k, -1, T, N, UNROLL, DT) if HAS_GS else none
            gv_ahead = _prefetch(gv_ptr, col, mask, k, -1, T, N, UNROLL, DT) if HAS_GV else none
            for j in tl.static_range(UNROLL):
                ring, modes, u_next = _backward_step(
                    where, consts, CFG, T - 1 - c - j, hs[j], gss[j], gvs[j], ring, modes, u_next
                )
            hs, gss, gvs = h_ahead, gs_ahead, gv_ahead
        for j in tl.static_range(UNROLL - 1):
            if full + j < T:
                ring, modes, u_next = _backward_step(
                    where, consts, CFG, T - 1 - full - j, hs[j], gss[j], gvs[j], ring, modes, u_next
                )


def _compute_dtype(x: torch.Tensor):
    return tl.float64 if x.dtype == torch.float64 else tl.float32


def _index_dtype(T: int, N: int, block: int):
    """32-bit offsets while ``[T, N]`` fits (fewer address instructions per step), 64-bit beyond."""
    return tl.int32 if T * (N + block) < 2**31 else tl.int64


def _state_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _launch_options() -> tuple[int, int, int]:
    """``(BLOCK, num_warps, UNROLL)``."""
    if interpreting():
        return 64, 1, LAUNCH["unroll"]
    return LAUNCH["block"], LAUNCH["num_warps"], LAUNCH["unroll"]


@functools.lru_cache(maxsize=64)
def _constants_on(device: torch.device, dtype: torch.dtype, values: tuple[float, ...]) -> torch.Tensor:
    """``[v_reset, U_init, surrogate scale]`` on the device, made once (a copy per call could synchronise)."""
    return torch.tensor(values, dtype=dtype, device=device)


def _soe_arrays(decays, soe_w, k_head):
    """``(decays, weights, W)``; without a bank the kernel's pointers are never read (``W = 0``)."""
    if decays is None:
        return k_head, k_head, 0
    return decays.contiguous(), soe_w.detach().contiguous(), decays.numel()


def forward(x, tau, theta, k_head, soe_w, cfg):
    """``(spikes [T, N] in x's dtype, H [T, N], V [T, N] or None)`` for a contiguous ``x [T, N]``; ``cfg`` is the
    call's :class:`fsnn.neurons.engines.EngineConfig` (``V`` is kept when ``cfg.return_state``)."""
    T, N = x.shape
    store_v = cfg.return_state
    R, reach = ring_size(len(k_head), soe=cfg.decays is not None)
    lam, w, W = _soe_arrays(cfg.decays, soe_w, k_head)
    state = _state_dtype(x)
    spikes = torch.empty_like(x)
    H = torch.empty(T, N, dtype=state, device=x.device)
    V = torch.empty(T, N, dtype=state, device=x.device) if store_v else H
    G = torch.empty(T, N, dtype=state, device=x.device) if reach else H
    block, warps, unroll = _launch_options()
    _forward_kernel[_launch_grid(N, block)](
        x,
        spikes,
        H,
        V,
        G,
        k_head.detach().contiguous(),
        len(k_head),
        lam,
        w,
        tau.detach(),
        theta.detach(),
        _constants_on(x.device, state, (float(cfg.v_reset), float(cfg.v_init), 0.0)),
        T,
        N,
        reach,
        R=R,
        W=W,
        FAR=bool(reach),
        LEAK=cfg.leak,
        HARD=cfg.reset == "hard",
        STORE_V=store_v,
        UNROLL=unroll,
        DT=_compute_dtype(x),
        IDX=_index_dtype(T, N, block),
        BLOCK=block,
        num_warps=warps,
    )
    return spikes, H, (V if store_v else None)


def backward(grad_spikes, grad_v, H, tau, theta, k_head, soe_w, cfg, *, x_dtype: torch.dtype, need_uh: bool):
    """``(dL/dX, U, Hbar)`` (``U``/``Hbar`` are ``None`` unless ``need_uh``); ``cfg`` as in :func:`forward`."""
    T, N = H.shape
    R, reach = ring_size(len(k_head), soe=cfg.decays is not None)
    lam, w, W = _soe_arrays(cfg.decays, soe_w, k_head)
    grad_x = torch.empty(T, N, dtype=x_dtype, device=H.device)
    U = torch.empty_like(H) if need_uh else H
    Hbar = torch.empty_like(H) if (need_uh or reach) else H
    gs = grad_spikes.contiguous() if grad_spikes is not None else H
    gv = grad_v.contiguous() if grad_v is not None else H
    block, warps, unroll = _launch_options()
    _backward_kernel[_launch_grid(N, block)](
        gs,
        gv,
        H,
        grad_x,
        U,
        Hbar,
        k_head.detach().contiguous(),
        len(k_head),
        lam,
        w,
        tau.detach(),
        theta.detach(),
        _constants_on(H.device, H.dtype, (float(cfg.v_reset), 0.0, float(cfg.surrogate_scale))),
        T,
        N,
        reach,
        R=R,
        W=W,
        FAR=bool(reach),
        LEAK=cfg.leak,
        HARD=cfg.reset == "hard",
        DETACH=cfg.detach_reset,
        SURROGATE=SURROGATE_IDS[cfg.surrogate],
        HAS_GS=grad_spikes is not None,
        HAS_GV=grad_v is not None,
        STORE_UH=need_uh,
        UNROLL=unroll,
        DT=_compute_dtype(H),
        IDX=_index_dtype(T, N, block),
        BLOCK=block,
        num_warps=warps,
    )
    return grad_x, (U if need_uh else None), (Hbar if need_uh else None)
