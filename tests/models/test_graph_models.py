"""Spiking graph models (SGCN, DRSGNN, MSG, GAE), link splits and the energy estimate.

Tiny graphs (PyG's KarateClub, random graphs), T = 8, CPU; the whole file runs in seconds.
"""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from tiny_graphs import (
    MSG_NEURON_NAMES,
    NODE_NEURON_NAMES,
    T,
    encode,
    graph_model,
    mixed_probabilities,
    neuron_kwargs,
    pairs,
    propagate,
    random_graph,
)
from torch import nn
from torch.nn import functional as F
from torch_geometric.data import Data
from torch_geometric.utils import erdos_renyi_graph

from fsnn.data.datamodules import (
    link_split,
    link_split_leaks,
    sample_train_negatives,
)
from fsnn.models import (
    DRSGNN,
    MSG,
    backbone_names,
    backbone_supports,
    build_backbone,
    poisson,
)
from fsnn.models.energy import SynapticLayer, synaptic_energy
from fsnn.models.manifolds import Euclidean, Lorentz, Sphere
from fsnn.models.poisson import poisson_encode
from fsnn.models.probes import firing_rates
from fsnn.models.sgcn import cumulated_spike_readout
from fsnn.neurons.registry import is_neuron

pytestmark = pytest.mark.filterwarnings(
    "ignore:.*self.trainer.*:UserWarning",
    "ignore::UserWarning:lightning.*",
    "ignore::lightning.fabric.utilities.warnings.PossibleUserWarning",
)


# ------------------------------------------------------------------------------------------------------ encoding
def test_poisson_rate_matches_probability_and_resamples_each_step():
    p = torch.tensor([-0.5, 0.0, 0.05, 0.3, 0.5, 0.9, 1.0, 1.7])
    steps = 4000
    gen = torch.Generator().manual_seed(1234)
    spikes = poisson_encode(p, steps, generator=gen).dense()
    assert spikes.shape == (steps, 8) and spikes.dtype == p.dtype
    assert set(spikes.unique().tolist()) <= {0.0, 1.0}
    q = p.clamp(0, 1)
    rate = spikes.mean(0)
    sigma = torch.sqrt(q * (1 - q) / steps)
    assert torch.all((rate - q).abs() <= 4 * sigma + 1e-12), (rate, q)
    assert rate[0] == 0 and rate[1] == 0 and rate[6] == 1 and rate[7] == 1  # clamp: never / always fire
    # a fresh draw at every step (not one frozen pattern): p = 0.5 changes between steps about half the time
    flips = (spikes[1:, 4] != spikes[:-1, 4]).float().mean()
    assert 0.4 < flips < 0.6
    # reproducible from the generator, different without it
    again = poisson_encode(p, steps, generator=torch.Generator().manual_seed(1234)).dense()
    assert torch.equal(spikes, again)
    assert not torch.equal(spikes, poisson_encode(p, steps).dense())
    # batched input keeps its shape behind T
    assert poisson_encode(torch.rand(3, 5), 7).dense().shape == (7, 3, 5)


@pytest.mark.parametrize("path", ["sparse", "dense", "compiled"])
def test_poisson_linear_equals_the_layer_on_dense_spikes(path, monkeypatch):
    """Every path of PoissonSpikes.linear gives the layer's currents and gradients on the same spikes (a seeded
    encoding draws the same spikes whichever way it is consumed)."""
    if path == "compiled" and (reason := poisson.EXTENSION.unavailable_reason()) is not None:
        pytest.skip(f"the Poisson kernels cannot be built here: {reason}")
    monkeypatch.setattr(poisson, "DENSE_FROM", 0.0 if path == "dense" else math.inf)
    monkeypatch.setattr(poisson, "COMPILED_FROM", 0.0 if path == "compiled" else math.inf)
    torch.manual_seed(0)
    x = mixed_probabilities()
    x[:, :10] = 1.5  # always fire
    layer = nn.Linear(50, 7)
    fast = encode(x).linear(layer.weight, layer.bias)
    slow = layer(encode(x).dense())
    assert fast.shape == slow.shape == (30, 16, 7)
    assert torch.allclose(fast, slow, atol=1e-5)
    g_fast = torch.autograd.grad(fast.square().sum(), [layer.weight, layer.bias])
    g_slow = torch.autograd.grad(slow.square().sum(), [layer.weight, layer.bias])
    for a, b in zip(g_fast, g_slow):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-3)
    # under mixed precision (trainer.precision=bf16-mixed) it gives what the layer gives: bf16, the same values
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fast, slow = encode(x).linear(layer.weight, layer.bias), layer(encode(x).dense())
    assert fast.dtype == slow.dtype == torch.bfloat16
    torch.testing.assert_close(fast.float(), slow.float(), rtol=0.02, atol=0.05)


