"""The one model registry (timm style): every backbone, vision or graph, by name, with the data kinds it takes.

Families register their factories with :func:`register_backbone` in their own module (``dvsnet.py``, ``sgcn.py``,
...); this module imports none of them, so a family can import it without a cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from torch import nn

from fsnn.registry import Registry

#: the kinds of data a dataset can be (``fsnn.data.DatasetInfo.kind``) and a backbone can take
DATA_KINDS = frozenset({"event", "static", "graph", "sequence"})

BACKBONES = Registry("backbone")
_SUPPORTS: dict[str, frozenset[str]] = {}
# arguments that, given as None, leave the factory's own default (a config's null, a builder's "not set")
_DEFAULTED = ("num_classes", "in_channels", "input_size", "in_features", "neuron", "T")


def register_backbone(name: str, *, supports: Iterable[str] = ("event", "static")):
    """Decorator registering a factory under ``name``; ``supports`` lists the data kinds it accepts. Vision factories
    take ``num_classes``, ``in_channels``, ``input_size``, graph ones ``in_features``, ``num_classes``, ``T``, sequence
    ones ``in_features``, ``num_classes``, ``readout_steps``; all take ``neuron`` and ``neuron_kwargs``."""
    kinds = frozenset(supports)
    if not kinds or not kinds <= DATA_KINDS:
        raise ValueError(f"supports must be a non-empty subset of {sorted(DATA_KINDS)}, got {sorted(kinds)}")

    def decorator(factory):
        BACKBONES.register(name)(factory)
        _SUPPORTS[name] = kinds
        return factory

    return decorator


def backbone_names(kind: str | None = None) -> list[str]:
    """Registered backbones, or those that take data of ``kind``."""
    return [n for n in BACKBONES.names() if kind is None or kind in _SUPPORTS[n]]


def backbone_supports(name: str) -> set[str]:
    """Data kinds (``"event"``, ``"static"``, ``"graph"``, ``"sequence"``) that backbone ``name`` accepts."""
    BACKBONES.factory(name)
    return set(_SUPPORTS[name])


def build_backbone(name: str, neuron_kwargs: Mapping | None = None, **kwargs) -> nn.Module:
    """Build backbone ``name``. ``num_classes``, ``in_channels``, ``input_size``, ``in_features``, ``neuron`` or ``T``
    given as ``None`` take the factory's default; ``neuron_kwargs`` go to every neuron of the model (layer-specific
    overrides such as Spikformer's attention threshold are applied by the backbone). An argument the factory does
    not take raises ``ValueError``."""
    kwargs = {k: v for k, v in kwargs.items() if v is not None or k not in _DEFAULTED}
    size = kwargs.get("input_size")
    if isinstance(size, Sequence):
        kwargs["input_size"] = tuple(int(s) for s in size)  # lists / OmegaConf ListConfig
    return BACKBONES.build(name, neuron_kwargs=dict(neuron_kwargs or {}), **kwargs)
