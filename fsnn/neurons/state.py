r"""The state a neuron carries from one time step (or chunk of steps) to the next.

A whole-sequence call (``neuron(x)``, ``x`` of shape ``[T, B, ...]``) keeps its state inside the call. A stepped or
chunked run carries it outside, in one of these values: ``state = neuron.initial_state(x_t)`` for one step's input
``x_t`` of shape ``[B, ...]``, then ``spikes, state = neuron(x, state)`` with ``x`` one step ``[B, ...]`` or a chunk
``[T, B, ...]`` (:class:`fsnn.neurons.base.SpikingNeuron`).

A state is an immutable value made of tensors: each call returns a new one, and the old one stays valid (run two
continuations from one state). It moves like a tensor (:meth:`NeuronState.to`), cuts the autograd graph like one
(:meth:`NeuronState.detach`: truncated backpropagation through time), pickles, and is a dataclass, so
``torch.distributed``'s helpers move it to a device with the rest of a module's inputs.

* :class:`MembraneState`: a first-order neuron's membrane potential $V$ (SpikingJelly's ``v``, snnTorch's ``mem``).
* :class:`HistoryState`: a fractional neuron's memory. Its size depends on how the history is summed:

  ======================  ===================================================  ===========================
  kind                    what it holds                                        size (per neuron)
  ======================  ===================================================  ===========================
  ``exact``               every current that entered the history so far        grows: one value per step
  ``window``              the last ``memory`` currents (short-memory window)   ``memory``
  ``soe``                 ``head`` exact currents and the exponential modes    ``head + modes`` (constant)
  ``spikede``             the official toolbox's currents (full or windowed)   as ``exact`` / ``window``
  ======================  ===================================================  ===========================

  plus the membrane potential $V$ after the last step (the leak's $V_{k-1}$).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from fsnn.neurons.memory import SOEBank


@dataclass(frozen=True, eq=False)
class NeuronState:
    """Base of every neuron state: the shape of one step's input and how many steps it has seen.

    Args:
        shape: the shape of one step's input ``[B, ...]`` (a chunk is ``[T, *shape]``).
        steps: how many time steps the state has advanced since :meth:`fsnn.neurons.base.SpikingNeuron.initial_state`.
    """

    shape: tuple[int, ...]
    steps: int

    def _tensors(self) -> dict[str, torch.Tensor]:
        return {f.name: v for f in dataclasses.fields(self) if isinstance(v := getattr(self, f.name), torch.Tensor)}

    def _map(self, fn) -> NeuronState:
        return dataclasses.replace(self, **{name: fn(t) for name, t in self._tensors().items()})

    def to(self, *args, **kwargs) -> NeuronState:
        """The state with every tensor moved or cast as ``Tensor.to(*args, **kwargs)`` moves or casts it."""
        return self._map(lambda t: t.to(*args, **kwargs))

    def detach(self) -> NeuronState:
        """The state with every tensor cut from the autograd graph: gradients stop here (truncated BPTT)."""
        return self._map(torch.Tensor.detach)

    @property
    def device(self) -> torch.device:
        return self.v.device

    @property
    def dtype(self) -> torch.dtype:
        return self.v.dtype

    def numel(self) -> int:
        """How many numbers the state holds (its memory is this times the dtype's size)."""
        return sum(t.numel() for t in self._tensors().values())


@dataclass(frozen=True, eq=False)
class MembraneState(NeuronState):
    """A first-order neuron's state: the membrane potential after the last step.

    Args:
        v: the membrane potential, shape :attr:`shape`.
    """

    v: torch.Tensor


@dataclass(frozen=True, eq=False)
class HistoryState(NeuronState):
    r"""A fractional neuron's state (module docstring): the membrane after the last step and its memory.

    Args:
        v: the membrane potential $V$ after the last step, ``[N]`` (``N``: the elements of one step).
        history: the last currents that entered the history, oldest first, ``[L, N]`` ($\gamma_j = K_0 g_j$ of
            :mod:`fsnn.neurons.dynamics`; the spikeDE convention's currents $f_j$).
        modes: ``[W, N]``, the exponential modes of the ``soe`` kind (older currents summed with their decays);
            ``None`` otherwise.
        kind: ``"exact"``, ``"window"``, ``"soe"`` or ``"spikede"`` (module docstring).
        bank: the ``soe`` kind's exponential bank, fixed when the state was made; ``None`` otherwise.
    """

    v: torch.Tensor
    history: torch.Tensor
    modes: torch.Tensor | None
    kind: str
    bank: SOEBank | None = None


__all__ = ["HistoryState", "MembraneState", "NeuronState"]