@pytest.mark.parametrize("frozen", [False, True])
def test_poisson_draws_one_stream_in_chunks_of_bounded_size(frozen, monkeypatch):
    """Every chunk size draws the same spikes (step by step, rows in order), and no draw is larger than the chunk
    budget whatever the batch: evaluation memory is bounded by the chunk, not by the batch (the torch sampler)."""
    monkeypatch.setattr(poisson, "COMPILED_FROM", math.inf)
    x = mixed_probabilities(rows=40, features=30, certain=0.3)
    whole = encode(x, steps=12, frozen=frozen).dense()
    layer = nn.Linear(30, 5)
    reference = layer(whole)
    sizes = []
    real_rand = torch.rand

    def recording_rand(size, *args, **kwargs):
        sizes.append(math.prod(size))
        return real_rand(size, *args, **kwargs)

    monkeypatch.setattr(torch, "rand", recording_rand)
    for chunk in (1 << 22, 900, 200, 7):
        monkeypatch.setattr(poisson, "CHUNK_ELEMENTS", chunk)
        sizes.clear()
        spikes = encode(x, steps=12, frozen=frozen)
        assert torch.equal(spikes.dense(), whole), chunk
        assert spikes.count() == float(whole.sum())
        assert max(sizes) <= max(chunk, 30)  # a chunk is at least one row of one step
        for dense_from in (0.0, math.inf):
            monkeypatch.setattr(poisson, "DENSE_FROM", dense_from)
            torch.testing.assert_close(
                encode(x, steps=12, frozen=frozen).linear(layer.weight, layer.bias), reference, rtol=1e-5, atol=1e-5
            )
    assert len(sizes) > 12  # the smallest chunks did split the steps into blocks of rows


def test_poisson_spikes_are_drawn_once():
    spikes = encode(mixed_probabilities())
    with pytest.raises(RuntimeError, match="known once the spikes are drawn"):
        spikes.count()
    spikes.linear(torch.ones(3, 50))
    assert spikes.count() > 0
    with pytest.raises(RuntimeError, match="already used"):
        spikes.dense()


def test_frozen_encoding_repeats_one_pattern():
    p = torch.full((4, 200), 0.5)
    frozen = poisson_encode(p, 12, generator=torch.Generator().manual_seed(0), frozen=True).dense()
    assert torch.equal(frozen, frozen[:1].expand_as(frozen))
    assert 0.3 < float(frozen.mean()) < 0.7
    fresh = poisson_encode(p, 12, generator=torch.Generator().manual_seed(0)).dense()
    assert not torch.equal(fresh, fresh[:1].expand_as(fresh))


def test_authors_double_softmax_outputs_probabilities(karate):
    model = build_backbone(
        "sgcn",
        in_features=karate.features.shape[1],
        num_classes=4,
        neuron="lif",
        neuron_kwargs={},
        T=T,
        authors_double_softmax=True,
    ).eval()
    out = model(karate.features)
    assert torch.allclose(out.sum(1), torch.ones(len(out))) and (out > 0).all()


def test_cumulated_spike_readout_by_hand():
    """c_T = sum_k K_{T-1-k} s_k with K_m = ((m+1)^b - m^b) / Gamma(b+1): three steps, b = 0.5, spikes 1, 0, 1."""
    spikes = torch.tensor([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]])  # [T = 3, 2 outputs]
    gamma = math.gamma(1.5)
    k0, k2 = 1 / gamma, (math.sqrt(3) - math.sqrt(2)) / gamma
    out = cumulated_spike_readout(spikes, 0.5)
    torch.testing.assert_close(out, torch.tensor([k0 + k2, k0]), rtol=1e-6, atol=0.0)
    assert torch.equal(cumulated_spike_readout(spikes, 1.0), spikes.sum(0))  # order 1: the spike count (dt = 1)
    # differentiable in the order (a learned alpha): a later spike gains relative to an earlier one as it shrinks
    order = torch.tensor(0.5, requires_grad=True)
    cumulated_spike_readout(spikes[:, :1], order).sum().backward()
    assert order.grad is not None and torch.isfinite(order.grad)


@pytest.mark.parametrize("neuron, kwargs", [("flif", {"alpha": 0.3, "learn_alpha": True}), ("sj_lif", {})])
def test_authors_cumulated_readout_integrates_the_output_spikes(karate, neuron, kwargs):
    """The switch reads the output spikes out with the neuron's alpha (1 for a first-order neuron) instead of their
    mean; the rest of the model is unchanged."""
    torch.manual_seed(0)
    model = build_backbone(
        "sgcn",
        in_features=karate.features.shape[1],
        num_classes=4,
        neuron=neuron,
        neuron_kwargs=kwargs,
        T=T,
        authors_cumulated_readout=True,
    )
    assert "authors_cumulated_readout=True" in repr(model)
    spikes = []
    model.neuron.register_forward_hook(lambda _m, _i, out: spikes.append(out))
    out = model(karate.features)
    order = model.neuron.alpha if neuron == "flif" else 1.0
    torch.testing.assert_close(out, cumulated_spike_readout(spikes[0], order))
    if neuron == "flif":  # the read-out's order is the learned alpha: it gets a gradient through the read-out too
        out.sum().backward()
        assert model.neuron.alpha_raw.grad is not None


