"""Integer-order baseline neurons (SpikingJelly 2.0.0, snnTorch 1.0.0) behind fsnn's neuron interface.

Every adapter is a :class:`fsnn.neurons.base.SpikingNeuron`: ``forward(x)`` takes ``x`` of shape ``[T, B, ...]`` and
returns spikes of the same shape, dtype and device (``return_state=True``: ``(spikes, v)`` with ``v`` the membrane
trace ``[T, B, ...]``) from a fresh state that it drops on return, so no ``reset_net`` / ``utils.reset`` is needed
between batches (snnTorch's ``utils.reset`` is never used). Like fsnn's neurons they also run one step or one chunk
from an explicit :class:`fsnn.neurons.state.MembraneState` (SpikingJelly's ``v``, snnTorch's ``mem``: rest is
``v_reset`` for a hard reset, else 0) or, with ``step_mode = "s"``, from a held one. A SpikingJelly node runs a chunk
as its own multi-step loop from the state's ``v`` (the graph reaches back into it) and is reset afterwards; the
adapter sets its node's step mode itself on every call, so ``functional.set_step_mode(net, "s")`` on an enclosing
network steers the adapter, not the node. :mod:`fsnn.neurons.registry` registers them as ``sj_lif``, ``sj_plif``,
``sj_if`` and ``snntorch_leaky`` and imports this module (and so SpikingJelly and snnTorch, the ``fsnn[baselines]``
extra) only when one is built. Their options are keywords with defaults, named as
fsnn's neurons name them; the defaults (soft reset, sigmoid surrogate) match FractionalLIF's, so that a baseline
differs from f-LIF only in the neuron given the same arguments.

Surrogate families: ``surrogate`` name, default ``surrogate_scale`` (used when it is None), backward ``g'(x)``, and
the SpikingJelly / snnTorch objects used:

* ``sigmoid`` (kappa = 5): ``kappa sig(kappa x) (1 - sig(kappa x))``; SJ ``Sigmoid(alpha=kappa)``; snnTorch custom.
* ``arctan`` (k = 2): ``(k/2) / (1 + (pi k x / 2)^2)``; SJ ``ATan(alpha=k)``; snnTorch ``surrogate.atan(alpha=k)``.
* ``piecewise_linear`` (gamma = 1): box ``1/(2 gamma)`` on ``|x| <= gamma``, else 0; custom in both.
* ``gaussian`` (sigma = 1): normal pdf ``N(x; 0, sigma^2)``; SJ ``Erf(alpha=1/(sigma sqrt 2))``; snnTorch custom.

Why custom: snnTorch's ``surrogate.sigmoid`` computes ``k e^{-kx} / (e^{-kx} + 1)^2``, NaN in fp32 once ``k x < -88``;
SJ's ``Rect`` and ``PiecewiseLeakyReLU(c=0)`` are open boxes (``|x| < gamma``); snnTorch has no Gaussian. Custom SJ
surrogates run on SJ's torch reference path (autograd through a Python loop) instead of its fused CPU/Triton op, which
``SJ_LIF_CUDA_IMPLEMENTATION`` / ``SJ_IF_CUDA_IMPLEMENTATION`` must allow (the default ``auto`` does).
Heaviside forward: SpikingJelly fires on ``x >= 0``, snnTorch on ``x > 0`` (kept for the custom snnTorch surrogates).
"""

from __future__ import annotations

import math

import snntorch
import torch
from snntorch import surrogate as st_surrogate
from spikingjelly.activation_based import neuron as sj_neuron, surrogate as sj_surrogate
from torch import nn

from fsnn.checks import Flag, Positive, Real, checked, number
from fsnn.neurons.base import SpikingNeuron, check_step_input
from fsnn.neurons.fractional import Reset
from fsnn.neurons.state import MembraneState
from fsnn.neurons.surrogate import Surrogate, check_surrogate, spike

__all__ = ["SJLIF", "SJIF", "SJPLIF", "SnnTorchLeaky"]

# SpikingJelly's LIF (and PLIF's start value) and snnTorch's beta = 1 - 1/tau need tau > 1
Tau = number("a number > 1 (the time constant of an integer-order LIF)", lambda v: v > 1)


class _SJSpike(sj_surrogate.SurrogateFunctionBase):
    """SpikingJelly-compatible surrogate module (fires on ``x >= 0``); SJ runs it on its torch reference path."""

    def __init__(self, family: str, scale: float):
        super().__init__(spiking=True, alpha=scale)
        self.family = family

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return spike(x, self.family, self.alpha)


class _SnnTorchSpike:
    """Picklable snnTorch ``spike_grad`` callable (snnTorch accepts any callable); fires on ``x > 0`` like snnTorch."""

    def __init__(self, family: str, scale: float):
        self.family, self.scale = family, scale

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return spike(x, self.family, self.scale, strict=True)

    def __repr__(self):
        return f"{type(self).__name__}({self.family!r}, {self.scale})"


