r"""SeqMLP: a small spiking MLP for sequence tasks, read out at the end of the sequence.

>>> from fsnn.models import build_backbone
>>> model = build_backbone("seqmlp", in_features=17, num_classes=4, readout_steps=4, neuron="flif")
>>> out = model(x)  # x: [T, B, 17] -> out: [4, B, 4], the readout at each of the last 4 steps (average them)

``layers`` x [Linear - BatchNorm (statistics over T*B) - neuron] -> Linear readout of the last layer's spikes at each
of the last ``readout_steps`` steps. Without recurrence nothing but the neurons carries information across time: the
layers are applied step by step and the readout sees only the last steps, so whatever the network remembers of an
early input lives in the membranes (f-LIF's power-law history, LIF's exponential one).

``recurrent=True`` adds ``R s_{t-1}`` to every hidden layer's input current at step ``t``:
``I_t = BN(W x_t) + R s_{t-1}``. The neuron then runs one step at a time with its state carried between steps
(``s_t, state = neuron(I_t, state)``, :mod:`fsnn.neurons.base`), which every registered neuron offers: fsnn's
fractional neurons keep their history in a state (a constant one for the sum of exponentials,
:mod:`fsnn.neurons.state`), the SpikingJelly and snnTorch neurons their membrane. A step cannot be fused over time
(the next input needs this step's spikes), so a recurrent layer costs one neuron step per time step: the
per-step path of :mod:`fsnn.neurons.stepping`, not the whole-sequence engines. Recurrence is "memory through the
network" beside f-LIF's "memory in the neuron".
"""

from __future__ import annotations

import torch
from torch import nn

from fsnn.checks import Count, Flag, checked
from fsnn.models.layers import SeqBatchNorm1d, check_sequence, factory_of, fresh_neuron
from fsnn.models.registry import register_backbone

__all__ = ["SeqMLP", "SpikingLinear", "seqmlp"]


class SpikingLinear(nn.Module):
    """``[T, B, in] -> spikes [T, B, out]``: ``S = neuron(BN(W x))``, or with ``recurrent`` the step-by-step
    ``S_t, state = neuron(BN(W x)_t + R S_{t-1}, state)`` (``S_{-1} = 0``, the state from the neuron's
    ``initial_state``), for any registered neuron."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        neuron: str,
        neuron_kwargs: dict | None,
        recurrent: bool = False,
        norm: bool = True,
    ):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=not norm)
        self.norm = SeqBatchNorm1d(out_features) if norm else nn.Identity()
        self.neuron = fresh_neuron(neuron, neuron_kwargs)
        self.recurrent = nn.Linear(out_features, out_features, bias=False) if recurrent else None
        if recurrent and not hasattr(self.neuron, "initial_state"):
            raise ValueError(
                f"recurrent=True needs a neuron that runs one step at a time from a state (initial_state, "
                f"neuron(x_t, state)); neuron {neuron!r} has none; use recurrent=False"
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        current = self.norm(self.linear(x))
        if self.recurrent is None:
            return self.neuron(current)
        state = self.neuron.initial_state(current[0])
        s = current.new_zeros(current.shape[1:])
        spikes = []
        for current_t in current:
            s, state = self.neuron(current_t + self.recurrent(s), state)
            spikes.append(s)
        return torch.stack(spikes)


class SeqMLP(nn.Module):
    """Spiking MLP for sequences ``[T, B, in_features] -> [readout_steps, B, num_classes]`` (module docstring).

    Args:
        in_features: supplied by the task (:func:`fsnn.models.register_backbone`); default ``17``
            (``delayed_cue``'s 16 channels and "go").
        num_classes: supplied by the task (:func:`fsnn.models.register_backbone`); default ``4``.
        readout_steps: supplied by the task (:func:`fsnn.models.register_backbone`); default ``1``.
        neuron: supplied by the task (:func:`fsnn.models.register_backbone`); default ``"flif"``.
        neuron_kwargs: supplied by the task (:func:`fsnn.models.register_backbone`); default ``None``.
        hidden: the width of every hidden layer, an integer >= 1; default ``64``.
        layers: the number of hidden Linear-BN-neuron layers, an integer >= 1; default ``2``.
        recurrent: ``True`` adds ``R s_{t-1}`` to every hidden layer's input, stepping its neuron (see the module
            docstring); default ``False``.
        norm: ``True`` (default) batch-normalises every hidden layer's currents over ``T * B`` (its Linear then has
            no bias); ``False``: no normalisation, a Linear with bias.
    """

    @checked
    def __init__(
        self,
        in_features: Count,
        num_classes: Count,
        readout_steps: Count = 1,
        hidden: Count = 64,
        layers: Count = 2,
        recurrent: Flag = False,
        norm: Flag = True,
        neuron: str = "flif",
        neuron_kwargs: dict | None = None,
    ):
        super().__init__()
        self.in_features, self.num_classes, self.readout_steps = in_features, num_classes, readout_steps
        sizes = [self.in_features] + [hidden] * layers
        self.layers = nn.Sequential(
            *(SpikingLinear(a, b, neuron, neuron_kwargs, recurrent, norm) for a, b in zip(sizes[:-1], sizes[1:]))
        )
        self.readout = nn.Linear(hidden, self.num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_sequence(x, 3)
        if x.shape[2] != self.in_features or x.shape[0] < self.readout_steps:
            raise ValueError(
                f"seqmlp was built for [T >= {self.readout_steps}, B, {self.in_features}] inputs, got {tuple(x.shape)}"
            )
        return self.readout(self.layers(x)[-self.readout_steps :])


@register_backbone("seqmlp", supports={"sequence"})
@factory_of(SeqMLP, {"in_features": 17, "num_classes": 4})
def seqmlp(**options) -> SeqMLP:
    """:class:`SeqMLP`: two hidden layers of 64 by default (5,956 parameters for ``delayed_cue``'s 17 inputs and 4
    classes).

    Takes ``[T, B, in_features]`` sequences and returns the readout at each of the last ``readout_steps`` steps,
    ``[readout_steps, B, num_classes]`` (averaged into the logits by :class:`fsnn.suite.training.SpikingClassifier`).
    """
    return SeqMLP(**options)