# ------------------------------------------------------------------------------------------- one training step
@pytest.mark.parametrize("name", ["sgcn", "drsgnn"])
@pytest.mark.parametrize("neuron", NODE_NEURON_NAMES)
def test_node_models_train_step_has_finite_gradients(karate, name, neuron):
    torch.manual_seed(0)
    model = graph_model(name, neuron, karate.features.shape[1], 4, dropout=0.2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    rates = model(karate.features)
    loss = F.cross_entropy(rates, karate.y)
    loss.backward()
    assert torch.isfinite(loss)
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    for n, p in trainable:
        assert p.grad is not None, n
        assert torch.isfinite(p.grad).all(), n
    assert any(float(p.grad.abs().sum()) > 0 for _, p in trainable)
    before = [p.detach().clone() for _, p in trainable]
    opt.step()
    assert any(not torch.equal(b, p) for b, (_, p) in zip(before, trainable))


def test_msg_link_decoders_score_as_their_equations(karate):
    """``cosine`` (the default, temperature 1): the cosine similarity of ``Log_o z``; ``minkowski``: the Lorentz inner
    product of the points, ``-cosh d`` on the unit hyperboloid; ``fermi_dirac``: ``(r - d^2) / t``. Each passes a
    gradient back to the encoder; ``minkowski`` needs the Lorentz model."""
    pairs = karate.edge_index[:, :20]
    for decoder in ("cosine", "minkowski", "fermi_dirac"):
        torch.manual_seed(0)
        options = {} if decoder == "cosine" else {"decoder": decoder}
        model = build_backbone(
            "msg", in_features=karate.num_features, neuron="fif", T=4, dim=8, step_size=0.5, **options
        )
        z = model.encode(karate.x, karate.edge_index)
        a, b = z[pairs[0]], z[pairs[1]]
        distance = model.geometry.sqdist(a, b).sqrt()
        expected = {
            "cosine": F.cosine_similarity(model.embed(a), model.embed(b), dim=-1),
            "minkowski": -a[:, 0] * b[:, 0] + (a[:, 1:] * b[:, 1:]).sum(-1),
            "fermi_dirac": 2.0 - distance**2,
        }[decoder]
        logits = model.decode(z, pairs)
        assert logits.shape == (20,) and torch.allclose(logits, expected, atol=1e-5), decoder
        if decoder == "minkowski":
            assert torch.allclose(logits, -torch.cosh(distance), atol=1e-3)
        F.binary_cross_entropy_with_logits(logits, torch.ones_like(logits)).backward()
        assert float(model.encoder.lin.weight.grad.abs().sum()) > 0, decoder
    with pytest.raises(ValueError, match="minkowski.*lorentz"):
        build_backbone("msg", in_features=4, manifold="sphere", decoder="minkowski")


@pytest.mark.parametrize("manifold", ["lorentz", "sphere", "euclidean"])
@pytest.mark.parametrize("neuron", MSG_NEURON_NAMES)
def test_msg_train_step_has_finite_gradients(karate, manifold, neuron):
    torch.manual_seed(0)
    model = build_backbone(
        "msg",
        in_features=karate.num_features,
        num_classes=4,
        neuron=neuron,
        neuron_kwargs=neuron_kwargs(neuron, 0.2),
        T=T,
        manifold=manifold,
        n_layers=2,
        dim=8,
        step_size=0.5,
    )
    z = model.encode(karate.x, karate.edge_index)
    assert z.shape == (34, 8 + (manifold != "euclidean"))
    logits = model.classify(z)
    link = model.decode(z, karate.edge_index[:, :20])
    loss = F.cross_entropy(logits, karate.y) + F.binary_cross_entropy_with_logits(link, torch.ones_like(link))
    loss.backward()
    assert torch.isfinite(loss)
    for n, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), n
    assert float(model.encoder.lin.weight.grad.abs().sum()) > 0
    if manifold == "lorentz":  # points stay on the hyperboloid
        assert torch.allclose(Lorentz.inner(z, z), -torch.ones(34, 1), atol=1e-4)
    if manifold == "sphere":
        assert torch.allclose(z.norm(dim=-1), torch.ones(34), atol=1e-5)


def test_msg_runs_under_inference_mode_after_backward(karate):
    """MSG evaluates under inference_mode after a backward pass, where geoopt's TorchScript Lorentz maps, once profiled
    with autograd, fail."""
    model = build_backbone("msg", in_features=karate.num_features, num_classes=4, T=5)
    model(karate.x, karate.edge_index).sum().backward()
    model.eval()
    with torch.inference_mode():
        assert torch.isfinite(model(karate.x, karate.edge_index)).all()


@pytest.mark.parametrize(
    "geometry",
    [Lorentz(5), Lorentz(5, k=2.0), Sphere(5), Euclidean(5)],
    ids=["lorentz", "lorentz_k2", "sphere", "euclidean"],
)
def test_manifold_maps_are_consistent_and_gradient_safe(geometry):
    torch.manual_seed(0)
    v = torch.randn(6, 5, dtype=torch.float64) * 0.8
    w = torch.randn(6, 5, dtype=torch.float64) * 0.5
    z = geometry.expmap0(v)
    assert torch.allclose(geometry.logmap0(z), v, atol=1e-10)  # Log_o inverts Exp_o
    # the geodesic distance from the origin is the tangent norm; the distance is symmetric and zero on the diagonal
    o = geometry.origin(6, v)
    assert torch.allclose(geometry.sqdist(o, z), (v * v).sum(-1), atol=1e-10)
    z2 = geometry.move(z, w)
    assert torch.allclose(geometry.sqdist(z, z2), geometry.sqdist(z2, z), atol=1e-12)
    # d(z, Exp_z(u)) = |u|: parallel transport (Lorentz, Euclidean) keeps |w|; the sphere projects w onto T_z
    u = Sphere.proju(z, F.pad(w, (1, 0))) if isinstance(geometry, Sphere) else w
    assert torch.allclose(geometry.sqdist(z, z2), (u * u).sum(-1), atol=1e-8)
    assert torch.equal(geometry.sqdist(z, z), torch.zeros(6, dtype=torch.float64))
    # gradients stay finite at zero tangent vectors and coincident points
    zero = torch.zeros(4, 5, requires_grad=True)
    out = geometry.move(geometry.expmap0(zero), zero)
    (out.sum() + geometry.sqdist(out, out).sum() + geometry.logmap0(out).sum()).backward()
    assert torch.isfinite(zero.grad).all()


