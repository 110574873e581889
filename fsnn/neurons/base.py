r"""The interface every fsnn neuron offers: a whole sequence, a chunk or one step at a time.

Three ways to run a neuron (fsnn's fractional neurons and the SpikingJelly / snnTorch adapters alike):

* **Whole sequence** (the default): ``spikes = neuron(x)`` with ``x`` of shape ``[T, B, ...]``; the state lives
  inside the call, so there is nothing to reset between batches.
* **Explicit state**, as snnTorch passes ``mem``: ``state = neuron.initial_state(x_t)``, then
  ``spikes, state = neuron(x, state)`` with ``x`` one step ``[B, ...]`` or a chunk ``[T, B, ...]``. A sequence run
  in chunks of any sizes gives the spikes of the whole-sequence run from the same state, and, through undetached
  states, its gradients; ``state.detach()`` at a chunk boundary is truncated backpropagation through time.
* **Held state**, as SpikingJelly's nodes hold ``v``: with ``neuron.step_mode = "s"`` each call ``neuron(x_t)``
  advances the neuron by one step and keeps the state in ``neuron.state`` until ``neuron.reset()``; ``detach()``
  cuts its graph. SpikingJelly's ``functional.set_step_mode(net, "s")``, ``functional.reset_net(net)`` and
  ``functional.detach_net(net)`` find these attributes on a network that mixes SpikingJelly layers with fsnn
  neurons (SpikingJelly logs that an fsnn neuron is not one of its ``MemoryModule`` s and calls it all the same).
  ``step_mode = "m"`` (the default) is the whole-sequence call; unlike SpikingJelly's multi-step nodes it starts
  from a fresh state every call.

Mapping: SpikingJelly ``node.v`` / snnTorch ``mem`` is ``state.v`` (the membrane after the reset);
``functional.reset_net`` is ``reset()`` (held) or a new ``initial_state`` (explicit); ``functional.detach_net`` /
snnTorch's ``mem.detach_()`` is ``detach()`` / ``state.detach()``.
"""

from __future__ import annotations

import torch
from torch import nn

from fsnn.checks import check_spike_input
from fsnn.neurons.state import NeuronState

STEP_MODES = ("m", "s")


