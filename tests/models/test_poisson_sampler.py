"""The Poisson encoder's compiled sampler (``fsnn/models/poisson_kernels.cpp``): its stream against a pure-Python
rendering of the documented rule, exact currents and gradients, Bernoulli rates, and when it is chosen.

Skipped where the extension cannot be built (no C++ compiler); the torch sampler is tested in
``test_graph_models.py``, which pins it with ``COMPILED_FROM = inf``.
"""

from __future__ import annotations

import math

import pytest
import torch
from helpers import needs_built
from torch import nn

from fsnn.models import poisson
from fsnn.models.poisson import poisson_encode

built = needs_built(poisson.EXTENSION, "the Poisson kernels")
MASK = (1 << 64) - 1


def splitmix64(seed: int, i: int) -> int:
    """Output ``i`` of SplitMix64 with ``seed`` (Vigna's splitmix64.c), in Python integers."""
    z = (seed + (i + 1) * 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def reference_spikes(p: torch.Tensor, steps: int, seed: int) -> torch.Tensor:
    """The documented stream, entry by entry: ``u24`` is byte ``f % 8`` of draw ``(t R + r) B + f // 8`` (top 8
    bits) and the low 16 bits of draw ``S R B + (t R + r) F + f`` (all 24 bits built, no shortcut)."""
    rows, features = p.shape
    blocks = (features + 7) // 8
    ties = steps * rows * blocks
    out = torch.zeros(steps, rows, features, dtype=p.dtype)
    for t in range(steps):
        for r in range(rows):
            for f in range(features):
                q = float(p[r, f])
                if q >= 1.0:
                    out[t, r, f] = 1.0
                elif q > 0.0:
                    top = (splitmix64(seed, (t * rows + r) * blocks + f // 8) >> (8 * (f % 8))) & 0xFF
                    low = splitmix64(seed, ties + (t * rows + r) * features + f) & 0xFFFF
                    out[t, r, f] = float((top << 16 | low) < math.ceil(q * 2**24))
    return out


def _seed_of(generator_seed: int) -> int:
    return int(torch.empty((), dtype=torch.int64).random_(generator=torch.Generator().manual_seed(generator_seed)))


def _encode(x, steps, seed=3, frozen=False):
    return poisson_encode(x, steps, generator=torch.Generator().manual_seed(seed), frozen=frozen)


@built
def test_splitmix64_known_answers():
    """Vigna's splitmix64.c seeded with 1234567: its first five outputs."""
    outputs = [v & MASK for v in poisson.EXTENSION.module().splitmix64_sequence(1234567, 5)]
    assert outputs == [
        6457827717110365317,
        3203168211198807973,
        9817491932198370423,
        4593380528125082431,
        16408922859458223821,
    ]
    assert outputs == [splitmix64(1234567, i) for i in range(5)]


@built
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_compiled_spikes_follow_the_documented_stream(dtype):
    """Every spike is [u24 < ceil(p 2^24)] with u24 from the documented positions of the seed's stream, including
    the entries whose first byte ties with the threshold's (there it reads 16 more bits)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(5, 21, generator=gen, dtype=dtype)
    x[0, :4] = torch.tensor([-0.2, 0.0, 1.0, 1.3], dtype=dtype)  # never, never, always, always
    x[1, :3] = torch.tensor([2**-24, 1 - 2**-24, 0.5], dtype=dtype)  # the extremes of 24 bits, an exact half
    steps = 40
    spikes = _encode(x, steps, seed=11)
    assert spikes.sampler == "compiled"
    drawn = spikes.dense()
    expected = reference_spikes(x.clamp(0, 1), steps, _seed_of(11))
    assert torch.equal(drawn, expected)
    # the tie branch ran: some entries' top byte equals their threshold's (about 1 in 256 of 4,000 draws)
    top = (x.clamp(0, 1) * 2**24).ceil().long() >> 16
    seed = _seed_of(11)
    ties = sum(
        1
        for t in range(steps)
        for r in range(5)
        for f in range(21)
        if 0 < float(x[r, f]) < 1
        and ((splitmix64(seed, (t * 5 + r) * 3 + f // 8) >> (8 * (f % 8))) & 0xFF) == int(top[r, f])
    )
    assert ties > 0


@built
@pytest.mark.parametrize("frozen", [False, True])
def test_compiled_currents_and_gradients_equal_the_layer_on_its_spikes(frozen):
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(33, 47, generator=gen, dtype=torch.float64) * 1.4 - 0.2  # uncertain, never and always
    layer = nn.Linear(47, 6).double()
    spikes = _encode(x, 25, frozen=frozen)
    fast = spikes.linear(layer.weight, layer.bias)
    dense = _encode(x, 25, frozen=frozen).dense()
    slow = layer(dense)
    assert spikes.sampler == "compiled" and fast.shape == slow.shape == (25, 33, 6)
    torch.testing.assert_close(fast, slow, rtol=1e-12, atol=1e-12)
    assert spikes.count() == float(dense.sum())
    if frozen:
        assert torch.equal(dense, dense[:1].expand_as(dense))
    weights = torch.randn(fast.shape, generator=gen, dtype=torch.float64)
    g_fast = torch.autograd.grad((fast * weights).sum(), [layer.weight, layer.bias])
    g_slow = torch.autograd.grad((slow * weights).sum(), [layer.weight, layer.bias])
    for a, b in zip(g_fast, g_slow):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


@built
def test_compiled_rates_match_the_probabilities_and_change_every_step():
    q = torch.tensor([1e-3, 0.05, 0.3, 0.5, 0.7, 0.999, 1 / 256, 129 / 256])
    steps = 20000
    spikes = poisson_encode(q.repeat(4, 1), steps, generator=torch.Generator().manual_seed(5)).dense()
    rate = spikes.mean((0, 1))
    sigma = torch.sqrt(q * (1 - q) / (4 * steps))
    assert torch.all((rate - q).abs() <= 4.5 * sigma), (rate, q)
    flips = (spikes[1:, :, 3] != spikes[:-1, :, 3]).float().mean()
    assert 0.45 < flips < 0.55  # a fresh draw at every step
    rows = spikes[:, :, 3]
    assert not torch.equal(rows[:, 0], rows[:, 1])  # and for every row


@built
def test_compiled_draws_are_reproducible_from_the_generator():
    x = torch.rand(64, 30)
    weight = torch.randn(4, 30)
    a = _encode(x, 50, seed=7).linear(weight)
    assert torch.equal(a, _encode(x, 50, seed=7).linear(weight))
    assert not torch.equal(a, _encode(x, 50, seed=8).linear(weight))
    # the generator advances by one draw per encoding: two encodings in a row differ
    gen = torch.Generator().manual_seed(7)
    first, second = (poisson_encode(x, 50, generator=gen).linear(weight) for _ in range(2))
    assert torch.equal(first, a) and not torch.equal(first, second)


def test_the_sampler_is_chosen_from_the_share_of_uncertain_entries(monkeypatch):
    """Mostly certain features (Cora's, CiteSeer's) keep the torch sampler and its stream; mostly uncertain ones
    (Photo's, Computers') take the compiled one where it builds; FSNN_CPU_KERNELS=0 turns it off."""
    sparse = torch.zeros(40, 100)
    sparse[:, :2] = 0.5  # 2 % uncertain
    dense = torch.rand(40, 100)
    assert poisson_encode(sparse, 5).sampler == "torch"
    expected = "compiled" if poisson.EXTENSION.unavailable_reason() is None else "torch"
    assert poisson_encode(dense, 5).sampler == expected
    assert poisson_encode(dense.double(), 5).sampler == expected
    monkeypatch.setenv("FSNN_CPU_KERNELS", "0")
    assert poisson_encode(dense, 5).sampler == "torch"
    assert poisson_encode(dense.half(), 5).sampler == "torch"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_inputs_are_refused_not_encoded_as_never_or_always(bad):
    x = torch.rand(6, 5)
    x[2, 3] = bad
    with pytest.raises(
        ValueError,
        match=r"x must be finite .* got 1 NaN or infinite of its 30 values \(the first at "
        r"index \(2, 3\)\)",
    ):
        poisson_encode(x, 4)


def test_the_encoder_names_the_samplers_that_drew_its_spikes(monkeypatch):
    """The compiled and the torch sampler draw different streams from one seed: a run's record names the ones used."""
    from fsnn.models.poisson import PoissonEncoder, describe_encoders

    model = nn.Sequential(PoissonEncoder(5))
    assert describe_encoders(model) == {"0": {"type": "PoissonEncoder", "T": 5, "frozen": False, "samplers": []}}
    model[0](torch.rand(40, 100)).dense()
    expected = "compiled" if poisson.EXTENSION.unavailable_reason() is None else "torch"
    assert describe_encoders(model)["0"]["samplers"] == [expected]
    monkeypatch.setenv("FSNN_CPU_KERNELS", "0")
    model[0](torch.rand(40, 100)).dense()
    assert describe_encoders(model)["0"]["samplers"] == sorted({expected, "torch"})
    assert describe_encoders(nn.Linear(2, 2)) == {}


@built
def test_a_second_derivative_through_the_compiled_currents_is_refused_in_one_line():
    x = torch.rand(9, 16, generator=torch.Generator().manual_seed(2), dtype=torch.float64) * 0.8 + 0.1
    layer = nn.Linear(16, 3).double()
    spikes = _encode(x, 4)
    currents = spikes.linear(layer.weight, layer.bias)
    assert spikes.sampler == "compiled"
    with pytest.raises(
        RuntimeError,
        match=r"^the compiled Poisson sampler's backward \(fsnn.models.poisson\) is "
        r"differentiable once: create_graph=True through it",
    ):
        torch.autograd.grad(currents.square().sum(), layer.weight, create_graph=True)
