"""The one neuron registry: every neuron by name, fsnn's fractional ones (:mod:`fsnn.neurons.fractional`), their
first-order counterparts and the baselines of SpikingJelly and snnTorch (:mod:`fsnn.neurons.baselines`, imported
when one is built), with each neuron's options (the annotated keyword arguments of its factory,
:meth:`fsnn.registry.Registry.schema`) and what a reader sees of it (:func:`neuron_label`, :func:`is_fractional`,
:func:`paper_baselines`). Backbones build neurons by name and never import a particular library.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from torch import nn

from fsnn.neurons.base import SpikingNeuron
from fsnn.neurons.fractional import FractionalIF, FractionalLIF, FractionalNeuron
from fsnn.registry import Registry, option_fields

ORDERS = ("fractional", "integer")


@dataclass(frozen=True)
class NeuronMeta:
    """What the tables, figures and report page read of a neuron, given at its registration
    (``register_neuron("flif", label="f-LIF", order="fractional")``).

    Args:
        label: its name for a reader (``"f-LIF"``), a non-empty string.
        order: ``"fractional"`` or ``"integer"`` (colours, and the fractional cell a verdict compares).
        paper_baseline: whether it is an integer-order neuron the paper compares f-LIF and f-IF with; default
            ``False``.
        timed_as: the registered neuron whose measured train step stands for its own in the cost estimates, because
            it runs the same kernels (``fif`` -> ``flif``); default ``None`` (timed itself, or not estimated).
    """

    label: str
    order: str
    paper_baseline: bool = False
    timed_as: str | None = None

    def __post_init__(self):
        if not isinstance(self.label, str) or not self.label:
            raise ValueError(f"a neuron's label must be a non-empty string, got {self.label!r}")
        if self.order not in ORDERS:
            raise ValueError(f"a neuron's order must be one of {', '.join(ORDERS)}, got {self.order!r}")


NEURONS = Registry("neuron", meta=NeuronMeta)
register_neuron = NEURONS.register


def neuron_names(pattern: str = "*") -> list[str]:
    """The registered neuron names, sorted.

    Args:
        pattern: a shell wildcard the names must match, e.g. ``"sj_*"``; default ``"*"`` (all).
    """
    return NEURONS.names(pattern)


def neuron_params(name: str) -> set[str] | None:
    """Keyword arguments the neuron registered as ``name`` takes (``None``: any).

    Args:
        name: a registered neuron name (:func:`neuron_names`); an unknown one is a ``ValueError`` naming the closest.
    """
    return NEURONS.params(name)


def is_neuron(module: nn.Module) -> bool:
    """Whether ``module`` is a neuron (for probes such as firing rates): a :class:`SpikingNeuron`, or an instance of
    a class registered with :func:`register_neuron`."""
    registered = tuple(f for f in NEURONS.loaded().values() if isinstance(f, type))
    return isinstance(module, (SpikingNeuron, *registered))


def build_neuron(name: str, **kwargs) -> nn.Module:
    """Multi-step neuron ``[T, B, ...] -> [T, B, ...]`` registered under ``name``.

    Args:
        name: a registered neuron name: ``flif``, ``fif``, ``lif``, ``if`` (fsnn's), ``sj_lif``, ``sj_plif``,
            ``sj_if`` (SpikingJelly), ``snntorch_leaky`` (snnTorch), or one added with :func:`register_neuron`.
        **kwargs: the neuron's own arguments (:func:`neuron_params`; for ``flif`` those of :class:`FractionalLIF`);
            one it does not take is a ``ValueError`` naming the closest it does.
    """
    return NEURONS.create(name, **kwargs)


register_neuron("flif", label="f-LIF", order="fractional")(FractionalLIF)
register_neuron("fif", label="f-IF", order="fractional", timed_as="flif")(FractionalIF)


def _arguments_but(cls: type, dropped: tuple[str, ...]) -> str:
    """An ``Args:`` section of every constructor argument of ``cls`` but ``dropped``, each entry read from the
    nearest constructor docstring of its class hierarchy: the arguments of a factory that builds ``cls`` with those
    fixed, documented once, where they are declared."""
    entries: dict[str, list[str]] = {}
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        doc = inspect.getdoc(init) if init is not None else None
        if not doc or "Args:" not in doc:
            continue
        name = None
        for line in doc.split("Args:\n", 1)[1].splitlines():
            if line and not line.startswith(" "):  # the next section
                break
            if not line.startswith("     "):  # an argument's first line (its continuation lines are deeper)
                name = line.split(":", 1)[0].strip()
                if name in entries or name.startswith("*") or name in dropped:
                    name = None
                else:
                    entries[name] = []
            if name is not None:
                entries[name].append(line)
    return "\n".join(["Args:", *(line for lines in entries.values() for line in lines)])


def _first_order(cls: type[FractionalNeuron], name: str):
    """Registry factory for fsnn's own first-order neuron: ``cls`` with ``alpha = 1`` (same code path); it takes
    ``cls``'s arguments but ``alpha`` and ``learn_alpha``."""

    def build(**kwargs) -> FractionalNeuron:
        return cls(alpha=1.0, **kwargs)

    build.__signature__ = inspect.Signature(
        [
            inspect.Parameter(option, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
            for option, (annotation, default) in option_fields(cls).items()
            if option not in ("alpha", "learn_alpha")
        ]
    )
    build.__doc__ = (
        f"fsnn's own first-order {name.upper()}: ``{cls.__name__}`` with ``alpha = 1``.\n\n"
        + _arguments_but(cls, ("alpha", "learn_alpha"))
    )
    build.check_options = lambda options: cls.check_options({**options, "alpha": 1.0})
    build.foreign_options = cls.foreign_options
    build.mode_options = cls.mode_options
    return build


register_neuron("lif", label="LIF (fsnn, alpha = 1)", order="integer")(_first_order(FractionalLIF, "lif"))
register_neuron("if", label="IF (fsnn, alpha = 1)", order="integer", timed_as="lif")(_first_order(FractionalIF, "if"))
# integer-order baselines (fsnn.neurons.baselines): listed always, their library imported only when one is built
NEURONS.lazy(
    "sj_lif",
    "fsnn.neurons.baselines:SJLIF",
    extra="baselines",
    label="LIF (SpikingJelly)",
    order="integer",
    paper_baseline=True,
)
NEURONS.lazy(
    "sj_plif",
    "fsnn.neurons.baselines:SJPLIF",
    extra="baselines",
    label="PLIF (SpikingJelly)",
    order="integer",
    timed_as="sj_lif",
)
NEURONS.lazy(
    "sj_if",
    "fsnn.neurons.baselines:SJIF",
    extra="baselines",
    label="IF (SpikingJelly)",
    order="integer",
    paper_baseline=True,
    timed_as="sj_lif",
)
NEURONS.lazy(
    "snntorch_leaky",
    "fsnn.neurons.baselines:SnnTorchLeaky",
    extra="baselines",
    label="LIF (snnTorch)",
    order="integer",
    paper_baseline=True,
)


def _registered_prefix(name: str) -> str | None:
    """The registered neuron that ``name`` is, or whose variant it is (``flif_learn_tau`` -> ``flif``)."""
    key = NEURONS.key(name)
    return max((n for n in NEURONS.names() if key == n or key.startswith(n + "_")), key=len, default=None)


def neuron_label(name: str) -> str:
    """How a reader sees the neuron (or neuron variant) ``name``: its registered ``label`` (``flif`` -> ``f-LIF``);
    a variant keeps its suffix (``flif_learn_tau`` -> ``f-LIF learn_tau``); an unknown name stays as it is.

    Args:
        name: a neuron name (:func:`neuron_names`) or a ``neuron_variant`` name that starts with one.
    """
    base = _registered_prefix(name)
    if base is None:
        return str(name)
    suffix = NEURONS.key(name)[len(base) :].lstrip("_")
    return NEURONS.meta(base).label + (f" {suffix}" if suffix else "")


def is_fractional(name: str) -> bool:
    """Whether the neuron (or neuron variant) ``name`` is registered as of fractional order.

    Args:
        name: a neuron name or a ``neuron_variant`` name that starts with one; an unknown name is not fractional.
    """
    base = _registered_prefix(name)
    return base is not None and NEURONS.meta(base).order == "fractional"


def paper_baselines() -> list[str]:
    """The integer-order neurons the paper compares f-LIF and f-IF with (registered with ``paper_baseline``)."""
    return NEURONS.names(paper_baseline=True)