def test_manifold_maps_match_geoopt():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # geoopt 0.5.1 calls torch.jit.script at import
        geoopt = pytest.importorskip("geoopt")
    torch.manual_seed(0)
    v = torch.randn(6, 4, dtype=torch.float64)
    w = torch.randn(6, 4, dtype=torch.float64) * 0.7
    lifted_v, lifted_w = F.pad(v, (1, 0)), F.pad(w, (1, 0))
    ours, ref = Lorentz(4), geoopt.Lorentz(k=1.0)
    z = ours.expmap0(v)
    assert torch.allclose(z, ref.expmap0(lifted_v), atol=1e-6)
    assert torch.allclose(ours.logmap0(z), ref.logmap0(z)[..., 1:], atol=1e-6)
    assert torch.allclose(ours.transp0(z, lifted_w), ref.transp0(z, lifted_w), atol=1e-6)
    z2 = ours.expmap0(w)
    assert torch.allclose(ours.sqdist(z, z2), ref.dist(z, z2) ** 2, atol=1e-6)
    ours, ref = Sphere(4), geoopt.Sphere()
    v = v / v.norm(dim=-1, keepdim=True) * 2.5 * torch.rand(6, 1, dtype=torch.float64)
    z, o = ours.expmap0(v), ours.origin(6, v)
    assert torch.allclose(z, ref.expmap(o, F.pad(v, (1, 0))), atol=1e-10)
    assert torch.allclose(ours.logmap0(z), ref.logmap(o, z)[..., 1:], atol=1e-8)
    assert torch.allclose(ours.move(z, w), ref.expmap(z, ref.proju(z, lifted_w)), atol=1e-10)
    assert torch.allclose(ours.sqdist(z, z2 := ours.expmap0(w)), ref.dist(z, z2) ** 2, atol=1e-8)


# --------------------------------------------------------------------------------------------------------- DRSGNN
def test_drsgnn_flips_laplacian_pe_signs_only_in_training(karate):
    pe_dim, F_in = 4, karate.features.shape[1]
    x = torch.cat([karate.features, torch.randn(34, pe_dim)], dim=1)
    model = build_backbone(
        "drsgnn", in_features=F_in + pe_dim, num_classes=4, neuron="lif", neuron_kwargs={}, T=T, pe="lap", pe_dim=pe_dim
    )
    seen = []
    model.encoder.register_forward_pre_hook(lambda _m, args: seen.append(args[0].detach().clone()))
    torch.manual_seed(0)
    model.train()
    for _ in range(12):
        model(x)
    for inp in seen:
        assert torch.equal(inp[:, :F_in], x[:, :F_in])  # features untouched
        assert torch.equal(inp[:, F_in:].abs(), x[:, F_in:].abs())
        signs = inp[:, F_in:] / x[:, F_in:]
        assert torch.equal(signs, signs[:1].expand_as(signs))  # one sign per column, shared by all nodes
    flipped = torch.stack([(inp[0, F_in:] / x[0, F_in:]) for inp in seen])
    assert (flipped < 0).any() and (flipped > 0).any()
    seen.clear()
    model.eval()
    model(x)
    assert torch.equal(seen[0], x)
    # random-walk PEs are sign-definite: never flipped
    rw = build_backbone(
        "drsgnn", in_features=F_in + pe_dim, num_classes=4, neuron="lif", neuron_kwargs={}, T=T, pe="rw", pe_dim=pe_dim
    )
    rw.encoder.register_forward_pre_hook(lambda _m, args: seen.append(args[0].detach().clone()))
    seen.clear()
    rw.train()
    for _ in range(5):
        rw(x)
    assert all(torch.equal(inp, x) for inp in seen)


def test_drsgnn_threshold_modes():
    flif = build_backbone(
        "drsgnn", in_features=10, num_classes=3, neuron="flif", neuron_kwargs={"threshold": 1.5}, T=T, pe_dim=4
    )
    assert flif.threshold_mode == "neuron" and flif.theta_raw is None
    assert flif.neuron.theta_raw is not None and flif.neuron.theta_raw.requires_grad
    assert math.isclose(float(flif.learned_threshold.detach()), 1.5, rel_tol=1e-6)
    sj = build_backbone(
        "drsgnn", in_features=10, num_classes=3, neuron="sj_lif", neuron_kwargs={"threshold": 1.5}, T=T, pe_dim=4
    )
    assert sj.threshold_mode == "scale" and sj.theta_raw.requires_grad
    assert math.isclose(float(sj.learned_threshold.detach()), 1.5, rel_tol=1e-6)
    with pytest.raises(ValueError, match="cannot learn"):
        build_backbone(
            "drsgnn",
            in_features=10,
            num_classes=3,
            neuron="sj_lif",
            neuron_kwargs={},
            T=T,
            threshold_mode="neuron",
            pe_dim=4,
        )
    with pytest.raises(ValueError, match="twice"):
        build_backbone(
            "drsgnn",
            in_features=10,
            num_classes=3,
            neuron="flif",
            neuron_kwargs={"learn_threshold": True},
            T=T,
            threshold_mode="scale",
            pe_dim=4,
        )


