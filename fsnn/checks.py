"""Argument checks shared by neurons, models, data and corruptions: one ``ValueError`` naming the parameter and
what is allowed; and the one rounding rule of a ratio of ``n`` items."""

from __future__ import annotations

import math

import torch


def check_choice(name: str, value, allowed):
    """``value`` if it is one of ``allowed``, else ``ValueError`` naming ``name`` and the choices."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value


def check_number(name: str, value, *, above: float | None = None, at_least: float | None = None,
                 allowed: str = "a finite number") -> float:
    """``float(value)``, finite, ``> above`` and ``>= at_least`` when given."""
    try:
        if isinstance(value, bool):
            raise TypeError
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {allowed}, got {value!r}") from None
    if (not math.isfinite(out) or (above is not None and not out > above)
            or (at_least is not None and not out >= at_least)):
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
    if isinstance(generator, torch.Generator):
        return generator
    if isinstance(generator, bool):
        raise ValueError("generator must be a torch.Generator, an int seed or None, not bool")
    return torch.Generator().manual_seed(0 if generator is None else int(generator))


def check_spike_input(x) -> None:
    """Multi-step neuron input: a floating tensor ``[T, B, ...]`` with finite values.

    Finiteness is checked on the CPU only: on a GPU the check would synchronise the device on every
    call of every neuron layer (there, NaN inputs give NaN potentials and no spikes).
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        got = f"dtype {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must be a floating-point tensor of shape [T, B, ...], got {got}")
    if x.dim() < 2 or x.shape[0] < 1:
        raise ValueError(f"x must have shape [T, B, ...] (rank >= 2, T >= 1), got shape {tuple(x.shape)}")
    if x.device.type == "cpu" and not bool(torch.isfinite(x).all()):
        raise ValueError("x must be finite, got NaN or inf values")
