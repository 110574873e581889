"""Argument checks shared by neurons, models, data and corruptions: one ``ValueError`` naming the parameter and
what is allowed; the option types a component declares its options with; and the one rounding rule of a ratio of
``n`` items.

An option is declared once, in the signature of the component that takes it (``alpha: Alpha = 0.5``). The type's
:class:`Check` is enforced twice from that one declaration: on a Python call by :func:`checked` (leniently: a numpy
float or an int is a number there) and on a config value by the component's registry schema
(:meth:`fsnn.registry.Registry.schema`, strictly: ``"3"`` is not 3 and ``true`` is not 1 in a config).
"""

from __future__ import annotations

import functools
import inspect
import math
import types
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Callable,
    Literal,
    Union,
    get_args,
    get_origin,
)

if TYPE_CHECKING:
    import torch


def check_choice(name: str, value, allowed):
    """``value`` if it is one of ``allowed``, else ``ValueError`` naming ``name`` and the choices."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value


def check_number(
    name: str, value, *, above: float | None = None, at_least: float | None = None, allowed: str = "a finite number"
) -> float:
    """``float(value)``, finite, ``> above`` and ``>= at_least`` when given."""
    try:
        if isinstance(value, bool):
            raise TypeError
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {allowed}, got {value!r}") from None
    if (
        not math.isfinite(out)
        or (above is not None and not out > above)
        or (at_least is not None and not out >= at_least)
    ):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return out


def check_int(name: str, value, *, minimum: int = 1, below: int | None = None) -> int:
    """``int(value)`` for an integral ``value >= minimum`` (and ``< below`` when given); bools are refused."""
    bound = f" and < {below}" if below is not None else ""
    try:
        if isinstance(value, bool):
            raise TypeError
        out = int(value)
        if out != value:
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        out = None
    if out is None or out < minimum or (below is not None and out >= below):
        raise ValueError(f"{name} must be an integer >= {minimum}{bound}, got {value!r}")
    return out


def check_ratio(name: str, value, *, below_one: bool = False) -> float:
    """A fraction in ``[0, 1]`` (``[0, 1)`` with ``below_one``, e.g. a dropout probability)."""
    allowed = "in [0, 1)" if below_one else "in [0, 1]"
    out = check_number(name, value, at_least=0.0, allowed=allowed)
    if out > 1.0 or (below_one and out == 1.0):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return out


def round_half_up(x: float) -> int:
    """``x`` rounded half up (``floor(x + 0.5)``), the one rounding rule of counts in fsnn; the 1e-9 guards against
    float error (``0.35 * 10 = 3.4999...``). Python's ``round`` would round halves to even."""
    return int(math.floor(float(x) + 0.5 + 1e-9))


def round_count(ratio: float, n: int) -> int:
    """How many of ``n`` items a ratio picks: ``round_half_up(ratio * n)``."""
    return round_half_up(float(ratio) * int(n))


def as_generator(generator) -> torch.Generator:
    """A CPU ``torch.Generator``: the one given (its state advances), or a fresh one seeded with the int
    (``None`` -> seed 0), so every seeded draw in fsnn is reproducible."""
    import torch  # here, not at the top: the config checks (fsnn.suite.config, the commands) run without torch

    if isinstance(generator, torch.Generator):
        return generator
    if isinstance(generator, bool):
        raise ValueError("generator must be a torch.Generator, an int seed or None, not bool")
    return torch.Generator().manual_seed(0 if generator is None else int(generator))


#: what a neuron says of a NaN or inf input
FINITE_INPUT = "x must be finite, got NaN or inf values"


