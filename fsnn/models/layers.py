"""Sequence layers shared by the backbones: every tensor is ``[T, B, ...]``.

Stateless layers (Conv, BatchNorm, pooling) see the whole sequence at once by merging ``T`` into the batch
(``[T*B, ...]``), as SpikingJelly's multi-step layers do; so BatchNorm statistics are taken over ``T*B`` samples.
Dropout keeps one mask per sample for all time steps. Spiking nonlinearities come only from
:func:`fsnn.neurons.registry.build_neuron` (:func:`fresh_neuron`), so that backbones never depend on a particular
neuron library. A backbone's registered factory is its class with a set of defaults (:func:`factory_of`), so that
each option is declared once, by the class.
"""

from __future__ import annotations

import inspect

import torch
from torch import nn

from fsnn.checks import Count, Probability, checked
from fsnn.neurons.registry import build_neuron
from fsnn.registry import require

__all__ = [
    "SeqAdaptiveAvgPool2d",
    "SeqBatchNorm1d",
    "SeqBatchNorm2d",
    "SeqConv1d",
    "SeqConv2d",
    "SeqDropPath",
    "SeqDropout",
    "SeqFold",
    "SeqMaxPool2d",
    "VotingLayer",
    "check_sequence",
    "factory_of",
    "fold",
    "fresh_neuron",
    "output_size",
]


def check_sequence(x: torch.Tensor, dims: int, name: str = "x") -> None:
    """Raise a ``ValueError`` unless ``x`` is a floating tensor with ``dims`` dimensions."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        got = f"dtype {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"{name} must be a floating-point tensor, got {got}")
    if x.dim() != dims:
        raise ValueError(f"{name} must have {dims} dimensions [T, B, ...], got shape {tuple(x.shape)}")


def fold(fn, x: torch.Tensor) -> torch.Tensor:
    """``fn`` applied to ``x`` with time merged into the batch: ``[T, B, ...] -> [T*B, ...] -> [T, B, ...]``."""
    if x.dim() < 3:
        raise ValueError(f"expected a sequence [T, B, ...] with at least one feature dimension, got {tuple(x.shape)}")
    T, B = x.shape[:2]
    y = fn(x.flatten(0, 1))
    return y.unflatten(0, (T, B))


class SeqFold(nn.Module):
    """Wrap any per-sample module so that it runs once on the merged sequence ``[T*B, ...]``."""

    def __init__(self, module: nn.Module):
        super().__init__()
        self.module = module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fold(self.module, x)


class _Folded:
    """Mixin: the layer's own ``forward`` on ``[T*B, ...]`` (parameter names stay those of the torch layer)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fold(super().forward, x)


class SeqConv2d(_Folded, nn.Conv2d):
    """``nn.Conv2d`` on ``[T, B, C, H, W]``."""


class SeqConv1d(_Folded, nn.Conv1d):
    """``nn.Conv1d`` on ``[T, B, C, L]``."""


class SeqBatchNorm2d(_Folded, nn.BatchNorm2d):
    """``nn.BatchNorm2d`` on ``[T, B, C, H, W]``: statistics over ``T*B*H*W``."""


class SeqBatchNorm1d(_Folded, nn.BatchNorm1d):
    """``nn.BatchNorm1d`` on ``[T, B, C, L]``: statistics over ``T*B*L``."""


class SeqMaxPool2d(_Folded, nn.MaxPool2d):
    """``nn.MaxPool2d`` on ``[T, B, C, H, W]``."""


class SeqAdaptiveAvgPool2d(_Folded, nn.AdaptiveAvgPool2d):
    """``nn.AdaptiveAvgPool2d`` on ``[T, B, C, H, W]``."""


class SeqDropout(nn.Module):
    """Dropout with one mask per sample shared by all time steps (SpikingJelly ``layer.Dropout``, multi-step).

    Training: ``x * m / (1 - p)`` with ``m ~ Bernoulli(1 - p)`` of shape ``x.shape[1:]``; evaluation: identity.
    """

    @checked
    def __init__(self, p: Probability = 0.5):
        super().__init__()
        self.p = p

    def extra_repr(self) -> str:
        return f"p={self.p}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = 1.0 - self.p
        mask = torch.empty_like(x[0]).bernoulli_(keep).div_(keep)
        return x * mask


class SeqDropPath(nn.Module):
    """Stochastic depth (``timm.layers.DropPath``) per sample, the same decision for all time steps.

    timm draws one decision per entry of dim 0, which is ``T`` here; moving ``B`` to the front makes it per sample.
    """

    @checked
    def __init__(self, p: Probability = 0.0):
        super().__init__()
        timm_layers = require("timm.layers", "SeqDropPath (timm's DropPath, in the Spikformer backbones)", "vision")
        self.drop = timm_layers.DropPath(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.drop.drop_prob == 0.0:
            return x
        return self.drop(x.transpose(0, 1)).transpose(0, 1)


class VotingLayer(nn.Module):
    """``[T, B, K*g] -> [T, B, K]``: mean over consecutive groups of ``g`` outputs (SpikingJelly ``VotingLayer``)."""

    @checked
    def __init__(self, group: Count = 10):
        super().__init__()
        self.group = group

    def extra_repr(self) -> str:
        return f"group={self.group}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] % self.group:
            raise ValueError(f"last dimension {x.shape[-1]} is not a multiple of the voting group {self.group}")
        return x.unflatten(-1, (x.shape[-1] // self.group, self.group)).mean(-1)


def fresh_neuron(neuron: str, neuron_kwargs: dict | None = None, **override) -> nn.Module:
    """A fresh multi-step neuron ``build_neuron(neuron, **neuron_kwargs, **override)`` (``override`` wins)."""
    kwargs = dict(neuron_kwargs or {})
    kwargs.update(override)
    return build_neuron(neuron, **kwargs)


def output_size(size: int, kernel: int, stride: int, padding: int = 0) -> int:
    """Spatial size after a convolution / pooling window (floor mode)."""
    return (size + 2 * padding - kernel) // stride + 1


def factory_of(cls: type, defaults: dict):
    """Decorator of a backbone's factory ``factory(**options)``, which builds ``cls``: called, it is given ``options``
    over ``defaults``. Its signature (``cls``'s arguments, by keyword, ``defaults`` replacing their defaults) and the
    ``Args:`` of its docstring say so, so that the registry reads its options from it and its documentation lists
    them: each option is declared once, by ``cls``."""
    signature = inspect.signature(cls, eval_str=True)
    parameters = [
        p.replace(kind=p.KEYWORD_ONLY, default=defaults.get(name, p.default))
        for name, p in signature.parameters.items()
    ]

    def decorate(factory):
        def build(**options):
            return factory(**{**defaults, **options})

        build.__name__, build.__qualname__, build.__module__ = (
            factory.__name__,
            factory.__qualname__,
            factory.__module__,
        )
        build.__signature__ = signature.replace(parameters=parameters, return_annotation=cls)
        build.__doc__ = "\n".join(
            [
                inspect.cleandoc(factory.__doc__),
                "",
                "Args:",
                *(f"    {p.name}: as in :class:`{cls.__name__}`; default ``{p.default!r}``." for p in parameters),
            ]
        )
        return build

    return decorate
