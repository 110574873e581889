"""fsnn: fractional-order spiking neural networks (f-SNN, ICLR 2026) in PyTorch.

>>> from fsnn import FractionalLIF
>>> spikes = FractionalLIF(alpha=0.5)(currents)  # currents: [T, B, ...]
"""

from fsnn.history import history_kernel, soe_bank
from fsnn.neurons import (
    FractionalIF,
    FractionalLIF,
    FractionalNeuron,
    build_neuron,
    collect_alphas,
    neuron_names,
    register_neuron,
)
from fsnn.surrogate import SURROGATES, spike
from fsnn import baselines  # noqa: E402,F401  (registers sj_lif, sj_if, snntorch_leaky)

__all__ = [
    "FractionalIF",
    "FractionalLIF",
    "FractionalNeuron",
    "SURROGATES",
    "build_neuron",
    "collect_alphas",
    "history_kernel",
    "neuron_names",
    "register_neuron",
    "soe_bank",
    "spike",
]
__version__ = "0.1.0"