def test_drsgnn_scaled_threshold_pushed_to_zero_is_held_at_its_floor():
    """A softplus gone to 0 would scale the currents to inf: held at 1e-4 of its start, as a neuron's own."""
    from fsnn.neurons.fractional import LEARNED_THRESHOLD

    model = build_backbone(
        "drsgnn",
        in_features=12,
        num_classes=5,
        neuron="sj_lif",
        neuron_kwargs={"threshold": 1.5},
        T=4,
        pe="rw",
        pe_dim=4,
        threshold_mode="scale",
    )
    with torch.no_grad():
        model.theta_raw.fill_(-200.0)
    assert float(model.learned_threshold.detach()) == pytest.approx(LEARNED_THRESHOLD * 1.5, rel=1e-6)
    assert torch.isfinite(model.scale_currents(torch.ones(3))).all()


@pytest.mark.parametrize("neuron", ["sj_lif", "flif"])
def test_drsgnn_scaled_currents_equal_a_neuron_with_that_threshold(neuron):
    """'scale' mode: currents x theta0/theta into a threshold-theta0 neuron == a neuron with threshold theta."""
    torch.manual_seed(0)
    theta = 1.7
    scaled = build_backbone(
        "drsgnn",
        in_features=12,
        num_classes=5,
        neuron=neuron,
        neuron_kwargs={"threshold": 1.0},
        T=16,
        pe="rw",
        pe_dim=4,
        threshold_mode="scale",
    )
    with torch.no_grad():
        scaled.theta_raw.fill_(math.log(math.expm1(theta)))
        scaled.fc.weight.mul_(6.0)
    plain = build_backbone(
        "drsgnn",
        in_features=12,
        num_classes=5,
        neuron=neuron,
        neuron_kwargs={"threshold": theta},
        T=16,
        pe="rw",
        pe_dim=4,
        threshold_mode="fixed",
    )
    plain.fc.load_state_dict(scaled.fc.state_dict())
    x = torch.rand(40, 12) * 1.5
    gen_state = torch.random.get_rng_state()
    a = scaled.eval()(x)
    torch.random.set_rng_state(gen_state)
    b = plain.eval()(x)
    assert a.sum() > 0
    assert (a - b).abs().max() <= 1.0 / 16 + 1e-6  # at most a one-spike tie flip from rounding
    assert (a != b).float().mean() < 0.05


# ------------------------------------------------------------------------------------------------------- energy
def test_synaptic_energy_by_hand():
    model = build_backbone("sgcn", in_features=3, num_classes=2, neuron="lif", neuron_kwargs={}, T=4)
    energy = synaptic_energy(model, {"encoder": 0.5, "neuron": 0.2})
    # 0.9 pJ x (3 inputs x 2 outputs) x 4 steps x 0.5 input rate = 10.8 pJ = 1.08e-8 mJ
    assert math.isclose(energy["fc"], 1.08e-8, rel_tol=1e-12)
    assert math.isclose(energy["total"], 1.08e-8, rel_tol=1e-12)
    # measured end to end: x = 1 fires at every step, x = 0 never -> input rate 2/3
    with firing_rates(model) as rates:
        model(torch.tensor([[1.0, 1.0, 0.0]]))
    assert math.isclose(rates["encoder"], 2 / 3, rel_tol=1e-12)
    assert math.isclose(synaptic_energy(model, rates)["total"], 0.9e-9 * 6 * 4 * (2 / 3), rel_tol=1e-9)
    with pytest.raises(KeyError, match="encoder"):
        synaptic_energy(model, {})
    # the authors' convention scales the layer by the rate of the neuron it feeds: 0.9 x 6 x 4 x 0.2 pJ
    output = synaptic_energy(model, {"encoder": 0.5, "neuron": 0.2}, convention="output")
    assert math.isclose(output["total"], 0.9e-9 * 6 * 4 * 0.2, rel_tol=1e-12)

    class Dense(nn.Module):  # a first layer on real-valued input counts as MAC, 4.6 pJ
        T = 10

        def synaptic_layers(self):
            return [
                SynapticLayer("first", 100, source=None, kind="MAC", steps=1),
                SynapticLayer("second", 50, source="first_neuron"),
            ]

    energy = synaptic_energy(Dense(), {"first_neuron": 0.1})
    assert math.isclose(energy["first"], 4.6 * 100 * 1e-9, rel_tol=1e-12)
    assert math.isclose(energy["second"], 0.9 * 50 * 10 * 0.1 * 1e-9, rel_tol=1e-12)
    assert math.isclose(energy["total"], energy["first"] + energy["second"], rel_tol=1e-12)


@pytest.mark.parametrize("steps", [None, 4])
def test_msg_aggregation_is_gcnconvs(steps):
    """MSG's sparse propagation (gcn_adjacency @ h, all steps at once) is GCNConv's message passing, and its sparse
    feature product is the encoder's linear map; the adjacency and the sparse features are built once per tensor."""
    from torch_geometric.nn import GCNConv

    from fsnn.models import msg

    torch.manual_seed(0)
    n, dim = 60, 8
    edge_index = erdos_renyi_graph(n, 0.1)
    conv = GCNConv(dim, dim, bias=False)
    h = torch.randn(n, dim) if steps is None else torch.randn(steps, n, dim)
    torch.testing.assert_close(msg.aggregate(msg.gcn_adjacency(edge_index, n), conv.lin(h)), conv(h, edge_index))
    x = (torch.rand(n, 200) < 0.02).float()  # bag of words, 2 % non-zero: the sparse product
    model = build_backbone("msg", in_features=200, neuron="fif", T=3, dim=dim)
    encoder = model.encoder
    builds = []
    real = msg.gcn_adjacency
    try:
        msg.gcn_adjacency = lambda *args: builds.append(1) or real(*args)
        z = model.encode(x, edge_index)
        again = model.encode(x, edge_index)
    finally:
        msg.gcn_adjacency = real
    assert builds == [1] and torch.equal(z, again)  # one adjacency for both forwards
    torch.testing.assert_close(model._project(x), encoder.lin(x))
    assert model._features.items[0][2].layout == torch.sparse_csr
    torch.testing.assert_close(model._project(x.to_sparse_csr()), encoder.lin(x))  # sparse input as it comes
    dense = torch.randn(n, 200)  # real-valued features stay dense
    torch.testing.assert_close(model._project(dense), encoder.lin(dense))
    assert model._features.items[-1][2] is dense
    dense.mul_(2.0)  # changed in place: built again from the new values
    torch.testing.assert_close(model._project(dense), encoder.lin(dense))
    loss = model.decode(model.encode(x, edge_index), edge_index[:, :10]).sum()
    loss.backward()
    assert encoder.lin.weight.grad is not None and model.layers[0].conv.lin.weight.grad is not None