def _sj_surrogate(family: str, scale: float) -> nn.Module:
    if family == "sigmoid":
        return sj_surrogate.Sigmoid(alpha=scale)
    if family == "arctan":
        return sj_surrogate.ATan(alpha=scale)
    if family == "gaussian":  # Erf backward (a/sqrt(pi)) exp(-(a x)^2) == N(x; 0, sigma^2) for a = 1/(sigma sqrt 2)
        return sj_surrogate.Erf(alpha=1.0 / (scale * math.sqrt(2.0)))
    return _SJSpike(family, scale)


def _snntorch_surrogate(family: str, scale: float):
    return st_surrogate.atan(alpha=scale) if family == "arctan" else _SnnTorchSpike(family, scale)


# ------------------------------------------------------------------------------------------------------ adapters
class _MembraneNeuron(SpikingNeuron):
    """An adapter whose state is one membrane potential per neuron (:class:`fsnn.neurons.state.MembraneState`)."""

    state_type = MembraneState

    def _rest(self) -> float:
        """The membrane potential a run starts from."""
        return 0.0

    def initial_state(self, x: torch.Tensor) -> MembraneState:
        """The state at rest (:meth:`_rest`) for steps shaped, typed and placed like ``x`` (one step ``[B, ...]``)."""
        check_step_input(x)
        return MembraneState(shape=tuple(x.shape), steps=0, v=torch.full_like(x, self._rest()))


class _SJNode(_MembraneNeuron):
    def __init__(self, threshold, reset, v_reset, surrogate, surrogate_scale):
        super().__init__()
        self.threshold, self.reset_mode = threshold, reset
        self.v_reset = v_reset if reset == "hard" else None
        self.surrogate, self.surrogate_scale = surrogate, check_surrogate(surrogate, surrogate_scale)

    last_engine = "spikingjelly-dispatch"  # 2.0.0 picks its kernel itself (Triton on CUDA, a loop on the CPU)

    def time_constant(self) -> torch.Tensor | None:
        return torch.tensor(float(self.tau)) if self.leak else None  # IFNode has none

    def _rest(self) -> float:
        return self.v_reset if self.reset_mode == "hard" else 0.0

    def _sequence(self, x, return_state):
        spikes, v, _ = self._run_node(x, None, return_state)
        return spikes, v

    def _chunk(self, x, state):
        spikes, v, last = self._run_node(x, state.v, True)
        return spikes, v, MembraneState(shape=state.shape, steps=state.steps + x.shape[0], v=last)

    def _run_node(self, x, v0, return_state):
        """``(spikes, v_seq or None, last v)`` of the node's multi-step loop over ``x`` from ``v0`` (``None``: rest);
        the node keeps nothing afterwards. SpikingJelly's multi-step path keeps the graph from a tensor ``v0``."""
        node = self.node
        node.reset()
        node.step_mode = "m"  # functional.set_step_mode(net, "s") on an enclosing net must not break the adapter
        node.store_v_seq = return_state  # v_seq costs a [T, B, ...] buffer; keep it only when asked for
        try:
            if v0 is not None:
                node.v = v0
            spikes = node(x)
            return spikes, node.v_seq, node.v
        finally:
            node.reset()  # drop v / v_seq (and their graphs) so nothing survives the call


class _SJLeaky(_SJNode):
    """The options and the construction shared by SpikingJelly's leaky nodes, which differ in the node
    (:meth:`_node`)."""

    @checked
    def __init__(
        self,
        tau: Tau = 2.0,
        threshold: Positive = 1.0,
        reset: Reset = "soft",
        v_reset: Real = 0.0,
        surrogate: Surrogate = "sigmoid",
        surrogate_scale: Positive | None = None,
        detach_reset: Flag = False,
        decay_input: Flag = True,
    ):
        """The options (:class:`SJLIF`'s docstring), given to SpikingJelly's ``LIFNode`` (:class:`SJLIF`) or
        ``ParametricLIFNode`` (:class:`SJPLIF`).

        Args:
            tau: the membrane time constant (:class:`SJPLIF`: where the learned one starts), a number $> 1$
                (SpikingJelly's ``LIFNode`` needs it); default ``2.0``.
            threshold: the firing threshold (SpikingJelly's ``v_threshold``), a number $> 0$; default ``1.0``.
            reset: ``"soft"`` (default: subtract the threshold, SpikingJelly's ``v_reset=None``) or ``"hard"``
                (set the membrane to ``v_reset``).
            v_reset: the potential of a hard reset and the starting potential, any finite number; default ``0.0``;
                ignored by the soft reset.
            surrogate: the surrogate gradient family, ``"sigmoid"`` (default), ``"arctan"``,
                ``"piecewise_linear"`` or ``"gaussian"``: the same functions as fsnn's neurons (module docstring's
                surrogate families).
            surrogate_scale: the surrogate's sharpness, ``None`` (default: the family's, 5 for sigmoid) or a number
                $> 0$ (SpikingJelly's surrogate ``alpha``).
            detach_reset: ``True`` detaches the spike in the reset term (SpikingJelly's own); default ``False``.
            decay_input: ``True`` (default) divides the input by ``tau`` as well as the leak, as fsnn's f-LIF
                does; ``False`` adds it undivided.
        """
        super().__init__(threshold, reset, v_reset, surrogate, surrogate_scale)
        self.node = self._node(
            tau,
            decay_input=decay_input,
            v_threshold=self.threshold,
            v_reset=self.v_reset,
            surrogate_function=_sj_surrogate(self.surrogate, self.surrogate_scale),
            detach_reset=detach_reset,
            step_mode="m",
            store_v_seq=True,
        )

    def _node(self, tau: float, **options) -> nn.Module:  # pragma: no cover - abstract
        raise NotImplementedError


