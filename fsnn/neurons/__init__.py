"""The neuron library: fractional-order spiking neurons and the integer-order baselines, layered as SpikingJelly
layers its own.

- :mod:`~fsnn.neurons.memory`: the memory kernels of the Caputo derivative (predictor, Grünwald-Letnikov, L1) and
  their sum-of-exponentials approximation;
- :mod:`~fsnn.neurons.dynamics`: the charge-fire-reset step as pure state-transition functions;
- :mod:`~fsnn.neurons.engines`: the fast forward and backward passes (an autograd function) in torch;
- :mod:`~fsnn.neurons.triton_kernels`: the same passes as fused Triton kernels for CUDA tensors;
- :mod:`~fsnn.neurons.surrogate`: the surrogate gradients of the spike;
- :mod:`~fsnn.neurons.fractional`: the ``nn.Module`` s that hold the parameters (:class:`FractionalLIF`,
  :class:`FractionalIF`);
- :mod:`~fsnn.neurons.dispatch`: which engine runs a call of theirs, and the call;
- :mod:`~fsnn.neurons.registry`: the neuron registry (:func:`build_neuron`) and each neuron's label for a reader;
- :mod:`~fsnn.neurons.baselines`: SpikingJelly's and snnTorch's neurons behind the same ``[T, B, ...]`` interface.

Nothing here imports the training suite or the reports.
"""

from fsnn.neurons.base import SpikingNeuron
from fsnn.neurons.fractional import FractionalIF, FractionalLIF, FractionalNeuron, collect_alphas
from fsnn.neurons.memory import history_kernel, soe_bank
from fsnn.neurons.registry import build_neuron, neuron_names, neuron_params, register_neuron
from fsnn.neurons.surrogate import SURROGATES, spike

__all__ = [
    "SURROGATES",
    "FractionalIF",
    "FractionalLIF",
    "FractionalNeuron",
    "SpikingNeuron",
    "build_neuron",
    "collect_alphas",
    "history_kernel",
    "neuron_names",
    "neuron_params",
    "register_neuron",
    "soe_bank",
    "spike",
]
