"""MSG (Sun et al. 2024, "Spiking Graph Neural Network on Riemannian Manifolds") with any neuron.

>>> from fsnn.models import build_backbone
>>> model = build_backbone("msg", in_features=F, num_classes=C, neuron="fif", T=10)
>>> logits = model(x, edge_index)            # node classification [N, C]; model.encode / decode for links

A ``GCNConv`` encoder, spiking ``GCNConv`` layers on spike trains, and a manifold state moved by exponential maps
(Lorentz model by default, sphere and Euclidean optional; :mod:`fsnn.models.manifolds`); heads for node
classification and link prediction. Every spiking nonlinearity is ``build_neuron(neuron, **neuron_kwargs)``.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from fsnn import build_neuron
from fsnn.checks import (Count, NonNegative, NonNegativeInt, Positive, Probability, Real, check_int, check_number,
                         check_ratio, one_of)
from fsnn.energy import SynapticLayer
from fsnn.models.manifolds import GEOMETRIES
from fsnn.models.registry import register_backbone
from fsnn.models.poisson import add_spike_noise, check_noise_std


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


@register_backbone("msg", supports={"graph"})
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
                 neuron_kwargs: dict | None = None, T: Count = 10, dim: Count = 32, n_layers: NonNegativeInt = 1,
                 manifold: one_of(*GEOMETRIES) = "lorentz", step_size: Positive = 0.1, dropout: Probability = 0.0,
                 decoder: one_of("fermi_dirac", "cosine") = "fermi_dirac", r: Real = 2.0, t: Positive = 1.0,
                 temperature: Positive = 0.2, spike_noise_std: NonNegative = 0.0):
        super().__init__()
        from torch_geometric.nn import GCNConv

        if manifold not in GEOMETRIES:
            raise ValueError(f"manifold must be one of {sorted(GEOMETRIES)}, got {manifold!r}")
        if decoder not in ("fermi_dirac", "cosine"):
            raise ValueError(f"decoder must be 'fermi_dirac' or 'cosine', got {decoder!r}")
        self.in_features, self.T = check_int("in_features", in_features), check_int("T", T)
        self.dim = check_int("dim", dim)
        self.n_layers = check_int("n_layers", n_layers, minimum=0)
        self.step_size = check_number("step_size", step_size, above=0.0, allowed="a number > 0")
        self.dropout = check_ratio("dropout", dropout, below_one=True)
        neuron_kwargs = dict(neuron_kwargs or {})
        self.num_classes = int(num_classes) if num_classes else None
        self.manifold_name = manifold
        self.decoder, self.r, self.t, self.temperature = decoder, float(r), float(t), float(temperature)
        self.geometry = GEOMETRIES[manifold](self.dim)
        self.encoder = GCNConv(self.in_features, self.dim, bias=False)
        self.encoder_neuron = build_neuron(neuron, **neuron_kwargs)
        self.layers = nn.ModuleList(
            _MSGLayer(self.dim, neuron, neuron_kwargs, self.step_size, self.dropout) for _ in range(self.n_layers))
        self.head = nn.Linear(self.dim, self.num_classes) if self.num_classes else None
        self.spike_noise_std = check_noise_std(spike_noise_std)
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