def test_msg_energy_layers(karate):
    model = build_backbone("msg", in_features=karate.num_features, num_classes=4, T=5, dim=8, n_layers=2)
    with firing_rates(model) as rates:
        model(karate.x, karate.edge_index)
    assert set(rates) == {"encoder_neuron", "layers.0.neuron", "layers.1.neuron"}
    energy = synaptic_energy(model, rates)
    deg = karate.edge_index.shape[1] / 34
    assert math.isclose(energy["encoder"], 4.6e-9 * (34 * 8 + (deg + 1) * 8), rel_tol=1e-9)
    assert math.isclose(energy["layers.0.conv"], 0.9e-9 * 64 * 5 * rates["encoder_neuron"], rel_tol=1e-9)
    assert math.isclose(energy["layers.1.conv"], 0.9e-9 * 64 * 5 * rates["layers.0.neuron"], rel_tol=1e-9)
    assert math.isclose(energy["layers.0.aggregate"], 0.9e-9 * (deg + 1) * 8 * 5, rel_tol=1e-9)
    output = synaptic_energy(model, rates, convention="output")
    assert math.isclose(output["layers.0.conv"], 0.9e-9 * 64 * 5 * rates["layers.0.neuron"], rel_tol=1e-9)
    assert math.isclose(output["encoder"], energy["encoder"], rel_tol=1e-12)  # dense layers: rate 1 either way


# -------------------------------------------------------------------------------------------------- link splits
def test_random_link_split_is_disjoint_shuffled_and_seeded():
    data = random_graph()
    train, val, test = link_split(data, num_val=0.1, num_test=0.2, seed=3)
    full = pairs(data.edge_index)
    train_mp = pairs(train.edge_index)
    for part in (val, test):
        pos = pairs(part.pos_edge_label_index)
        assert pos and pos <= full
        assert not pos & train_mp and not {(j, i) for i, j in pos} & train_mp  # evaluation edges hidden in training
        neg = part.neg_edge_label_index
        assert neg.shape == part.pos_edge_label_index.shape
        assert not pairs(neg) & full and bool((neg[0] != neg[1]).all())  # negatives are not edges of the graph
    assert not pairs(val.neg_edge_label_index) & pairs(test.neg_edge_label_index)
    assert not pairs(val.pos_edge_label_index) & pairs(test.pos_edge_label_index)
    assert pairs(val.edge_index) == train_mp  # val scores with training edges, test with train + val
    assert pairs(test.edge_index) == train_mp | pairs(val.pos_edge_label_index) | {
        (j, i) for i, j in pairs(val.pos_edge_label_index)
    }
    # training negatives: never a positive of the whole graph nor an evaluation negative
    eval_neg = pairs(val.neg_edge_label_index) | pairs(test.neg_edge_label_index)
    eval_neg |= {(j, i) for i, j in eval_neg}
    for _ in range(20):
        neg = sample_train_negatives(train)
        assert neg.shape[1] > 0.9 * train.pos_edge_label_index.shape[1]
        assert not pairs(neg) & full and not pairs(neg) & eval_neg and bool((neg[0] != neg[1]).all())
    # shuffled (not the first edges in storage order), reproducible under the seed, different under another seed
    again = link_split(data, num_val=0.1, num_test=0.2, seed=3)
    assert torch.equal(again[1].pos_edge_label_index, val.pos_edge_label_index)
    assert torch.equal(again[2].neg_edge_label_index, test.neg_edge_label_index)
    other = link_split(data, num_val=0.1, num_test=0.2, seed=4)
    assert not torch.equal(other[1].pos_edge_label_index, val.pos_edge_label_index)
    upper = data.edge_index[:, data.edge_index[0] < data.edge_index[1]]
    assert pairs(val.pos_edge_label_index) != pairs(upper[:, : val.pos_edge_label_index.shape[1]])


