"""fsnn: fractional-order spiking neural networks (f-SNN, ICLR 2026) in PyTorch.

>>> from fsnn import FractionalLIF
>>> spikes = FractionalLIF(alpha=0.5)(currents)  # currents: [T, B, ...]

``import fsnn`` needs only torch; the baselines (``fsnn[baselines]``), the training suite (``fsnn[vision]``,
``fsnn[graph]``) and the sweeps (``fsnn[sweeps]``) load their libraries when used.
"""

from fsnn.history import history_kernel, soe_bank
from fsnn.neurons import (
    FractionalIF,
    FractionalLIF,
    FractionalNeuron,
    build_neuron,
    collect_alphas,
    neuron_names,
    neuron_params,
    register_neuron,
)
from fsnn.surrogate import SURROGATES, spike

__all__ = [
    "FractionalIF",
    "FractionalLIF",
    "FractionalNeuron",
    "SURROGATES",
    "build_neuron",
    "collect_alphas",
    "history_kernel",
    "neuron_names",
    "neuron_params",
    "register_neuron",
    "soe_bank",
    "spike",
]
__version__ = "0.1.0"