def check_spike_input(x) -> None:
    """Multi-step neuron input: a floating tensor ``[T, B, ...]`` with finite values.

    The finiteness check never synchronises a device: on CPU tensors it reads the values (a ``ValueError``);
    inside ``torch.compile`` it is an assertion in the graph (``torch._assert_async``: no read back to Python, a
    ``RuntimeError`` with the same words when it fails); on a GPU, where a read would synchronise the device on
    every call of every neuron layer, it runs only while anomaly detection is on
    (``torch.autograd.set_detect_anomaly(True)``), and otherwise NaN inputs give NaN potentials and no spikes.
    """
    import torch  # already loaded by the neuron that calls this: a lookup, not an import

    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        got = f"dtype {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must be a floating-point tensor of shape [T, B, ...], got {got}")
    if x.dim() < 2 or x.shape[0] < 1:
        raise ValueError(f"x must have shape [T, B, ...] (rank >= 2, T >= 1), got shape {tuple(x.shape)}")
    if torch.compiler.is_compiling():
        if x.device.type == "cpu":  # on a GPU a failed assertion is a device-side assert: the device is lost
            torch._assert_async(torch.isfinite(x).all(), FINITE_INPUT)
        return
    if x.device.type != "cpu" and not torch.is_anomaly_enabled():
        return
    # one reduction decides for all-finite input (the usual case); only a non-finite sum (a NaN or inf entry, or, in
    # theory, finite entries whose sum overflows) needs the entry-by-entry check
    if not bool(torch.isfinite(x.sum())) and not bool(torch.isfinite(x).all()):
        raise ValueError(FINITE_INPUT)


class OptionError(ValueError):
    """A value of ``option`` refused for a reason beyond its type (a combination of options, this machine): the
    same words on a Python call (``"<option> must be <expected>, got <value>"``) and in a config check
    (``"<group>.<option>: expected <expected>, got <value>"``)."""

    def __init__(self, option: str, expected: str, value):
        self.option, self.expected, self.value = option, expected, value
        super().__init__(f"{option} must be {expected}, got {value!r}")


# -- option types -----------------------------------------------------------------------------------------------------
class Check:
    """What an option accepts, as ``Annotated`` metadata: ``coerce`` turns a Python argument into the option's type
    (raising ``TypeError``/``ValueError`` when it cannot) and ``test`` says whether the value is allowed; ``expected``
    is what an error says the option expects. Inside a pydantic model (a registry's schema) the type itself is
    validated strictly and then ``test`` runs, so both paths refuse the same values with the same words."""

    def __init__(
        self,
        expected: str,
        test: Callable[[Any], bool] = lambda value: True,
        coerce: Callable[[Any], Any] = lambda value: value,
    ):
        self.expected, self.test, self.coerce = expected, test, coerce

    def __call__(self, name: str, value):
        """``value`` coerced and checked; ``ValueError("<name> must be <expected>, got <value>")`` otherwise."""
        try:
            out = self.coerce(value)
            allowed = self.test(out)
        except (TypeError, ValueError, OverflowError):
            allowed = False
        if not allowed:
            raise ValueError(f"{name} must be {self.expected}, got {value!r}")
        return out

    def __get_pydantic_core_schema__(self, source, handler):
        from pydantic_core import core_schema  # only the application validates configs

        def after(value):
            if not self.test(value):
                raise ValueError(self.expected)
            return value

        return core_schema.no_info_after_validator_function(after, handler(source))

    def __repr__(self) -> str:
        return f"Check({self.expected!r})"


def _finite_float(value) -> float:
    if isinstance(value, (bool, str)):
        raise TypeError
    out = float(value)
    if not math.isfinite(out):
        raise ValueError
    return out


def _integer(value) -> int:
    if isinstance(value, (bool, str)):
        raise TypeError
    out = int(value)
    if out != value:
        raise ValueError
    return out


def _flag(value) -> bool:
    if isinstance(value, str) or value not in (True, False):
        raise TypeError
    return bool(value)


def number(expected: str, test: Callable[[float], bool] = lambda value: True):
    """A finite float option; ``test`` bounds it (``number("a number > 0", lambda v: v > 0)``)."""
    return Annotated[float, Check(expected, test, _finite_float)]


def integer(expected: str, test: Callable[[int], bool] = lambda value: True):
    """An integer option (an integral float is one on a Python call; bools are not)."""
    return Annotated[int, Check(expected, test, _integer)]


def one_of(*choices):
    """A option that takes one of ``choices``."""
    return Annotated[Literal[choices], Check("one of " + ", ".join(str(c) for c in choices), lambda v: v in choices)]


