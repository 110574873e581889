"""The one model registry (timm style): every backbone, vision, graph or sequence, by name, with the data kinds it
takes and its options (the annotated keyword arguments of its factory, :meth:`fsnn.registry.Registry.schema`).

Families register their factories with :func:`register_backbone` in their own module (``dvsnet.py``, ``sgcn.py``,
...); this module imports none of them, so a family can import it without a cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from torch import nn

from fsnn.registry import Registry

# what the task gives a backbone from its data and its neuron: no options of the backbone's config
SUPPLIED = ("num_classes", "in_channels", "input_size", "in_features", "readout_steps", "neuron", "neuron_kwargs")
BACKBONES = Registry("backbone", supplied=SUPPLIED)
# arguments that, given as None, leave the factory's own default (a config's null, a builder's "not set")
_DEFAULTED = ("num_classes", "in_channels", "input_size", "in_features", "neuron", "T")


def register_backbone(name: str, *, supports: Iterable[str] = ("event", "static")):
    """Decorator registering a factory under ``name``; ``supports`` lists the data kinds it accepts
    (:data:`fsnn.data.common.DATA_KINDS`; a task refuses a dataset of another kind by name). Vision factories
    take ``num_classes``, ``in_channels``, ``input_size``, graph ones ``in_features``, ``num_classes``, ``T``, sequence
    ones ``in_features``, ``num_classes``, ``readout_steps``; all take ``neuron`` and ``neuron_kwargs``. Its other
    keyword arguments are its options (``conf/backbone/<name>.yaml``), checked by their annotated types."""
    kinds = frozenset(supports)
    if not kinds or not all(isinstance(kind, str) for kind in kinds):
        raise ValueError(f"supports must name at least one kind of data, got {sorted(map(repr, kinds))}")
    return BACKBONES.register(name, supports=kinds)


def backbone_names(kind: str | None = None) -> list[str]:
    """Registered backbones, or those that take data of ``kind``."""
    return BACKBONES.names() if kind is None else BACKBONES.names(supports=kind)


def backbone_supports(name: str) -> set[str]:
    """Data kinds (``"event"``, ``"static"``, ``"graph"``, ``"sequence"``) that backbone ``name`` accepts."""
    return set(BACKBONES.meta(name)["supports"])


def build_backbone(name: str, neuron_kwargs: Mapping | None = None, **kwargs) -> nn.Module:
    """Build backbone ``name``. ``num_classes``, ``in_channels``, ``input_size``, ``in_features``, ``neuron`` or ``T``
    given as ``None`` take the factory's default; ``neuron_kwargs`` go to every neuron of the model (layer-specific
    overrides such as Spikformer's attention threshold are applied by the backbone). An argument the factory does
    not take raises ``ValueError``."""
    kwargs = {k: v for k, v in kwargs.items() if v is not None or k not in _DEFAULTED}
    size = kwargs.get("input_size")
    if isinstance(size, Sequence):
        kwargs["input_size"] = tuple(int(s) for s in size)  # lists / OmegaConf ListConfig
    return BACKBONES.create(name, neuron_kwargs=dict(neuron_kwargs or {}), **kwargs)


def _plain(node):
    """A config tree (an OmegaConf node or plain containers) as plain dicts and lists, its interpolations resolved."""
    if isinstance(node, Mapping):
        return {key: _plain(value) for key, value in node.items()}
    if isinstance(node, Sequence) and not isinstance(node, str):
        return [_plain(value) for value in node]
    return node


def backbone_options(config: Mapping) -> dict:
    """The arguments of :func:`build_backbone` that a run's config gives: its ``backbone`` group's options, and the
    ``neuron`` group's name and options.

    Args:
        config: a run's config with the groups ``backbone`` and ``neuron``: the composed ``DictConfig`` or the plain
            dict a ``metrics.json`` stores.
    """
    backbone, neuron = _plain(config["backbone"]), _plain(config["neuron"])
    return {
        "neuron": neuron.pop("name"),
        "neuron_kwargs": neuron,
        **{key: value for key, value in backbone.items() if key != "name"},
    }