def check_step_input(x) -> None:
    """Refuse, with one ``ValueError``, an ``x`` that is not one step's input (a floating tensor ``[B, ...]``) that
    :meth:`SpikingNeuron.initial_state` could make a state for."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() < 1:
        got = f"shape {list(x.shape)}, dtype {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must be one step's input, a floating tensor of shape [B, ...], got {got}")


class SpikingNeuron(nn.Module):
    """Base class of every neuron (module docstring): firing-rate probes and the energy count find neurons by this
    type. ``leak``: the membrane decays towards rest (LIF) or only integrates (IF).

    A subclass implements :meth:`initial_state`, :meth:`_sequence` (a whole sequence from a fresh state) and
    :meth:`_chunk` (a chunk from a given state)."""

    leak: bool = True
    #: the engine of the last forward (fsnn's neurons pick one per call; an adapter names its library's loop)
    last_engine: str | None = None
    #: the state type :meth:`initial_state` makes
    state_type: type[NeuronState] = NeuronState

    def __init__(self):
        super().__init__()
        self._step_mode = "m"
        self.state: NeuronState | None = None

    @property
    def step_mode(self) -> str:
        """``"m"`` (default): ``neuron(x)`` runs a whole sequence; ``"s"``: one step, the state held until
        :meth:`reset` (SpikingJelly's ``step_mode``)."""
        return self._step_mode

    @step_mode.setter
    def step_mode(self, mode: str) -> None:
        if mode not in STEP_MODES:
            raise ValueError(f"step_mode must be 's' (single step) or 'm' (multi-step), got {mode!r}")
        self._step_mode = mode

    def reset(self) -> None:
        """Forget the held state (SpikingJelly's ``reset``): the next single step starts from rest."""
        self.state = None

    def detach(self) -> None:
        """Cut the held state from the autograd graph (SpikingJelly's ``detach``): truncated BPTT."""
        if self.state is not None:
            self.state = self.state.detach()

    def time_constant(self) -> torch.Tensor | None:
        """The membrane time constant ``tau`` (any shape: one per layer or per channel), ``None`` without one."""
        return None

    def time_constant_parameters(self) -> list[nn.Parameter]:
        """The parameters that ``tau`` is learned through (empty when it is fixed): they may get their own learning
        rate (``tau_lr_scale``)."""
        return []

    def initial_state(self, x: torch.Tensor) -> NeuronState:  # pragma: no cover - abstract
        """The state at rest for steps shaped, typed and placed like ``x`` (one step's input, ``[B, ...]``)."""
        raise NotImplementedError

    def _sequence(self, x: torch.Tensor, return_state: bool):  # pragma: no cover - abstract
        """``(spikes, v or None)`` of the whole sequence ``x`` ``[T, B, ...]`` from a fresh state."""
        raise NotImplementedError

    def _chunk(self, x: torch.Tensor, state: NeuronState):  # pragma: no cover - abstract
        """``(spikes, v, state)`` of the chunk ``x`` ``[T, *state.shape]`` run from ``state``."""
        raise NotImplementedError

    def forward(self, x: torch.Tensor, state: NeuronState | None = None, *, return_state: bool = False):
        """Run the neuron (module docstring).

        Args:
            x: the input currents, a floating tensor: a whole sequence or chunk ``[T, B, ...]`` (time first, any
                trailing shape), or, with a ``state`` or in ``step_mode="s"``, one step ``[B, ...]``.
            state: ``None`` (default: a whole sequence from a fresh state, or in ``step_mode="s"`` the held state),
                or a state of this neuron's (:meth:`initial_state`, or returned by an earlier call) for steps of
                ``x``'s shape, device and dtype.
            return_state: ``True`` also returns the membrane potential after each step's reset; default ``False``.

        Returns:
            The spikes, 0 or 1, with the shape, dtype and device of ``x``; with ``return_state``, ``(spikes, v)``
                where ``v`` (same shape) is the membrane potential $V_k$ after step ``k``'s reset. With a ``state``,
                the new state follows: ``(spikes, state)`` or ``(spikes, v, state)``.
        """
        self._check_runnable(x)
        if state is None and self._step_mode == "m":
            check_spike_input(x)
            spikes, v = self._sequence(x, return_state)
            return (spikes, v) if return_state else spikes
        held = state is None
        if held:
            if self.state is None:
                check_spike_input(x[None] if isinstance(x, torch.Tensor) else x)
                self.state = self.initial_state(x)
            state = self.state
        one_step = self._check_state(x, state)
        spikes, v, state = self._chunk(x[None] if one_step else x, state)
        if one_step:
            spikes, v = spikes[0], v[0]
        if held:
            self.state = state
            return (spikes, v) if return_state else spikes
        return (spikes, v, state) if return_state else (spikes, state)

    def _check_state(self, x: torch.Tensor, state) -> bool:
        """Whether ``x`` is one step (``False``: a chunk) of the steps ``state`` is for; one ``ValueError`` naming
        what does not fit otherwise."""
        name = type(self).__name__
        if not isinstance(state, self.state_type):
            raise ValueError(
                f"state must be a {self.state_type.__name__} made by this {name}'s initial_state (or returned by "
                f"its forward), got {type(state).__name__}"
            )
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            got = f"dtype {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x must be a floating-point tensor, got {got}")
        shape = tuple(state.shape)
        if tuple(x.shape) == shape:
            one_step = True
        elif x.dim() == len(shape) + 1 and tuple(x.shape[1:]) == shape and x.shape[0] >= 1:
            one_step = False
        else:
            raise ValueError(
                f"x must be one step {list(shape)} or a chunk [T, {', '.join(map(str, shape))}] for this state "
                f"(made for steps of shape {list(shape)}), got shape {list(x.shape)}; a state belongs to one layer "
                "and one batch: make a new one with initial_state(x_t)"
            )
        if x.device != state.device or (x.dtype != state.dtype and not self._accepts_dtype(x.dtype, state.dtype)):
            raise ValueError(
                f"x is {x.dtype} on {x.device} but the state holds {state.dtype} on {state.device}; move one of "
                "them (state.to(x))"
            )
        check_spike_input(x[None] if one_step else x)
        self._check_state_kind(state)
        return one_step

    def _check_runnable(self, x) -> None:
        """Refuse, before any value is read, an input this neuron cannot run at all (one error)."""

    def _accepts_dtype(self, x_dtype: torch.dtype, state_dtype: torch.dtype) -> bool:
        """Whether input of ``x_dtype`` runs on a state of ``state_dtype`` (half precision integrates in float32)."""
        return x_dtype in (torch.float16, torch.bfloat16) and state_dtype == torch.float32

    def _check_state_kind(self, state: NeuronState) -> None:
        """Refuse a state of the right type that this neuron cannot continue (one ``ValueError``)."""


__all__ = ["STEP_MODES", "SpikingNeuron", "check_step_input"]