Real = number("a finite number")
Positive = number("a number > 0", lambda v: v > 0)
NonNegative = number("a number >= 0", lambda v: v >= 0)
Fraction = number("a number in (0, 1)", lambda v: 0 < v < 1)  # a share carved from a whole, e.g. a validation split
Probability = number("a number in [0, 1)", lambda v: 0 <= v < 1)  # a dropout or a background rate
Ratio = number("in [0, 1]", lambda v: 0 <= v <= 1)  # the share of a whole that is taken, from none to all
Count = integer("an integer >= 1", lambda v: v >= 1)
NonNegativeInt = integer("an integer >= 0", lambda v: v >= 0)
Flag = Annotated[bool, Check("true or false", coerce=_flag)]


def option_check(annotation) -> tuple[Check | None, bool]:
    """``(the Check of an option's annotation, whether None is allowed)``: ``Count``, ``Count | None``, ..."""
    optional = False
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        optional = len(members) < len(get_args(annotation))
        annotation = members[0] if len(members) == 1 else annotation
    found = next((m for m in getattr(annotation, "__metadata__", ()) if isinstance(m, Check)), None)
    return found, optional


def foreign_option(component, name: str, value) -> str | None:
    """What to use instead of ``name=value`` where ``name`` is another library's option for a component of the same
    kind (``component.foreign_options``: ``{name: what to use}``, or ``{"name=value": ...}`` for one value of an
    option fsnn has too, such as SpikingJelly's ``v_reset=None``); ``None`` otherwise."""
    foreign = getattr(component, "foreign_options", None) or {}
    return foreign.get(name) if name in foreign else foreign.get(f"{name}={value!r}")


def check_mode_options(modes: dict, options: dict, defaults: dict) -> None:
    """Refuse an option that means something under one mode only, given under another one (a config's check,
    :meth:`fsnn.registry.Registry.schema`: a Python call may pass every option whatever the mode). ``modes`` (a
    component's ``mode_options``, ``{option: (mode option, the values of it the option is used under)}``) says
    which; such an option of ``options`` (every option, ``defaults`` where not given) set to a value other than its
    default while its mode has another value is an :class:`OptionError` naming it and its mode: it would be taken
    and ignored. At its default it changes nothing, so a config that holds the option under every mode stays
    valid."""
    for option, (mode, used_under) in modes.items():
        if options[mode] not in used_under and options[option] != defaults[option]:
            raise OptionError(
                option,
                f"{defaults[option]!r}, its default ({option} is an option of {mode}={' or '.join(used_under)}, and "
                f"{mode} is {options[mode]!r})",
                options[option],
            )


def _refuse_foreign(owner, kwargs: dict) -> None:
    for name, value in kwargs.items():
        if (hint := foreign_option(owner, name, value)) is not None:
            raise ValueError(f"{type(owner).__name__}({name}={value!r}): {hint}")


def checked(function: Callable) -> Callable:
    """Decorator: every argument of a call whose annotation carries a :class:`Check` is checked (and coerced, e.g.
    ``alpha=1`` becomes ``1.0``) before ``function`` runs; the first bad one is a ``ValueError`` naming it. Defaults
    are trusted. Works on functions and on ``__init__``."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        _refuse_foreign(args[0] if args else None, kwargs)
        bound = _signature(function).bind(*args, **kwargs)
        bound.arguments.update(check_arguments(function, bound.arguments))
        return function(*bound.args, **bound.kwargs)

    return wrapper


@functools.cache
def _signature(function: Callable) -> inspect.Signature:
    # read on first use: an annotation may name what its module defines after the function
    return inspect.signature(function, eval_str=True)


def check_arguments(function: Callable, arguments: dict) -> dict:
    """``arguments`` (by parameter name) checked and coerced against the option types of ``function``'s signature,
    as :func:`checked` does on a call; ``ValueError`` naming the first bad one."""
    out = dict(arguments)
    for name, parameter in _signature(function).parameters.items():
        check, optional = option_check(parameter.annotation)
        if check is not None and name in out and not (optional and out[name] is None):
            out[name] = check(name, out[name])
    return out


class ConfigError(ValueError):
    """A config value, or a combination of options, that cannot work, reported before any data is loaded."""
