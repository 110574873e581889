"""Argument checks shared by every neuron: one ``ValueError`` naming the parameter and what is allowed."""

from __future__ import annotations

import math

import torch


def check_choice(name: str, value, allowed):
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value


def check_number(name: str, value, *, above: float | None = None, allowed: str = "a finite number") -> float:
    """``float(value)``, finite and ``> above`` when given."""
    try:
        if isinstance(value, bool):
            raise TypeError
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {allowed}, got {value!r}") from None
    if not math.isfinite(out) or (above is not None and not out > above):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return out


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
