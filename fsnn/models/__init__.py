"""Spiking backbones (timm-style registry): every model maps ``[T, B, C, H, W] -> [T, B, num_classes]``.

>>> from fsnn.models import build_backbone
>>> model = build_backbone("dvsnet", num_classes=11, in_channels=2, input_size=(128, 128),
...                        neuron="flif", neuron_kwargs={"alpha": 0.5})
>>> out = model(x)  # x: [T, B, 2, 128, 128] -> out: [T, B, 11] (per-step outputs; average over T)

Every spiking nonlinearity is ``fsnn.build_neuron(neuron, **neuron_kwargs)`` (a fresh module per layer), so runs
that compare neurons differ only in the neuron. Factories are registered with :func:`register_backbone` and declare
the data kinds they accept (``"event"``, ``"static"``, ``"graph"``), see :func:`backbone_supports`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping

from torch import nn

__all__ = [
    "BACKBONES",
    "DATA_KINDS",
    "backbone_names",
    "backbone_supports",
    "build_backbone",
    "register_backbone",
]

DATA_KINDS = frozenset({"event", "static", "graph"})

BACKBONES: dict[str, Callable[..., nn.Module]] = {}
_SUPPORTS: dict[str, frozenset[str]] = {}


def register_backbone(name: str, *, supports: Iterable[str] = ("event", "static")):
    """Decorator registering a factory ``fn(num_classes=..., in_channels=..., input_size=..., neuron=...,
    neuron_kwargs=..., **kwargs) -> nn.Module`` under ``name``; ``supports`` lists the data kinds it accepts."""
    kinds = frozenset(supports)
    if not kinds or not kinds <= DATA_KINDS:
        raise ValueError(f"supports must be a non-empty subset of {sorted(DATA_KINDS)}, got {sorted(kinds)}")

    def decorator(fn):
        if name in BACKBONES and BACKBONES[name] is not fn:
            raise ValueError(f"backbone {name!r} is already registered")
        BACKBONES[name] = fn
        _SUPPORTS[name] = kinds
        fn.supports = set(kinds)
        return fn

    return decorator


def backbone_names() -> list[str]:
    return sorted(BACKBONES)


def _check_name(name: str) -> None:
    if name not in BACKBONES:
        raise ValueError(f"backbone must be one of {backbone_names()}, got {name!r}")


def backbone_supports(name: str) -> set[str]:
    """Data kinds (``"event"``, ``"static"``, ``"graph"``) that backbone ``name`` accepts."""
    _check_name(name)
    return set(_SUPPORTS[name])


def build_backbone(
    name: str,
    num_classes: int | None = None,
    in_channels: int | None = None,
    input_size: int | tuple[int, int] | None = None,
    neuron: str = "flif",
    neuron_kwargs: Mapping | None = None,
    **backbone_kwargs,
) -> nn.Module:
    """Build backbone ``name``; arguments left ``None`` take the factory's default.

    ``neuron_kwargs`` go to every neuron of the model (layer-specific overrides such as Spikformer's attention
    threshold are applied by the backbone). Unknown ``backbone_kwargs`` raise ``ValueError``.
    """
    _check_name(name)
    factory = BACKBONES[name]
    kwargs = {"num_classes": num_classes, "in_channels": in_channels, "input_size": input_size}
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    if input_size is not None and not isinstance(input_size, int):
        kwargs["input_size"] = tuple(int(s) for s in input_size)  # lists / OmegaConf ListConfig
    kwargs["neuron"] = neuron
    kwargs["neuron_kwargs"] = dict(neuron_kwargs or {})
    params = inspect.signature(factory).parameters
    unknown = sorted(set(backbone_kwargs) - set(params))
    if unknown:
        allowed = sorted(k for k in params if k not in kwargs and k not in ("num_classes", "in_channels", "input_size"))
        raise ValueError(f"backbone {name!r} does not take {unknown}; it accepts {allowed}")
    kwargs.update(backbone_kwargs)
    return factory(**kwargs)


# the model families register themselves on import (timm style: one file per family)
from fsnn.models import dvsnet, resnet, spikformer  # noqa: E402,F401

from fsnn.models.dvsnet import DVSNet  # noqa: E402
from fsnn.models.resnet import SpikingResNet  # noqa: E402
from fsnn.models.spikformer import Spikformer  # noqa: E402

__all__ += ["DVSNet", "SpikingResNet", "Spikformer"]