def test_train_negatives_are_distinct_and_uniform_over_the_allowed_pairs():
    """pair_keys numbers the ordered non-loop pairs one to one; the sampled negatives of a call are distinct, exactly
    as many as asked, never forbidden, and over many calls every allowed pair comes up about equally often."""
    from types import SimpleNamespace

    from fsnn.data.datamodules import _key_pairs, pair_keys

    n = 9
    every = torch.tensor([(i, j) for i in range(n) for j in range(n) if i != j]).t()
    keys = pair_keys(every, n)
    assert torch.equal(keys, torch.arange(n * (n - 1))) and torch.equal(_key_pairs(keys, n), every)
    assert pair_keys(torch.tensor([[3], [3]]), n).numel() == 0  # self loops have no key
    forbidden = pair_keys(erdos_renyi_graph(n, 0.4), n).unique()
    data = SimpleNamespace(num_nodes=n, forbidden_pairs=forbidden, pos_edge_label_index=torch.zeros(2, 10))
    allowed = n * (n - 1) - forbidden.numel()
    torch.manual_seed(0)
    counts = torch.zeros(n * (n - 1))
    draws = 3000
    for _ in range(draws):
        neg = sample_train_negatives(data)
        got = pair_keys(neg, n)
        assert neg.shape == (2, 10) and got.unique().numel() == 10 and not torch.isin(got, forbidden).any()
        counts += torch.bincount(got, minlength=n * (n - 1))
    expected = draws * 10 / allowed
    hits = counts[~torch.isin(torch.arange(n * (n - 1)), forbidden)]
    assert (counts[forbidden] == 0).all()
    assert ((hits - expected).abs() < 5 * expected**0.5).all(), (hits.min(), hits.max(), expected)
    data.pos_edge_label_index = torch.zeros(2, allowed + 5)  # more than there are: distinct allowed pairs, fewer
    got = pair_keys(sample_train_negatives(data), n).tolist()
    assert len(set(got)) == len(got) and set(got) <= set(range(n * (n - 1))) - set(forbidden.tolist())


def test_authors_link_split_by_position_and_negative_pool():
    """The authors' MSG split: stored edges in order (val, then test, then train), the training positives alone pass
    messages, negatives from one draw; with the pool, each step's negatives come from it, val/test ones included."""
    data = random_graph(n=40, p=0.2)
    edges = data.edge_index
    n_val, n_test = int(0.1 * edges.shape[1]), int(0.2 * edges.shape[1])
    train, val, test = link_split(data, num_val=0.1, num_test=0.2, seed=1, authors_by_position=True)
    assert torch.equal(val.pos_edge_label_index, edges[:, :n_val])
    assert torch.equal(test.pos_edge_label_index, edges[:, n_val : n_val + n_test])
    assert torch.equal(train.pos_edge_label_index, edges[:, n_val + n_test :])
    assert all(torch.equal(part.edge_index, edges[:, n_val + n_test :]) for part in (train, val, test))
    full = pairs(edges)
    assert not (pairs(val.neg_edge_label_index) | pairs(test.neg_edge_label_index)) & full
    assert not hasattr(train, "negative_pool") and "drawn_negatives" not in train
    again = link_split(data, num_val=0.1, num_test=0.2, seed=1, authors_by_position=True)
    assert torch.equal(again[1].neg_edge_label_index, val.neg_edge_label_index)  # seeded
    pooled = link_split(data, num_val=0.1, num_test=0.2, seed=1, authors_by_position=True, authors_negative_pool=True)
    pool = pooled[0].negative_pool
    assert pool.shape[1] == edges.shape[1] + n_val + n_test  # one draw per stored edge, then the val/test negatives
    assert torch.equal(pool[:, -n_test:], pooled[2].neg_edge_label_index)
    torch.manual_seed(0)
    seen = torch.cat([sample_train_negatives(pooled[0]) for _ in range(200)], dim=1)
    assert seen.shape[1] == 200 * train.pos_edge_label_index.shape[1]
    assert pairs(seen) <= pairs(pool) and pairs(pooled[1].neg_edge_label_index) & pairs(seen)  # leaked in
    shuffled = link_split(data, num_val=0.1, num_test=0.2, seed=1, authors_negative_pool=True)  # pool alone
    assert pairs(shuffled[1].neg_edge_label_index) <= pairs(shuffled[0].negative_pool)


