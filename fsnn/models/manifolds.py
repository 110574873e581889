"""Riemannian manifolds of MSG (:mod:`fsnn.models.msg`): Euclidean space, the Lorentz (hyperboloid) model and the
sphere, with the few maps a spiking manifold GNN needs (exponential and log maps at the origin, transport from the
origin, squared geodesic distance).
"""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn
from torch.nn import functional as F

# The maps are written out in plain PyTorch. geoopt 0.5.1 (whose conventions they follow and against which the tests
# check them) cannot be used at run time: its Lorentz maps are TorchScript functions that, once run with autograd,
# fail under ``torch.inference_mode`` (Lightning's default for validation and test) with "Inference tensors cannot
# be saved for backward"; and its ``Sphere.expmap`` has NaN gradients at a zero tangent vector, which MSG meets
# whenever a node's currents vanish. Every map below has finite gradients at zero vectors and coincident points.
_SMALL = 1e-6


def _safe_norm(sq: torch.Tensor):
    """``(norm, small)`` of squared norms ``sq`` with a gradient-safe value where ``sq < _SMALL**2``."""
    small = sq < _SMALL * _SMALL
    return torch.sqrt(torch.where(small, torch.ones_like(sq), sq)), small


class Geometry(nn.Module):
    """Points of a ``dim``-dimensional manifold and the few maps MSG needs; tangent vectors enter as ``dim``
    coordinates in the tangent space at the origin ``o``.

    * ``expmap0(v)``: ``Exp_o(v)``;  ``move(z, v)``: ``Exp_z(P_{o->z} v)`` (parallel transport for the Lorentz model,
      projection onto ``T_z`` for the sphere, identity for Euclidean space);
    * ``logmap0(z)``: ``Log_o(z)`` as ``dim`` coordinates;  ``sqdist(a, b)``: squared geodesic distance.
    """

    ambient_extra = 0

    def __init__(self, dim: int):
        super().__init__()
        self.dim = int(dim)

    def origin(self, n: int, like: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def expmap0(self, v):
        return self.move(self.origin(v.shape[0], v), v)


class Euclidean(Geometry):
    """Flat space: every map is the identity and the distance is Euclidean."""

    def origin(self, n, like):
        return like.new_zeros(n, self.dim)

    def expmap0(self, v):
        return v

    def move(self, z, v):
        return z + v

    def logmap0(self, z):
        return z

    def sqdist(self, a, b):
        return (a - b).pow(2).sum(-1)


class Lorentz(Geometry):
    """Hyperboloid ``{x in R^{dim+1}: <x, x>_L = -k, x_0 > 0}`` with ``<x, y>_L = -x_0 y_0 + sum_i x_i y_i`` (curvature
    ``-1/k``, geoopt's ``Lorentz(k)``), origin ``o = (sqrt(k), 0, ..., 0)``.

    ``Exp_x(u) = cosh(|u|/sqrt k) x + sqrt(k) sinh(|u|/sqrt k) u/|u|`` (``|u|^2 = <u, u>_L``), then re-projected by
    ``x_0 = sqrt(k + |x_{1:}|^2)``; parallel transport ``P_{o->z} v = v + <z, v>_L / (k - <o, z>_L) (o + z)``;
    ``Log_o z = sqrt(k) asinh(|z_{1:}|/sqrt k) z_{1:}/|z_{1:}|``; ``d(x, y) = sqrt(k) arcosh(1 + <x-y, x-y>_L / (2k))``.
    Tangent norms are clamped at ``max_norm`` (cosh overflow guard).
    """

    ambient_extra = 1

    def __init__(self, dim: int, k: float = 1.0, max_norm: float = 32.0):
        super().__init__(dim)
        if not float(k) > 0.0:
            raise ValueError(f"k must be > 0, got {k!r}")
        self.k, self.max_norm = float(k), float(max_norm)

    @staticmethod
    def inner(x, y):
        return (x * y).sum(-1, keepdim=True) - 2.0 * x[..., :1] * y[..., :1]

    def origin(self, n, like):
        o = like.new_zeros(n, self.dim + 1)
        o[:, 0] = math.sqrt(self.k)
        return o

    def projx(self, x):
        rest = x[..., 1:]
        return torch.cat([torch.sqrt(self.k + (rest * rest).sum(-1, keepdim=True)), rest], dim=-1)

    def expmap(self, x, u):
        sk = math.sqrt(self.k)
        sq = self.inner(u, u).clamp_min(0.0)
        n, small = _safe_norm(sq)
        n = n.clamp_max(self.max_norm)
        a = n / sk
        cosh = torch.where(small, 1.0 + sq / (2 * self.k), torch.cosh(a))
        sinh_n = torch.where(small, 1.0 + sq / (6 * self.k), sk * torch.sinh(a) / n)  # sqrt(k) sinh(|u|/sqrt k)/|u|
        return self.projx(cosh * x + sinh_n * u)

    def transp0(self, z, v):
        """Parallel transport of ``v`` (ambient, ``v_0 = 0``) from the origin to ``z``."""
        sk = math.sqrt(self.k)
        zv = (z[..., 1:] * v[..., 1:]).sum(-1, keepdim=True)  # <z, v>_L with v_0 = 0
        o_plus_z = torch.cat([z[..., :1] + sk, z[..., 1:]], dim=-1)
        return v + zv / (self.k + sk * z[..., :1]) * o_plus_z

    def expmap0(self, v):
        return self.expmap(self.origin(v.shape[0], v), F.pad(v, (1, 0)))

    def move(self, z, v):
        return self.expmap(z, self.transp0(z, F.pad(v, (1, 0))))

    def logmap0(self, z):
        sk = math.sqrt(self.k)
        rest = z[..., 1:]
        sq = (rest * rest).sum(-1, keepdim=True)
        n, small = _safe_norm(sq)
        ratio = torch.where(small, 1.0 - sq / (6 * self.k), sk * torch.asinh(n / sk) / n)
        return ratio * rest

    def sqdist(self, a, b):
        diff = a - b
        q = self.inner(diff, diff).squeeze(-1).clamp_min(0.0)  # = 2k (cosh(d/sqrt k) - 1)
        small = q < _SMALL
        t = torch.where(small, torch.ones_like(q), q / (2 * self.k))
        d = math.sqrt(self.k) * torch.log1p(t + torch.sqrt(t * (t + 2.0)))  # sqrt(k) arcosh(1 + t)
        return torch.where(small, q, d * d)


class Sphere(Geometry):
    """Unit sphere in ``R^{dim+1}``, origin at the south pole ``o = (-1, 0, ..., 0)`` as in MSG.

    ``Exp_x(u) = cos|u| x + sin|u| u/|u|`` (renormalized); the transport of ``v`` from ``o`` to ``z`` is its projection
    onto ``T_z`` (geoopt's vector transport); ``Log_o z = atan2(|z_{1:}|, -z_0) z_{1:}/|z_{1:}|``;
    ``d(a, b) = 2 asin(|a - b| / 2)``.
    """

    ambient_extra = 1

    def origin(self, n, like):
        o = like.new_zeros(n, self.dim + 1)
        o[:, 0] = -1.0
        return o

    @staticmethod
    def proju(x, u):
        return u - (x * u).sum(-1, keepdim=True) * x

    @staticmethod
    def expmap(x, u):
        sq = (u * u).sum(-1, keepdim=True)
        n, small = _safe_norm(sq)
        cos = torch.where(small, 1.0 - sq / 2, torch.cos(n))
        sinc = torch.where(small, 1.0 - sq / 6, torch.sin(n) / n)
        out = cos * x + sinc * u
        return out / out.norm(dim=-1, keepdim=True)

    def move(self, z, v):
        return self.expmap(z, self.proju(z, F.pad(v, (1, 0))))

    def logmap0(self, z):
        rest = z[..., 1:]
        sq = (rest * rest).sum(-1, keepdim=True)
        n, small = _safe_norm(sq)
        ratio = torch.where(small, torch.ones_like(sq), torch.atan2(n, -z[..., :1]) / n)
        return ratio * rest

    def sqdist(self, a, b):
        sq = (a - b).pow(2).sum(-1)
        small = sq < _SMALL * _SMALL
        n = torch.sqrt(torch.where(small, torch.ones_like(sq), sq))
        d = 2.0 * torch.asin((n / 2).clamp_max(1.0))
        return torch.where(small, sq, d * d)


GEOMETRIES: dict[str, Callable[[int], Geometry]] = {"lorentz": Lorentz, "sphere": Sphere, "euclidean": Euclidean}