class SJLIF(_SJLeaky):
    r"""SpikingJelly 2.0.0 ``LIFNode`` (``step_mode='m'``), fresh state each call.

    With ``V[-1] = V_reset`` (``V_reset = v_reset`` for ``reset='hard'``, 0 in the charge for ``'soft'``)::

        decay_input=True :  H[t] = V[t-1] + (X[t] - (V[t-1] - V_reset)) / tau
        decay_input=False:  H[t] = V[t-1] - (V[t-1] - V_reset) / tau + X[t]
        S[t] = Heaviside(H[t] - threshold)          (fires on >=; surrogate gradient)
        hard: V[t] = S[t] V_reset + (1 - S[t]) H[t]    soft: V[t] = H[t] - S[t] threshold

    ``detach_reset=True`` detaches ``S`` in the reset term only. ``return_state=True`` gives ``V`` (post-reset, SJ's
    ``v_seq``). SpikingJelly needs ``tau > 1``.
    """

    def _node(self, tau: float, **options) -> nn.Module:
        self.tau = tau
        return sj_neuron.LIFNode(tau=tau, **options)


class SJPLIF(_SJLeaky):
    r"""SpikingJelly 2.0.0 ``ParametricLIFNode`` (PLIF, Fang et al. 2021; ``step_mode='m'``), fresh state each call:
    :class:`SJLIF` whose time constant is learned, ``1 / tau = sigmoid(w)`` with ``w`` a parameter of the layer
    started at ``tau`` (so ``tau > 1`` throughout). ``tau`` reads the current value."""

    def _node(self, tau: float, **options) -> nn.Module:
        return sj_neuron.ParametricLIFNode(init_tau=tau, **options)

    @property
    def tau(self) -> float:
        return float(1.0 / self.node.w.detach().sigmoid())

    def time_constant(self) -> torch.Tensor:
        return 1.0 / self.node.w.sigmoid()

    def time_constant_parameters(self) -> list[nn.Parameter]:
        return [self.node.w]


class SJIF(_SJNode):
    r"""SpikingJelly 2.0.0 ``IFNode`` (``step_mode='m'``), fresh state each call: :class:`SJLIF` with
    ``H[t] = V[t-1] + X[t]``. IFNode has no time constant, so only ``tau=1.0`` is accepted."""

    leak = False

    @checked
    def __init__(
        self,
        tau: number("1.0 (SpikingJelly's IFNode has no time constant)", lambda v: v == 1.0) = 1.0,
        threshold: Positive = 1.0,
        reset: Reset = "soft",
        v_reset: Real = 0.0,
        surrogate: Surrogate = "sigmoid",
        surrogate_scale: Positive | None = None,
        detach_reset: Flag = False,
    ):
        """The options of :class:`SJLIF` but ``decay_input`` (no leak, nothing to divide), with the same meanings and
        defaults (the signature's) but ``tau``'s.

        Args:
            tau: only ``1.0`` (the default), so that a config shared with the leaky neurons can name it.
            threshold: as in :class:`SJLIF`.
            reset: as in :class:`SJLIF`.
            v_reset: as in :class:`SJLIF`.
            surrogate: as in :class:`SJLIF`.
            surrogate_scale: as in :class:`SJLIF`.
            detach_reset: as in :class:`SJLIF`.
        """
        super().__init__(threshold, reset, v_reset, surrogate, surrogate_scale)
        self.tau = 1.0
        self.node = sj_neuron.IFNode(
            v_threshold=self.threshold,
            v_reset=self.v_reset,
            surrogate_function=_sj_surrogate(self.surrogate, self.surrogate_scale),
            detach_reset=detach_reset,
            step_mode="m",
            store_v_seq=True,
        )