def test_link_split_leaks_counted_on_hand_made_storage_orders():
    """40 undirected edges stored as 80 entries, 8 validation and 16 test positives by position. Stored as all forward
    entries then all reverse ones, every evaluation positive's reverse is a training positive (and passes messages);
    stored as adjacent (u, v), (v, u), none is. Each test negative is held twice in the pool of 80 + 8 + 16 columns,
    from which each of 200 epochs draws 56 (the training positives): 200 * 56 * 2 / 104 draws. The matched split leaks
    nothing."""
    g = torch.Generator().manual_seed(0)
    pairs = torch.randperm(60 * 59 // 2, generator=g)[:40]
    upper = torch.triu_indices(60, 60, offset=1)[:, pairs]
    forward_then_reverse = Data(x=torch.zeros(60, 1), edge_index=torch.cat([upper, upper.flip(0)], 1), num_nodes=60)
    adjacent = Data(
        x=torch.zeros(60, 1), num_nodes=60, edge_index=torch.stack([upper, upper.flip(0)], 2).reshape(2, 80)
    )
    authors = {"num_val": 0.1, "num_test": 0.2, "seed": 1, "authors_by_position": True, "authors_negative_pool": True}
    leaks = link_split_leaks(link_split(forward_then_reverse, **authors))
    assert link_split(forward_then_reverse, **authors)[0].negative_pool.shape[1] == 104
    assert leaks == pytest.approx(
        {
            "val_reverse_in_train": 1.0,
            "val_reverse_in_messages": 1.0,
            "test_reverse_in_train": 1.0,
            "test_reverse_in_messages": 1.0,
            "test_negatives_in_pool": 1.0,
            "test_negative_draws": 200 * 56 * 2 / 104,
        }
    )
    leaks = link_split_leaks(link_split(adjacent, **authors), epochs=10)
    assert [leaks[key] for key in ("val_reverse_in_train", "test_reverse_in_messages")] == [0.0, 0.0]
    assert leaks["test_negative_draws"] == pytest.approx(10 * 56 * 2 / 104)
    matched = link_split_leaks(link_split(random_graph(), num_val=0.1, num_test=0.2, seed=1))
    assert matched == {key: 0.0 for key in leaks}


def test_msg_authors_no_spike_gradient_feeds_the_neurons_detached_currents(karate):
    """With the authors' switch no neuron's input carries a gradient, so the weights learn only through the manifold
    state; by default the spikes pass the surrogate gradient back."""
    fed = []
    for authors in (False, True):
        torch.manual_seed(0)
        model = build_backbone(
            "msg",
            in_features=karate.num_features,
            num_classes=4,
            neuron="fif",
            T=4,
            dim=8,
            authors_no_spike_gradient=authors,
        )
        assert ("authors_no_spike_gradient=True" in repr(model)) == authors
        hooks = [
            m.register_forward_hook(lambda _m, inputs, _o: fed.append((authors, inputs[0].requires_grad)))
            for m in (model.encoder_neuron, model.layers[0].neuron)
        ]
        model(karate.x, karate.edge_index).sum().backward()
        assert model.encoder.lin.weight.grad is not None and model.layers[0].conv.lin.weight.grad is not None
        for hook in hooks:
            hook.remove()
    assert fed == [(False, True), (False, True), (True, False), (True, False)]


def test_gae_scores_links_by_the_inner_product_of_embeddings_of_normalized_features():
    torch.manual_seed(0)
    data = random_graph(n=30, p=0.2)
    data.x = 3.0 * (torch.rand(30, 50) < 0.1).float()
    model = build_backbone("gae", in_features=50, neuron="flif", neuron_kwargs={"alpha": 0.5}, T=4)
    z = model.encode(data.x, data.edge_index)
    pairs = torch.randint(0, 30, (2, 20))
    assert z.shape == (30, 64) and torch.allclose(model.decode(z, pairs), (z[pairs[0]] * z[pairs[1]]).sum(-1))
    assert not any(is_neuron(module) for module in model.modules())  # the run's neuron is not built
    # each node's features are read divided by their sum: a node's scale does not matter, nor the layout
    assert torch.allclose(model.encode(7.0 * data.x, data.edge_index), z, atol=1e-5)
    assert torch.allclose(model.encode(data.x.to_sparse_csr(), data.edge_index), z, atol=1e-5)
    raw = build_backbone("gae", in_features=50, normalize_features=False)
    raw.load_state_dict(model.state_dict())
    assert not torch.allclose(raw.encode(data.x, data.edge_index), z, atol=1e-3)
    with pytest.raises(ValueError, match=r"x must have shape \[N, 50\]"):
        model.encode(data.x[:, :40], data.edge_index)


def test_gae_linear_encoder_is_one_normalized_propagation_and_a_linear_map():
    # Salha et al.'s linear GAE: z = D^-1/2 (A + I) D^-1/2 X W + b, no hidden layer, no activation
    torch.manual_seed(0)
    data = random_graph(n=30, p=0.2)
    data.x = 3.0 * (torch.rand(30, 50) < 0.1).float()
    model = build_backbone("gae", in_features=50, encoder="linear", hidden=7, dim=16)
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    assert shapes == {"gae.encoder.lin.weight": (16, 50), "gae.encoder.bias": (16,)}
    conv = model.gae.encoder
    x = data.x / data.x.sum(-1, keepdim=True).clamp(min=1.0)
    expected = propagate(x, data.edge_index, 30) @ conv.lin.weight.T + conv.bias
    z = model.encode(data.x, data.edge_index)
    assert z.shape == (30, 16) and torch.allclose(z, expected, atol=1e-5)
    assert (z < 0).any()  # no ReLU at the end
    two_layers = build_backbone("gae", in_features=50, hidden=7, dim=16)
    assert sum(p.numel() for p in two_layers.parameters()) == 50 * 7 + 7 + 7 * 16 + 16
    with pytest.raises(ValueError, match=r"encoder must be one of gcn, linear, got 'mlp'"):
        build_backbone("gae", in_features=50, encoder="mlp")


# -------------------------------------------------------------------------------------------------------- misc
def test_build_graph_model_validates():
    assert set(backbone_names("graph")) == {"sgcn", "drsgnn", "msg", "gae"}
    assert all(backbone_supports(name) == {"graph"} for name in backbone_names("graph"))
    with pytest.raises(ValueError, match="backbone must be"):
        build_backbone("gat", in_features=4, num_classes=2)
    with pytest.raises(ValueError, match="does not take"):
        build_backbone("sgcn", in_features=4, num_classes=2, manifold="lorentz")
    with pytest.raises(ValueError, match="features must have shape"):
        build_backbone("sgcn", in_features=4, num_classes=2, T=2)(torch.rand(3, 5))
    assert isinstance(build_backbone("drsgnn", in_features=40, num_classes=2, dropout=0.1), DRSGNN)
    assert build_backbone("drsgnn", in_features=40, num_classes=2, pe="laplacian").pe == "lap"
    assert build_backbone("drsgnn", in_features=40, num_classes=2, pe="random_walk").pe == "rw"
    assert build_backbone("drsgnn", in_features=40, num_classes=2, pe=None).pe_dim == 0
    assert isinstance(build_backbone("msg", in_features=4, num_classes=2), MSG)
