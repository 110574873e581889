"""Spiking graph models: SGCN, DRSGNN and MSG, each taking any neuron through :func:`fsnn.build_neuron`.

>>> from fsnn.graphs.models import build_graph_model
>>> model = build_graph_model("sgcn", in_features=F, num_classes=C, neuron="flif", neuron_kwargs={"alpha": 0.3}, T=100)
>>> rates = model(features)          # [B, F] precomputed node features -> [B, C] mean firing rates over T

* ``sgcn`` (Zhu et al. 2022, SpikingGCN): Poisson spikes of the (propagated, standardized) node features ->
  ``Linear(F, C)`` -> (dropout) -> neuron; the output is the mean firing rate of the C class neurons over the T steps,
  on which training applies one cross-entropy (a single softmax; the authors' fspikeDE code applied ``softmax`` and
  then ``CrossEntropyLoss``, a double softmax).
* ``drsgnn`` (Zhao et al. 2024): SGCN whose input carries a positional encoding in its last ``pe_dim`` columns
  (Laplacian eigenvectors, whose signs are flipped at random in training mode only, or random-walk landing
  probabilities) and whose threshold is learned (see :class:`DRSGNN` for neurons that cannot learn one).
* ``msg`` (Sun et al. 2024, "Spiking Graph Neural Network on Riemannian Manifolds"): a ``GCNConv`` encoder, spiking
  ``GCNConv`` layers on spike trains, and a manifold state moved by exponential maps (Lorentz model by default, sphere
  and Euclidean optional; plain-PyTorch maps in geoopt's conventions, see :class:`Lorentz`); heads for node
  classification and link prediction.

Every spiking nonlinearity is ``build_neuron(neuron, **neuron_kwargs)`` (a fresh module per layer), so compared runs
differ only in the neuron. All tensors through neurons are ``[T, B, ...]``.

Energy: every model lists its synapses with :meth:`synaptic_layers` (a :class:`SynapticLayer` per layer), and
``fsnn.graphs.training.synaptic_energy`` turns them and measured firing rates into picojoules.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn
from torch.nn import functional as F

from fsnn import build_neuron
from fsnn.neurons import _NEURONS

__all__ = [
    "DRSGNN",
    "GRAPH_MODELS",
    "MSG",
    "PoissonEncoder",
    "SpikingGCN",
    "SynapticLayer",
    "build_graph_model",
    "graph_model_names",
    "neuron_accepts",
    "poisson_encode",
    "register_graph_model",
]


# ------------------------------------------------------------------------------------------------------- encoding
def poisson_encode(x: torch.Tensor, T: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Bernoulli ("Poisson") spike trains ``[T, *x.shape]`` that fire with probability ``clamp(x, 0, 1)`` at each step.

    The draw is repeated independently at every one of the ``T`` steps (SpikingJelly's ``PoissonEncoder``,
    ``rand <= x``, which on z-scored features is exactly this clamp: negative features never fire, features >= 1
    always fire). ``generator`` makes the draw reproducible without touching the global RNG.
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise ValueError(f"x must be a floating-point tensor, got {type(x).__name__}")
    if isinstance(T, bool) or int(T) != T or T < 1:
        raise ValueError(f"T must be an integer >= 1, got {T!r}")
    p = x.detach().clamp(0.0, 1.0)
    u = torch.rand((int(T), *x.shape), generator=generator, device=x.device, dtype=p.dtype)
    return (u < p).to(x.dtype)


class PoissonEncoder(nn.Module):
    """Module form of :func:`poisson_encode` (so that firing-rate probes can see the input spikes)."""

    emits_spikes = True  # counted by fsnn.training.SpikeRateMeter

    def __init__(self, T: int):
        super().__init__()
        if isinstance(T, bool) or int(T) != T or T < 1:
            raise ValueError(f"T must be an integer >= 1, got {T!r}")
        self.T = int(T)
        self.generator: torch.Generator | None = None

    def extra_repr(self) -> str:
        return f"T={self.T}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return poisson_encode(x, self.T, self.generator)


def add_spike_noise(spikes: torch.Tensor, std: float) -> torch.Tensor:
    """Robustness probe: Gaussian noise of standard deviation ``std`` added to a spike tensor (values stay real)."""
    if std <= 0.0:
        return spikes
    return spikes + std * torch.randn_like(spikes)


def _check_std(std) -> float:
    if isinstance(std, bool) or not math.isfinite(float(std)) or float(std) < 0.0:
        raise ValueError(f"spike_noise_std must be a finite number >= 0, got {std!r}")
    return float(std)


# ------------------------------------------------------------------------------------------------------ neurons
def neuron_accepts(neuron: str, keyword: str) -> bool:
    """Whether the neuron registered as ``neuron`` takes the keyword argument ``keyword``."""
    if neuron not in _NEURONS:
        raise ValueError(f"neuron must be one of {sorted(_NEURONS)}, got {neuron!r}")
    factory = _NEURONS[neuron]
    target = factory.__init__ if inspect.isclass(factory) else factory
    params = inspect.signature(target).parameters
    if keyword in params:
        return True
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        # the 'lif' factory forwards **kwargs to FractionalLIF
        return neuron in ("lif",) and keyword in inspect.signature(_NEURONS["flif"].__init__).parameters
    return False


def _inverse_softplus(y: float) -> float:
    return y + math.log(-math.expm1(-y))


# ------------------------------------------------------------------------------------------------------- energy
@dataclass(frozen=True)
class SynapticLayer:
    """One synaptic layer for the energy estimate.

    ``ops``: synaptic operations per sample (node) per step for a dense input (fan-in x fan-out for a linear layer);
    ``source``: firing-rate key (module name) of the spikes that drive it, or None for a non-spike (dense) input;
    ``kind``: ``"AC"`` (accumulate, 0.9 pJ) or ``"MAC"`` (multiply-accumulate, 4.6 pJ); ``steps``: how many times it
    runs per sample (None = the model's T); ``target``: the neuron that the layer feeds (for the authors' convention,
    which scales a layer by its output neuron's rate).
    """

    name: str
    ops: float
    source: str | None
    kind: str = "AC"
    steps: int | None = None
    target: str | None = None


# ------------------------------------------------------------------------------------------------------- SGCN
class SpikingGCN(nn.Module):
    """SGCN: Poisson spikes ``[T, B, F]`` -> ``Linear(F, C)`` -> dropout -> neuron -> mean firing rate ``[B, C]``.

    ``bias=True`` matches the authors' logged fspikeDE runs (1433*7 + 7 parameters on Cora); the spikeDE release uses
    ``bias=False``. Dropout (fspikeDE's placement) acts on the synaptic currents, one mask per node for all steps.
    ``spike_noise_std`` (robustness probe, off by default) adds Gaussian noise to the input spikes; it can be changed
    at any time (``model.spike_noise_std = 0.1``).
    """

    full_graph = False

    def __init__(self, in_features: int, num_classes: int, neuron: str = "flif", neuron_kwargs: dict | None = None,
                 T: int = 100, dropout: float = 0.0, bias: bool = True, spike_noise_std: float = 0.0):
        super().__init__()
        for name, value in (("in_features", in_features), ("num_classes", num_classes)):
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if isinstance(dropout, bool) or not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.in_features, self.num_classes = int(in_features), int(num_classes)
        self.T = int(T)
        self.encoder = PoissonEncoder(T)
        self.fc = nn.Linear(self.in_features, self.num_classes, bias=bool(bias))
        self.dropout = float(dropout)
        self.neuron = build_neuron(neuron, **dict(neuron_kwargs or {}))
        self.spike_noise_std = _check_std(spike_noise_std)

    def extra_repr(self) -> str:
        return f"T={self.T}, dropout={self.dropout}, spike_noise_std={self.spike_noise_std}"

    # hooks for DRSGNN
    def prepare_input(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def scale_currents(self, currents: torch.Tensor) -> torch.Tensor:
        return currents

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2 or x.shape[1] != self.in_features:
            raise ValueError(f"features must have shape [B, {self.in_features}], got {tuple(x.shape)}")
        spikes = add_spike_noise(self.encoder(self.prepare_input(x)), self.spike_noise_std)
        currents = self.fc(spikes)
        if self.training and self.dropout > 0.0:
            keep = 1.0 - self.dropout
            currents = currents * torch.empty_like(currents[0]).bernoulli_(keep).div_(keep)
        out = self.neuron(self.scale_currents(currents))
        return out.mean(0)

    def synaptic_layers(self) -> list[SynapticLayer]:
        return [SynapticLayer("fc", self.in_features * self.num_classes, source="encoder", target="neuron")]


# ------------------------------------------------------------------------------------------------------- DRSGNN
THRESHOLD_MODES = ("auto", "neuron", "scale", "fixed")
PE_KINDS = ("lap", "rw", "none")
PE_ALIASES = {"laplacian": "lap", "random_walk": "rw", None: "none", "": "none"}  # fsnn.graphs.features names


class DRSGNN(SpikingGCN):
    """DRSGNN: SGCN with a positional encoding in the last ``pe_dim`` input columns and a learnable threshold.

    ``in_features`` counts the positional-encoding columns (``F + pe_dim``). With ``pe="lap"`` each of the ``pe_dim``
    columns has its sign flipped at random (one sign per column and forward pass, shared by the nodes of the batch) in
    training mode only, the usual LapPE augmentation for the sign ambiguity of eigenvectors; ``pe="rw"`` (random-walk
    probabilities, sign-definite) is used as given. ``pe`` also accepts :func:`fsnn.graphs.features.node_features`'
    names (``"laplacian"``, ``"random_walk"``, None).

    Learnable threshold (``threshold_mode``):

    * ``"neuron"``: the neuron's own ``learn_threshold=True`` (fsnn neurons ``flif``/``fif``/``lif``).
    * ``"scale"``: a learnable scalar threshold ``theta`` held by DRSGNN; the currents are multiplied by
      ``theta0 / theta`` before a neuron with fixed threshold ``theta0``. For a neuron whose subthreshold dynamics are
      linear in the membrane potential with rest and reset at 0 (IF, LIF, f-IF, f-LIF; soft reset, or hard reset to
      0), this is exactly a neuron with threshold ``theta`` in the forward pass (only the surrogate's width differs by
      the factor ``theta0 / theta``), so baselines whose threshold is a plain float (SpikingJelly, snnTorch) get the
      same trainable parameter.
    * ``"auto"`` (default): ``"neuron"`` when the neuron takes ``learn_threshold``, else ``"scale"``.
    * ``"fixed"``: no learnable threshold.

    ``learned_threshold`` reports the current threshold in every mode.
    """

    def __init__(self, in_features: int, num_classes: int, neuron: str = "flif", neuron_kwargs: dict | None = None,
                 T: int = 100, pe: str = "lap", pe_dim: int = 32, threshold_mode: str = "auto", **kwargs):
        pe = PE_ALIASES.get(pe, pe)
        if pe not in PE_KINDS:
            raise ValueError(f"pe must be one of {list(PE_KINDS)} (or {sorted(k for k in PE_ALIASES if k)}), "
                             f"got {pe!r}")
        if threshold_mode not in THRESHOLD_MODES:
            raise ValueError(f"threshold_mode must be one of {list(THRESHOLD_MODES)}, got {threshold_mode!r}")
        pe_dim = 0 if pe == "none" else pe_dim
        if isinstance(pe_dim, bool) or int(pe_dim) != pe_dim or not 0 <= pe_dim < in_features:
            raise ValueError(f"pe_dim must be an integer in [0, in_features), got {pe_dim!r}")
        neuron_kwargs = dict(neuron_kwargs or {})
        if threshold_mode == "auto":
            threshold_mode = "neuron" if neuron_accepts(neuron, "learn_threshold") else "scale"
        if threshold_mode == "neuron":
            if not neuron_accepts(neuron, "learn_threshold"):
                raise ValueError(f"neuron {neuron!r} cannot learn its threshold; use threshold_mode='scale'")
            neuron_kwargs["learn_threshold"] = True
        elif neuron_accepts(neuron, "learn_threshold") and neuron_kwargs.get("learn_threshold"):
            raise ValueError(f"threshold_mode={threshold_mode!r} with learn_threshold=True would learn the threshold "
                             "twice (or not at all); drop learn_threshold or use threshold_mode='neuron'")
        super().__init__(in_features, num_classes, neuron, neuron_kwargs, T, **kwargs)
        self.pe, self.pe_dim, self.threshold_mode = pe, int(pe_dim), threshold_mode
        self.threshold0 = float(neuron_kwargs.get("threshold", self._neuron_default_threshold()))
        if threshold_mode == "scale":
            self.theta_raw = nn.Parameter(torch.tensor(_inverse_softplus(self.threshold0)))
        else:
            self.theta_raw = None

    def _neuron_default_threshold(self) -> float:
        value = getattr(self.neuron, "threshold", 1.0)
        return float(value.detach()) if isinstance(value, torch.Tensor) else float(value)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, pe={self.pe}, pe_dim={self.pe_dim}, threshold_mode={self.threshold_mode}"

    @property
    def learned_threshold(self) -> torch.Tensor:
        if self.theta_raw is not None:
            return F.softplus(self.theta_raw)
        value = getattr(self.neuron, "threshold", self.threshold0)
        return value if isinstance(value, torch.Tensor) else torch.tensor(float(value))

    def prepare_input(self, x: torch.Tensor) -> torch.Tensor:
        if not (self.training and self.pe == "lap" and self.pe_dim > 0):
            return x
        signs = torch.randint(0, 2, (self.pe_dim,), device=x.device).to(x.dtype).mul_(2).sub_(1)
        return torch.cat([x[:, :-self.pe_dim], x[:, -self.pe_dim:] * signs], dim=1)

    def scale_currents(self, currents: torch.Tensor) -> torch.Tensor:
        if self.theta_raw is None:
            return currents
        return currents * (self.threshold0 / F.softplus(self.theta_raw))


# ---------------------------------------------------------------------------------------------------- manifolds
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


# ------------------------------------------------------------------------------------------------------- MSG
class _MSGLayer(nn.Module):
    """Spiking GCN layer on spike trains with a manifold state: ``x = GCNConv(s)`` per step, ``y = step * mean_T(x)``,
    spikes ``neuron(x)``, state ``z <- Exp_z(P_{o->z} y)``."""

    def __init__(self, dim, neuron, neuron_kwargs, step_size, dropout):
        super().__init__()
        from torch_geometric.nn import GCNConv

        self.conv = GCNConv(dim, dim, bias=False)
        self.neuron = build_neuron(neuron, **neuron_kwargs)
        self.step_size, self.dropout = step_size, dropout

    def forward(self, spikes, z, edge_index, geometry):
        x = F.dropout(self.conv(spikes, edge_index), self.dropout, self.training)  # [T, N, dim]
        y = x.mean(0) * self.step_size
        return self.neuron(x), geometry.move(z, y)


class MSG(nn.Module):
    """Manifold-valued spiking GNN (Sun et al. 2024) with any neuron.

    Encoder: ``h = GCNConv(F, dim)(x)``; the manifold state starts at ``z = Exp_o(step * h)`` and ``h`` repeated over
    ``T`` steps drives the first neuron. Each of ``n_layers`` spiking layers runs ``GCNConv(dim, dim)`` on the spike
    trains ``[T, N, dim]``, moves ``z <- Exp_z(P_{o->z}(step * mean_T(currents)))`` and fires a new spike train.

    Heads: :meth:`forward` gives node-classification logits ``Linear(dim, C)(Log_o z)`` (MSG's authors compute their
    loss and their reported accuracy on two different embeddings; here both use ``Log_o z``); :meth:`decode` gives
    link logits, either Fermi-Dirac on the squared geodesic distance, ``(r - d^2) / t`` (the logit of
    ``1 / (exp((d^2 - r) / t) + 1)``; ``decoder="fermi_dirac"``, default, every manifold), or MSG's Lorentz choice,
    cosine similarity of ``Log_o z`` over ``temperature`` (``decoder="cosine"``).

    Gradients: plain backpropagation through time with the neurons' surrogate gradients, plus the exact autograd
    derivatives of the exponential/log maps (the state path). MSG's "differentiation via manifold", which blocks the
    gradient into the spikes, is not used: it would make the neuron (the only thing compared) irrelevant to learning.

    ``full_graph = True``: the model needs the whole graph (``x``, ``edge_index``) for any node's output.
    """

    full_graph = True

    def __init__(self, in_features: int, num_classes: int | None = None, neuron: str = "fif",
                 neuron_kwargs: dict | None = None, T: int = 10, dim: int = 32, n_layers: int = 1,
                 manifold: str = "lorentz", step_size: float = 0.1, dropout: float = 0.0, decoder: str = "fermi_dirac",
                 r: float = 2.0, t: float = 1.0, temperature: float = 0.2, spike_noise_std: float = 0.0):
        super().__init__()
        from torch_geometric.nn import GCNConv

        if manifold not in GEOMETRIES:
            raise ValueError(f"manifold must be one of {sorted(GEOMETRIES)}, got {manifold!r}")
        if decoder not in ("fermi_dirac", "cosine"):
            raise ValueError(f"decoder must be 'fermi_dirac' or 'cosine', got {decoder!r}")
        for name, value in (("in_features", in_features), ("T", T), ("dim", dim)):
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if isinstance(n_layers, bool) or int(n_layers) != n_layers or n_layers < 0:
            raise ValueError(f"n_layers must be an integer >= 0, got {n_layers!r}")
        if not float(step_size) > 0.0:
            raise ValueError(f"step_size must be > 0, got {step_size!r}")
        if isinstance(dropout, bool) or not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        neuron_kwargs = dict(neuron_kwargs or {})
        self.in_features, self.T, self.dim, self.n_layers = int(in_features), int(T), int(dim), int(n_layers)
        self.num_classes = int(num_classes) if num_classes else None
        self.manifold_name, self.step_size, self.dropout = manifold, float(step_size), float(dropout)
        self.decoder, self.r, self.t, self.temperature = decoder, float(r), float(t), float(temperature)
        self.geometry = GEOMETRIES[manifold](self.dim)
        self.encoder = GCNConv(self.in_features, self.dim, bias=False)
        self.encoder_neuron = build_neuron(neuron, **neuron_kwargs)
        self.layers = nn.ModuleList(
            _MSGLayer(self.dim, neuron, neuron_kwargs, self.step_size, self.dropout) for _ in range(self.n_layers))
        self.head = nn.Linear(self.dim, self.num_classes) if self.num_classes else None
        self.spike_noise_std = _check_std(spike_noise_std)
        self.avg_degree = 0.0  # in-degree (without self loops) of the last graph seen, for the energy estimate

    def extra_repr(self) -> str:
        return (f"T={self.T}, manifold={self.manifold_name}, step_size={self.step_size}, dropout={self.dropout}, "
                f"decoder={self.decoder}, spike_noise_std={self.spike_noise_std}")

    def encode(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Manifold embeddings ``[N, dim (+1 for Lorentz/sphere)]`` of every node."""
        if x.dim() != 2 or x.shape[1] != self.in_features:
            raise ValueError(f"x must have shape [N, {self.in_features}], got {tuple(x.shape)}")
        self.avg_degree = edge_index.shape[1] / max(x.shape[0], 1)
        h = F.dropout(self.encoder(x, edge_index), self.dropout, self.training)
        z = self.geometry.expmap0(h * self.step_size)
        spikes = self.encoder_neuron(h.unsqueeze(0).expand(self.T, *h.shape).contiguous())
        spikes = add_spike_noise(spikes, self.spike_noise_std)
        for layer in self.layers:
            spikes, z = layer(spikes, z, edge_index, self.geometry)
        return z

    def embed(self, z: torch.Tensor) -> torch.Tensor:
        """Tangent coordinates ``Log_o z`` ``[N, dim]`` (Euclidean features for heads and probes)."""
        return self.geometry.logmap0(z)

    def classify(self, z: torch.Tensor) -> torch.Tensor:
        if self.head is None:
            raise RuntimeError("this MSG has no classification head (num_classes=None)")
        return self.head(self.embed(z))

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Node-classification logits ``[N, C]``."""
        return self.classify(self.encode(x, edge_index))

    def decode(self, z: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
        """Link logits ``[P]`` for node pairs ``pairs`` ``[2, P]`` (use with ``binary_cross_entropy_with_logits``)."""
        a, b = z[pairs[0]], z[pairs[1]]
        if self.decoder == "cosine":
            return F.cosine_similarity(self.embed(a), self.embed(b), dim=-1) / self.temperature
        return (self.r - self.geometry.sqdist(a, b)) / self.t

    def synaptic_layers(self) -> list[SynapticLayer]:
        """Encoder: MAC (real features), computed once (its output is repeated over T): ``F*dim`` for the linear map
        and ``(deg+1)*dim`` for the normalized aggregation. Spiking layers: ``dim*dim`` accumulates per step scaled by
        the firing rate of the spikes that drive them, plus ``(deg+1)*dim`` accumulates per step for the neighbour
        sums of the (real-valued) messages (the symmetric normalization folded into per-node scalings)."""
        agg = (self.avg_degree + 1.0) * self.dim
        layers = [SynapticLayer("encoder", self.in_features * self.dim + agg, source=None, kind="MAC", steps=1,
                                target="encoder_neuron")]
        source = "encoder_neuron"
        for i in range(self.n_layers):
            target = f"layers.{i}.neuron"
            layers.append(SynapticLayer(f"layers.{i}.conv", self.dim * self.dim, source=source, target=target))
            layers.append(SynapticLayer(f"layers.{i}.aggregate", agg, source=None, target=target))
            source = target
        return layers


# ----------------------------------------------------------------------------------------------------- registry
GRAPH_MODELS: dict[str, type[nn.Module]] = {}


def register_graph_model(name: str):
    def wrap(cls):
        GRAPH_MODELS[name] = cls
        return cls

    return wrap


register_graph_model("sgcn")(SpikingGCN)
register_graph_model("drsgnn")(DRSGNN)
register_graph_model("msg")(MSG)


def graph_model_names() -> list[str]:
    return sorted(GRAPH_MODELS)


def build_graph_model(name: str, in_features: int, num_classes: int | None, neuron: str | None = None,
                      neuron_kwargs: dict | None = None, T: int | None = None, **kwargs) -> nn.Module:
    """``GRAPH_MODELS[name](in_features, num_classes, neuron=..., neuron_kwargs=..., T=..., **kwargs)``; ``neuron`` and
    ``T`` default to the model's own defaults (``flif``/100 for sgcn and drsgnn, ``fif``/10 for msg)."""
    if name not in GRAPH_MODELS:
        raise ValueError(f"graph model must be one of {graph_model_names()}, got {name!r}")
    cls = GRAPH_MODELS[name]
    allowed = set(inspect.signature(cls.__init__).parameters) - {"self", "kwargs"}
    if cls is DRSGNN:
        allowed |= set(inspect.signature(SpikingGCN.__init__).parameters) - {"self"}
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise ValueError(f"graph model {name!r} does not take {unknown}; it accepts {sorted(allowed)}")
    extra = {"neuron_kwargs": dict(neuron_kwargs or {})}
    if neuron is not None:
        extra["neuron"] = neuron
    if T is not None:
        extra["T"] = T
    return cls(in_features, num_classes, **extra, **kwargs)