class SnnTorchLeaky(_MembraneNeuron):
    r"""snnTorch 1.0.0 ``Leaky`` looped over T (``spk, mem = leaky(x[t], mem)``, ``mem`` starts at zeros).

    ``beta = 1 - 1/tau``; ``reset='soft'`` -> ``reset_mechanism='subtract'``, ``'hard'`` -> ``'zero'``. Per step,
    with ``R[t] = Heaviside(mem[t-1] - threshold)`` **detached** (delayed reset)::

        soft: U[t] = beta mem[t-1] + X[t] - R[t] threshold
        hard: U[t] = beta (1 - R[t]) mem[t-1] + X[t]
        S[t] = Heaviside(U[t] - threshold)          (fires on strict >, unlike SpikingJelly's >=)
        reset_delay=True : mem[t] = U[t]            (returned mem is pre-reset)
        reset_delay=False: soft mem[t] = U[t] - (S[t] - R[t]) threshold,  hard mem[t] = U[t] - (S[t] - R[t]) U[t]
                           (immediate reset, not detached; returned mem is post-reset)

    The input is never scaled by 1/tau, so ``reset_delay=False`` matches ``SJLIF(decay_input=False,
    detach_reset=False)`` (hard reset with ``v_reset=0``) up to the ``>`` / ``>=`` tie, for the soft reset only while
    the post-reset ``mem`` stays ``<= threshold`` (otherwise ``R`` lowers ``U`` before the next spike decision). With
    ``reset_delay=True`` the soft reset subtracts ``threshold`` where SpikingJelly subtracts ``beta * threshold``
    (snnTorch #341), and the hard reset acts one step late.
    ``return_state=True`` gives the returned ``mem`` per step.
    """

    @checked
    def __init__(
        self,
        tau: Tau = 2.0,
        threshold: Positive = 1.0,
        reset: Reset = "soft",
        surrogate: Surrogate = "sigmoid",
        surrogate_scale: Positive | None = None,
        reset_delay: Flag = False,
    ):
        """The options (module docstring), given to snnTorch's ``Leaky``.

        Args:
            tau: the time constant, a number $> 1$, giving snnTorch's decay ``beta = 1 - 1/tau``; default ``2.0``.
            threshold: the firing threshold, a number $> 0$; default ``1.0``.
            reset: ``"soft"`` (default: snnTorch's ``"subtract"``) or ``"hard"`` (``"zero"``).
            surrogate: as in :class:`SJLIF`, given as snnTorch's ``spike_grad``; default ``"sigmoid"``.
            surrogate_scale: its sharpness, ``None`` (default: the family's) or a number $> 0$.
            reset_delay: snnTorch's ``reset_delay``: ``True`` resets one step late (the returned ``mem`` is before
                the reset); default ``False`` (immediate reset, as SpikingJelly and fsnn).
        """
        super().__init__()
        self.tau, self.threshold, self.reset_mode = tau, threshold, reset
        self.surrogate, self.surrogate_scale = surrogate, check_surrogate(surrogate, surrogate_scale)
        self.leaky = snntorch.Leaky(
            beta=1.0 - 1.0 / self.tau,
            threshold=self.threshold,
            spike_grad=_snntorch_surrogate(self.surrogate, self.surrogate_scale),
            reset_mechanism="subtract" if reset == "soft" else "zero",
            reset_delay=reset_delay,
        )

    last_engine = "snntorch-loop"

    def time_constant(self) -> torch.Tensor:
        return torch.tensor(float(self.tau))

    def _sequence(self, x, return_state):
        spikes, mems, _ = self._loop(x, torch.zeros_like(x[0]), return_state)
        return spikes, mems

    def _chunk(self, x, state):
        spikes, mems, mem = self._loop(x, state.v, True)
        return spikes, mems, MembraneState(shape=state.shape, steps=state.steps + x.shape[0], v=mem)

    def _loop(self, x, mem, return_state):
        """``(spikes, mem per step or None, last mem)`` of ``spk, mem = leaky(x_t, mem)`` over ``x`` from ``mem``."""
        spikes, mems = [], []
        try:
            for x_t in x:
                spk, mem = self.leaky(x_t, mem)
                spikes.append(spk)
                if return_state:
                    mems.append(mem)
        finally:
            self.leaky.mem = x.new_zeros(0)  # Leaky keeps the last mem (and its graph) in a buffer: drop it
        # snnTorch's own surrogates return fp32 (``.float()``): restore the input dtype
        return torch.stack(spikes).to(x.dtype), (torch.stack(mems).to(x.dtype) if return_state else None), mem
