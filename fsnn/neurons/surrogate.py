"""Surrogate gradients for the Heaviside spike function.

Forward is always the Heaviside step ``H(x) = 1 if x >= 0 else 0`` (a neuron fires when its
potential reaches the threshold). Backward replaces ``H'(x)`` with a smooth surrogate
``s(x)``; the families follow the paper's appendix "Surrogate Functions in f-SNN":

=====================  =====================================================  ==============
name                   s(x)                                                   default scale
=====================  =====================================================  ==============
``sigmoid``            k * sig(k x) * (1 - sig(k x))                          k = 5.0
``arctan``             (k / 2) / (1 + (pi k x / 2)^2)                         k = 2.0
``piecewise_linear``   1 / (2 g) if |x| <= g else 0   (a box)                 g = 1.0
``gaussian``           exp(-x^2 / (2 s^2)) / (s sqrt(2 pi))                   s = 1.0
=====================  =====================================================  ==============

The arctan form is SpikingJelly's ``ATan`` and snnTorch's ``atan`` (it integrates to
``arctan(pi k x / 2) / pi + 1/2``, so it is a proper step approximation); the paper prints
``k / (1 + (k x)^2)``, which the official toolbox does not implement. The sigmoid with
``k = 4`` is SpikingJelly's default ``Sigmoid()``.

``surrogate_derivative`` is the pure function the neuron engines call inside their analytic
backward; ``spike`` is the autograd-aware Heaviside for code that relies on autograd.
"""

from __future__ import annotations

import math

import torch

from fsnn.checks import Positive, checked, one_of

SURROGATE_DEFAULT_SCALE: dict[str, float] = {
    "sigmoid": 5.0,
    "arctan": 2.0,
    "piecewise_linear": 1.0,
    "gaussian": 1.0,
}
SURROGATES = tuple(SURROGATE_DEFAULT_SCALE)
Surrogate = one_of(*SURROGATES)  # the option type of a neuron's surrogate


@checked
def check_surrogate(surrogate: Surrogate, surrogate_scale: Positive | None) -> float:
    """The scale of surrogate family ``surrogate``: ``surrogate_scale``, or the family's default when ``None``."""
    return SURROGATE_DEFAULT_SCALE[surrogate] if surrogate_scale is None else surrogate_scale


def surrogate_derivative_(x: torch.Tensor, name: str, scale: float) -> torch.Tensor:
    """``s(x)`` computed in place in ``x`` (no temporaries the size of ``x``; used by the engines)."""
    if name == "sigmoid":
        sg = x.mul_(scale).sigmoid_()
        return sg.addcmul_(sg, sg, value=-1.0).mul_(scale)  # k sig (1 - sig)
    if name == "arctan":
        return x.mul_(0.5 * math.pi * scale).square_().add_(1.0).reciprocal_().mul_(0.5 * scale)
    if name == "piecewise_linear":
        keep = x.abs_().le_(scale)
        return keep.div_(2.0 * scale)
    if name == "gaussian":
        return x.div_(scale).square_().mul_(-0.5).exp_().div_(scale * math.sqrt(2.0 * math.pi))
    raise ValueError(f"surrogate must be one of {list(SURROGATES)}, got {name!r}")


def surrogate_derivative(x: torch.Tensor, name: str, scale: float) -> torch.Tensor:
    """``s(x)``: the surrogate for ``dH/dx`` evaluated at ``x = potential - threshold``.

    The operations of :func:`surrogate_derivative_` in the same order (the same numbers), each out of place, so
    that autograd can differentiate it: a second derivative through :func:`spike` is ``grad * s'(x)``."""
    if name == "sigmoid":
        sg = torch.mul(x, scale).sigmoid()
        return torch.addcmul(sg, sg, sg, value=-1.0).mul(scale)
    if name == "arctan":
        return torch.mul(x, 0.5 * math.pi * scale).square().add(1.0).reciprocal().mul(0.5 * scale)
    if name == "piecewise_linear":
        return x.abs().le(scale).to(x.dtype).div(2.0 * scale)
    if name == "gaussian":
        return torch.div(x, scale).square().mul(-0.5).exp().div(scale * math.sqrt(2.0 * math.pi))
    raise ValueError(f"surrogate must be one of {list(SURROGATES)}, got {name!r}")


class _Spike(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, name: str, scale: float, strict: bool) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.name, ctx.scale = name, scale
        return (x > 0 if strict else x >= 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (x,) = ctx.saved_tensors
        return grad * surrogate_derivative(x, ctx.name, ctx.scale), None, None, None


def spike(x: torch.Tensor, name: str = "sigmoid", scale: float | None = None, strict: bool = False):
    """Heaviside spike ``H(x)`` (fires at ``x >= 0``; ``x > 0`` if ``strict``) with surrogate gradient.

    Args:
        x: the potential minus the threshold, any floating tensor.
        name: the surrogate family, ``"sigmoid"`` (default), ``"arctan"``, ``"piecewise_linear"`` or ``"gaussian"``
            (table above).
        scale: the family's sharpness, ``None`` (default: the table's default scale) or a number $> 0$.
        strict: ``True`` fires only above 0 (snnTorch's rule); default ``False`` (at 0 too, SpikingJelly's).
    """
    return _Spike.apply(x, name, check_surrogate(name, scale), strict)
