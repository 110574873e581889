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

from fsnn.checks import (
    Count,
    Flag,
    NonNegative,
    NonNegativeInt,
    OptionError,
    Positive,
    Probability,
    Real,
    checked,
    one_of,
)
from fsnn.models.energy import SynapticLayer
from fsnn.models.manifolds import GEOMETRIES
from fsnn.models.poisson import add_spike_noise
from fsnn.models.registry import register_backbone
from fsnn.neurons.registry import build_neuron

DECODERS = ("cosine", "minkowski", "fermi_dirac")  # the link decoders of MSG.decode


def gcn_adjacency(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """GCN's propagation matrix ``D^-1/2 (A + I) D^-1/2`` (row: the target node) as a sparse CSR tensor, so that
    ``gcn_adjacency(edge_index, N) @ h`` is ``GCNConv``'s aggregation of ``h [N, ...]`` (PyG's ``gcn_norm``, self loops
    added): one sparse product in place of a gather, a multiply and a scatter over every edge."""
    from torch_geometric.nn.conv.gcn_conv import gcn_norm

    index, weight = gcn_norm(edge_index, None, num_nodes, add_self_loops=True)
    return torch.sparse_coo_tensor(index.flip(0), weight, (num_nodes, num_nodes)).coalesce().to_sparse_csr()


def aggregate(adjacency: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """``adjacency @ h`` for node features ``h [N, dim]`` or spike trains ``[T, N, dim]`` (all steps in one product)."""
    if h.dim() == 2:
        return adjacency @ h
    steps, nodes, dim = h.shape
    out = adjacency @ h.transpose(0, 1).reshape(nodes, steps * dim)
    return out.view(nodes, steps, dim).transpose(0, 1)


class _Cache:
    """The last few values computed from a tensor, held with the tensor itself (so that its memory cannot be reused by
    another one while cached) and its in-place version: the graph's adjacency and sparse features, built once per
    split rather than at every forward."""

    def __init__(self, size: int = 4):
        self.size, self.items = size, []

    def get(self, tensor: torch.Tensor, build):
        for i, (source, version, value) in enumerate(self.items):
            if source is tensor and version == tensor._version:
                self.items.append(self.items.pop(i))
                return value
        value = build()
        self.items = [*self.items[-(self.size - 1) :], (tensor, tensor._version, value)]
        return value


class _MSGLayer(nn.Module):
    """Spiking GCN layer on spike trains with a manifold state: ``x = GCNConv(s)`` per step, ``y = step * mean_T(x)``,
    spikes ``neuron(x)``, state ``z <- Exp_z(P_{o->z} y)``. ``GCNConv`` holds the weight; its aggregation runs as one
    sparse product for all steps (:func:`aggregate`)."""

    def __init__(self, dim, neuron, neuron_kwargs, step_size, dropout):
        super().__init__()
        from torch_geometric.nn import GCNConv

        self.conv = GCNConv(dim, dim, bias=False)
        self.neuron = build_neuron(neuron, **neuron_kwargs)
        self.step_size, self.dropout = step_size, dropout

    def forward(self, spikes, z, adjacency, geometry, neuron_input=lambda currents: currents):
        x = F.dropout(aggregate(adjacency, self.conv.lin(spikes)), self.dropout, self.training)  # [T, N, dim]
        y = x.mean(0) * self.step_size
        return self.neuron(neuron_input(x)), geometry.move(z, y)


@register_backbone("msg", supports={"graph"}, decodes_links=True)
class MSG(nn.Module):
    """Manifold-valued spiking GNN (Sun et al. 2024) with any neuron.

    Encoder: ``h = GCNConv(F, dim)(x)``; the manifold state starts at ``z = Exp_o(step * h)`` and ``h`` repeated over
    ``T`` steps drives the first neuron. Each of ``n_layers`` spiking layers runs ``GCNConv(dim, dim)`` on the spike
    trains ``[T, N, dim]``, moves ``z <- Exp_z(P_{o->z}(step * mean_T(currents)))`` and fires a new spike train.

    Heads: :meth:`forward` gives node-classification logits ``Linear(dim, C)(Log_o z)`` (MSG's authors compute their
    loss and their reported accuracy on two different embeddings; here both use ``Log_o z``); :meth:`decode` gives
    link logits for a binary cross-entropy with logits, one of

    * ``decoder="cosine"`` (default): ``cos(Log_o a, Log_o b) / temperature``, the cosine similarity of the tangent
      vectors at the origin; with ``temperature=1`` MSG's Lorentz decoder as its released code scores links
      (``exp.py``, ``Exp.cal_lp_loss``, ZhenhHuang/MSG at ``9b0591c``, the version with the link-prediction configs);
    * ``decoder="minkowski"``: ``<a, b>_L = -a_0 b_0 + sum_i a_i b_i``, the Lorentz inner product of the two points
      (``-k cosh(d(a, b) / sqrt(k))``, at most ``-k``), MSG's Lorentz decoder in its May 2024 code (``826fce3``);
      Lorentz model only;
    * ``decoder="fermi_dirac"``: ``(r - d^2) / t`` on the squared geodesic distance (the logit of
      ``1 / (exp((d^2 - r) / t) + 1)``), every manifold; MSG uses Fermi-Dirac, on the distance, on the sphere and in
      Euclidean space only.

    Gradients: plain backpropagation through time with the neurons' surrogate gradients, plus the exact autograd
    derivatives of the exponential/log maps (the state path). MSG's "differentiation via manifold", which blocks the
    gradient into the spikes, is not used by default: it makes the neuron (the only thing compared) irrelevant to
    learning. ``authors_no_spike_gradient=True`` restores it (the authors' fractional MSG, whose neuron's backward
    returns no gradient for its input): the parameters then learn only through the state path.

    The authors' fractional MSG decodes as MSG's released code does: ``decoder="cosine"`` with ``temperature=1``.

    ``full_graph = True``: the model needs the whole graph (``x``, ``edge_index``) for any node's output.

    Args:
        in_features: supplied by the task (:func:`fsnn.models.register_backbone`): the width ``F`` of the graph's
            node features ``x``.
        num_classes: supplied by the task (:func:`fsnn.models.register_backbone`), the classes ``C`` of the
            node-classification head, or ``None`` (default: no head, for link prediction, ``task=link``).
        neuron: supplied by the task (:func:`fsnn.models.register_backbone`); default ``"fif"``.
        neuron_kwargs: supplied by the task (:func:`fsnn.models.register_backbone`); default ``None``.
        T: the number of time steps the encoded features drive the neurons for; default ``10``, which
            ``conf/backbone/msg.yaml`` sets over the dataset's (:func:`fsnn.models.register_backbone`); the paper
            follows MSG with ``T`` in ``[5, 15]``.
        dim: the dimension of the representation space (the manifold's tangent space), an integer >= 1; default
            ``32`` (the paper's).
        n_layers: the number of spiking ``GCNConv`` layers after the encoder, an integer >= 0; default ``1``.
        manifold: the geometry of the state ``z``: ``"lorentz"`` (default, the paper's Lorentz model),
            ``"sphere"`` or ``"euclidean"`` (:mod:`fsnn.models.manifolds`).
        step_size: the step of the exponential maps that move the state, a number > 0; default ``0.1``.
        dropout: the probability of zeroing an aggregated current (training only), a number in ``[0, 1)``;
            default ``0.0``.
        decoder: the link decoder of :meth:`decode` (see above): ``"cosine"`` (default: cosine similarity of
            ``Log_o z`` over ``temperature``), ``"minkowski"`` (the Lorentz inner product of the points; ``manifold=
            "lorentz"`` only) or ``"fermi_dirac"`` (``(r - d^2) / t`` on the squared geodesic distance).
        r: the Fermi-Dirac radius, the squared distance at which a link has probability 1/2, any finite number;
            default ``2.0``. Used by ``decoder="fermi_dirac"`` only.
        t: the Fermi-Dirac temperature, a number > 0; default ``1.0`` (smaller: sharper). Used by
            ``decoder="fermi_dirac"`` only.
        temperature: the divisor of the cosine similarity, a number > 0; default ``1.0`` (MSG's released code
            divides by nothing). Used by ``decoder="cosine"`` only.
        spike_noise_std: the standard deviation of Gaussian noise added to the encoder's spikes (the robustness
            probe, ``corruption=spike_noise``), a finite number >= 0; default ``0.0`` (off).
        authors_no_spike_gradient: ``True`` blocks the gradient into the spikes (the authors' fractional MSG, see
            above); default ``False``.
    """

    full_graph = True
    #: the options of one decoder: a config that gives one another value than its default under another decoder is
    #: refused (fsnn.checks.check_mode_options) rather than ignored
    mode_options = {
        "r": ("decoder", ("fermi_dirac",)),
        "t": ("decoder", ("fermi_dirac",)),
        "temperature": ("decoder", ("cosine",)),
    }

    @staticmethod
    def check_options(options: dict) -> None:
        """The combination of options MSG does not take (an :class:`fsnn.checks.OptionError`), refused alike by the
        constructor and by a config's schema (:meth:`fsnn.registry.Registry.schema`): ``decoder="minkowski"``, the
        Lorentz inner product, on another manifold than the Lorentz model."""
        if options["decoder"] == "minkowski" and options["manifold"] != "lorentz":
            raise OptionError(
                "decoder",
                f"cosine or fermi_dirac with manifold={options['manifold']!r} (minkowski is the Lorentz inner "
                "product: it needs manifold='lorentz')",
                options["decoder"],
            )

    @checked
    def __init__(
        self,
        in_features: Count,
        num_classes: int | None = None,
        neuron: str = "fif",
        neuron_kwargs: dict | None = None,
        T: Count = 10,
        dim: Count = 32,
        n_layers: NonNegativeInt = 1,
        manifold: one_of(*GEOMETRIES) = "lorentz",
        step_size: Positive = 0.1,
        dropout: Probability = 0.0,
        decoder: one_of(*DECODERS) = "cosine",
        r: Real = 2.0,
        t: Positive = 1.0,
        temperature: Positive = 1.0,
        spike_noise_std: NonNegative = 0.0,
        authors_no_spike_gradient: Flag = False,
    ):
        super().__init__()
        from torch_geometric.nn import GCNConv

        self.check_options({"decoder": decoder, "manifold": manifold})
        self.in_features, self.T, self.dim, self.n_layers = in_features, T, dim, n_layers
        self.step_size, self.dropout = step_size, dropout
        neuron_kwargs = dict(neuron_kwargs or {})
        self.num_classes = int(num_classes) if num_classes else None
        self.manifold_name = manifold
        self.decoder, self.r, self.t, self.temperature = decoder, r, t, temperature
        self.geometry = GEOMETRIES[manifold](self.dim)
        self.encoder = GCNConv(self.in_features, self.dim, bias=False)
        self.encoder_neuron = build_neuron(neuron, **neuron_kwargs)
        self.layers = nn.ModuleList(
            _MSGLayer(self.dim, neuron, neuron_kwargs, self.step_size, self.dropout) for _ in range(self.n_layers)
        )
        self.head = nn.Linear(self.dim, self.num_classes) if self.num_classes else None
        self.spike_noise_std = spike_noise_std
        self.authors_no_spike_gradient = authors_no_spike_gradient
        self.avg_degree = 0.0  # in-degree (without self loops) of the last graph seen, for the energy estimate
        self._adjacency, self._features = _Cache(), _Cache()

    def extra_repr(self) -> str:
        return (
            f"T={self.T}, manifold={self.manifold_name}, step_size={self.step_size}, dropout={self.dropout}, "
            f"decoder={self.decoder}, spike_noise_std={self.spike_noise_std}"
            + (", authors_no_spike_gradient=True" if self.authors_no_spike_gradient else "")
        )

    def encode(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Manifold embeddings ``[N, dim (+1 for Lorentz/sphere)]`` of every node; ``x`` dense or sparse CSR."""
        if x.dim() != 2 or x.shape[1] != self.in_features:
            raise ValueError(f"x must have shape [N, {self.in_features}] (dense or sparse CSR), got {tuple(x.shape)}")
        nodes = x.shape[0]
        self.avg_degree = edge_index.shape[1] / max(nodes, 1)
        adjacency = self._adjacency.get(edge_index, lambda: gcn_adjacency(edge_index, nodes))
        h = F.dropout(aggregate(adjacency, self._project(x)), self.dropout, self.training)
        z = self.geometry.expmap0(h * self.step_size)
        spikes = self.encoder_neuron(self._neuron_input(h.unsqueeze(0).expand(self.T, *h.shape).contiguous()))
        spikes = add_spike_noise(spikes, self.spike_noise_std)
        for layer in self.layers:
            spikes, z = layer(spikes, z, adjacency, self.geometry, self._neuron_input)
        return z

    def _neuron_input(self, currents: torch.Tensor) -> torch.Tensor:
        """What a neuron is fed: the currents, or (``authors_no_spike_gradient``) the currents cut from the graph, so
        that no gradient flows through a spike (the authors' fractional neuron returns none for its input)."""
        return currents.detach() if self.authors_no_spike_gradient else currents

    def _project(self, x: torch.Tensor) -> torch.Tensor:
        """The encoder's ``x W^T``: for sparse features (a sparse CSR ``x``, or a dense one that is mostly zeros,
        :func:`fsnn.data.graph_features.sparse_if_sparse`, converted once) as a sparse product."""
        from fsnn.data.graph_features import sparse_if_sparse

        weight = self.encoder.lin.weight
        if x.layout == torch.strided:
            x = self._features.get(x, lambda: sparse_if_sparse(x))
        return F.linear(x, weight) if x.layout == torch.strided else x @ weight.t()

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
        if self.decoder == "minkowski":
            return self.geometry.inner(a, b).squeeze(-1)
        return (self.r - self.geometry.sqdist(a, b)) / self.t

    def synaptic_layers(self) -> list[SynapticLayer]:
        """Encoder: MAC (real features), computed once (its output is repeated over T): ``F*dim`` for the linear map
        and ``(deg+1)*dim`` for the normalized aggregation. Spiking layers: ``dim*dim`` accumulates per step scaled by
        the firing rate of the spikes that drive them, plus ``(deg+1)*dim`` accumulates per step for the neighbour
        sums of the (real-valued) messages (the symmetric normalization folded into per-node scalings)."""
        agg = (self.avg_degree + 1.0) * self.dim
        layers = [
            SynapticLayer(
                "encoder", self.in_features * self.dim + agg, source=None, kind="MAC", steps=1, target="encoder_neuron"
            )
        ]
        source = "encoder_neuron"
        for i in range(self.n_layers):
            target = f"layers.{i}.neuron"
            layers.append(SynapticLayer(f"layers.{i}.conv", self.dim * self.dim, source=source, target=target))
            layers.append(SynapticLayer(f"layers.{i}.aggregate", agg, source=None, target=target))
            source = target
        return layers
