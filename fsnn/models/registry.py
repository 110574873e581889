"""The one model registry (timm style): every backbone, vision, graph or sequence, by name, with the data kinds it
takes and its options (the annotated keyword arguments of its factory, :meth:`fsnn.registry.Registry.schema`).

Families register their factories with :func:`register_backbone` in their own module (``dvsnet.py``, ``sgcn.py``,
...); this module imports none of them, so a family can import it without a cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from torch import nn

from fsnn.registry import Registry

# what the task gives a backbone from its data and its neuron: no options of the backbone's config
SUPPLIED = ("num_classes", "in_channels", "input_size", "in_features", "readout_steps", "neuron", "neuron_kwargs")


@dataclass(frozen=True)
class BackboneMeta:
    """What a task asks of a backbone before it builds one, given at its registration (:func:`register_backbone`).

    Args:
        supports: the data kinds it takes (:data:`fsnn.data.info.DATA_KINDS`), a non-empty set of strings.
        decodes_links: whether its model scores node pairs with ``decode(z, pairs)`` after ``encode(x,
            edge_index)``, as ``task=link`` needs; default ``False``.
    """

    supports: frozenset
    decodes_links: bool = False

    def __post_init__(self):
        if not self.supports or not all(isinstance(kind, str) for kind in self.supports):
            raise ValueError(f"supports must name at least one kind of data, got {sorted(map(repr, self.supports))}")


BACKBONES = Registry("backbone", supplied=SUPPLIED, meta=BackboneMeta)
# arguments that, given as None, leave the factory's own default (a config's null, a builder's "not set")
_DEFAULTED = ("num_classes", "in_channels", "input_size", "in_features", "neuron", "T")


def register_backbone(name: str, *, supports: Iterable[str] = ("event", "static"), decodes_links: bool = False):
    """Decorator registering a backbone factory (a function or a class) under ``name``.

    The task calls the factory with the arguments below, taken from its dataset and its neuron (:data:`SUPPLIED`,
    and ``T`` for a graph backbone); they are written here once, and a factory's ``Args`` gives of them only its
    default and what is particular to it. Vision factories take ``num_classes``, ``in_channels``, ``input_size``,
    graph ones ``in_features``, ``num_classes``, ``T``, sequence ones ``in_features``, ``num_classes``,
    ``readout_steps``; all take ``neuron`` and ``neuron_kwargs``. Every other keyword argument of a factory is an
    option of its config (``conf/backbone/<name>.yaml``), checked by its annotated type.

    * ``num_classes``: the number of classes, an integer >= 1: the dataset's (a graph's, from its labels).
    * ``in_channels``: the channels of an input frame, an integer >= 1: the dataset's (2 event polarities, 3 for RGB
      images).
    * ``input_size``: the frames' ``(H, W)``, an integer (square) or a pair of integers >= 1: the dataset's
      ``size``.
    * ``in_features``: the width of an input row, an integer >= 1: a node's feature row (the graph's ``x``, or the
      preprocessed features of a backbone that reads rows) or a sequence step's channels ``C``.
    * ``readout_steps``: the last steps the answer is read from, an integer from 1 to the sequence length ``T``: the
      dataset's (``delayed_cue``'s ``recall_steps``, ``seq_digits``' ``readout_steps``).
    * ``T``: the number of time steps a graph backbone runs for, an integer >= 1: the dataset's ``T``
      (``conf/dataset/<graph>.yaml``) unless the backbone's config sets its own.
    * ``neuron``: the spiking neuron of every layer, a name registered in :data:`fsnn.neurons.registry.NEURONS`
      (:func:`fsnn.neuron_names`), built by :func:`fsnn.build_neuron`. The run's ``neuron=`` group supplies it:
      compared runs differ only in the neuron.
    * ``neuron_kwargs``: keyword arguments of that neuron (``alpha``, ``tau``, ``threshold``, ..., the options of
      ``conf/neuron/<name>.yaml``), a dict, or ``None`` (the neuron's own defaults).

    Args:
        name: the backbone's name, the ``backbone`` config group's ``name``.
        supports: the data kinds the backbone accepts (:data:`fsnn.data.info.DATA_KINDS`); a task refuses a
            dataset of another kind by name. Default: ``event`` and ``static``.
        decodes_links: whether the model has ``encode(x, edge_index)`` and ``decode(z, pairs)``, the link scores
            ``task=link`` trains (:class:`BackboneMeta`); default ``False``.
    """
    return BACKBONES.register(name, supports=frozenset(supports), decodes_links=decodes_links)


def backbone_names(kind: str | None = None) -> list[str]:
    """Registered backbones, or those that take data of ``kind``."""
    return BACKBONES.names() if kind is None else BACKBONES.names(supports=kind)


def backbone_supports(name: str) -> set[str]:
    """Data kinds (``"event"``, ``"static"``, ``"graph"``, ``"sequence"``) that backbone ``name`` accepts."""
    return set(BACKBONES.meta(name).supports)


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
