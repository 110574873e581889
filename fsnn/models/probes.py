"""Probes of a model's spiking activity: forward hooks that count the spikes of every neuron (and of every module with
``emits_spikes = True``, e.g. an input encoder) over the forwards of a block.

>>> with firing_rates(model) as rates:
...     model(x)
>>> rates  # {module name: spikes / elements}

The training modules of the suite measure a test pass's rates with :class:`SpikeRateMeter`, and the energy estimate
(:func:`fsnn.models.energy.synaptic_energy`) reads them.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

import torch
from torch import nn

from fsnn.neurons.registry import is_neuron

__all__ = ["SpikeRateMeter", "firing_rates"]


class SpikeRateMeter:
    """Forward hooks on every neuron (and every module with ``emits_spikes = True``, e.g. an input encoder) of
    ``model``: ``rates()`` gives ``{module name: spikes / elements}`` over all forwards between ``start`` and ``stop``,
    in the order of ``model.named_modules()`` (the order the model registers them). ``reduce`` (e.g. a DDP strategy's
    sum over ranks) is applied to the ``[modules, 2]`` totals first."""

    def __init__(self, model: nn.Module, reduce: Callable[[torch.Tensor], torch.Tensor] | None = None):
        self.model, self.reduce = model, reduce
        self.totals: dict[str, list[float]] = {}
        self.deferred: list[tuple[str, object]] = []  # spikes that count themselves once drawn (PoissonSpikes)
        self.handles: list = []

    def start(self) -> "SpikeRateMeter":
        self.stop()
        self.totals, self.deferred = {}, []
        for name, module in self.model.named_modules():
            if is_neuron(module) or getattr(module, "emits_spikes", False):
                self.totals[name] = [0.0, 0]  # every rank reduces the same modules, fired or not
                self.handles.append(module.register_forward_hook(self._hook(name)))
        return self

    def _hook(self, name):
        def hook(_module, _inputs, output):
            spikes = output[0] if isinstance(output, tuple) else output
            entry = self.totals[name]
            if isinstance(spikes, torch.Tensor):
                entry[0] += float(spikes.detach().sum())
            else:  # an encoder's structured spikes (fsnn.models.poisson.PoissonSpikes) are drawn after the hook
                self.deferred.append((name, spikes))
            entry[1] += spikes.numel()

        return hook

    def stop(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def rates(self) -> dict[str, float]:
        for name, spikes in self.deferred:
            self.totals[name][0] += spikes.count()
        self.deferred = []
        names = list(self.totals)
        totals = torch.tensor([self.totals[n] for n in names], dtype=torch.float64).reshape(-1, 2)
        if self.reduce is not None:
            totals = self.reduce(totals)
        return {name: float(total / count) for name, (total, count) in zip(names, totals.tolist()) if count}


@contextmanager
def firing_rates(model: nn.Module, reduce: Callable[[torch.Tensor], torch.Tensor] | None = None):
    """``with firing_rates(model) as rates: ...``: ``rates`` is filled on exit with ``{module name: firing rate}``
    (``reduce``: see :class:`SpikeRateMeter`)."""
    meter = SpikeRateMeter(model, reduce).start()
    rates: dict[str, float] = {}
    try:
        yield rates
    finally:
        meter.stop()
        rates.update(meter.rates())
