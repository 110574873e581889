"""fsnn: fractional-order spiking neural networks (f-SNN, ICLR 2026) in PyTorch.

>>> from fsnn import FractionalLIF
>>> spikes = FractionalLIF(alpha=0.5)(currents)  # currents: [T, B, ...]

``import fsnn`` needs only torch; the baselines (``fsnn[baselines]``), the training suite (``fsnn[vision]``,
``fsnn[graph]``) and the sweeps (``fsnn[sweeps]``) load their libraries when used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# The names below are imported on first use (PEP 562), so that the commands (fsnn.suite.cli) answer --help and refuse a
# typo without loading torch; static tools (type checkers, the API docs) read them from this block.
if TYPE_CHECKING:
    from fsnn.neurons.fractional import FractionalIF, FractionalLIF, FractionalNeuron, collect_alphas
    from fsnn.neurons.memory import history_kernel, soe_bank
    from fsnn.neurons.registry import build_neuron, neuron_names, neuron_params, register_neuron
    from fsnn.neurons.surrogate import SURROGATES, spike

_HOMES = {
    "fsnn.neurons.memory": ("history_kernel", "soe_bank"),
    "fsnn.neurons.fractional": ("FractionalIF", "FractionalLIF", "FractionalNeuron", "collect_alphas"),
    "fsnn.neurons.registry": ("build_neuron", "neuron_names", "neuron_params", "register_neuron"),
    "fsnn.neurons.surrogate": ("SURROGATES", "spike"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = sorted(_HOME)
__version__ = "0.1.0"


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module 'fsnn' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
