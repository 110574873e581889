"""The corruptions of the robustness studies (fsnn.data.corruptions): each at its levels, seeded, on frames,
images and graphs."""

from __future__ import annotations

import math

import pytest
import torch
from helpers import robustness_levels

from fsnn.checks import round_count
from fsnn.data.corruptions import (
    CORRUPTIONS,
    CorruptedDataset,
    center_occlusion,
    corrupt,
    drop_graph_edges,
    frame_discard,
    gaussian_noise,
    mask_graph_features,
    occlusion_box,
    sample_seed,
    temporal_jitter,
    temporal_truncation,
)

VISION = CORRUPTIONS.names(family="vision")

T, C, H, W = 16, 2, 32, 32
LEVELS, GRAPH_LEVELS = robustness_levels("events"), robustness_levels("graph")


def frames(*shape, seed: int = 0) -> torch.Tensor:
    """Strictly positive integer-valued event counts (so a zero means "corrupted")."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, 6, shape, generator=g).float()


# -- registry ---------------------------------------------------------------------------------


def test_registry_and_paper_levels():
    # conf/robustness/events.yaml runs the levels of the paper's tables
    names = {"gaussian_noise", "center_occlusion", "temporal_truncation", "temporal_jitter", "frame_discard"}
    assert set(VISION) == names and set(LEVELS) == names
    assert set(CORRUPTIONS.names(family="graph")) == {"feature_masking", "edge_dropping", "spike_noise"}
    five = [0.1, 0.2, 0.3, 0.4, 0.5]
    for name in names - {"temporal_jitter"}:
        assert LEVELS[name] == five
    assert LEVELS["temporal_jitter"] == pytest.approx([0.1 * i for i in range(1, 10)])
    x = frames(T, C, H, W)
    for name in names:
        for level in LEVELS[name]:
            assert corrupt(x, name, level, 0).shape == x.shape
    with pytest.raises(KeyError, match="vision corruption must be one of .*, got 'nope'"):
        corrupt(x, "nope", 0.1)
    with pytest.raises(KeyError, match="did you mean 'frame_discard'"):
        corrupt(x, "frame_discrad", 0.1)


@pytest.mark.parametrize("name", VISION)
@pytest.mark.parametrize("batched", [False, True])
def test_pure_and_shape_preserving(name, batched):
    x = frames(3, T, C, H, W) if batched else frames(T, C, H, W)
    before = x.clone()
    level = LEVELS[name][2]
    y = CORRUPTIONS[name](x, level, 7)
    assert torch.equal(x, before), "input modified in place"
    assert y.shape == x.shape and y.dtype == x.dtype
    assert y.data_ptr() != x.data_ptr()
    assert not torch.equal(y, x), "corruption did nothing"
    # int seed and an equally seeded generator give the same result; deterministic across calls
    assert torch.equal(y, CORRUPTIONS[name](x, level, torch.Generator().manual_seed(7)))
    assert torch.equal(y, CORRUPTIONS[name](x, level, 7))


@pytest.mark.parametrize("name", VISION)
def test_batched_first_sample_matches_unbatched(name):
    """Per-sample draws in batch order: sample 0 of a batch equals the unbatched call with the same seed."""
    x = frames(T, C, H, W)
    xb = torch.stack([x, frames(T, C, H, W, seed=1)])
    level = LEVELS[name][1]
    if name in ("gaussian_noise", "temporal_jitter"):
        # element-wise draws over the whole batch: check the batched semantics directly instead
        yb = CORRUPTIONS[name](xb, level, 3)
        assert not torch.equal(yb[0] - xb[0], yb[1] - xb[1])
        return
    assert torch.equal(CORRUPTIONS[name](xb, level, 3)[0], CORRUPTIONS[name](x, level, 3))


@pytest.mark.parametrize("bad", [(2, 3), (1, 2, 3, 4, 5, 6)])
def test_rejects_wrong_rank(bad):
    for fn in map(CORRUPTIONS.get, VISION):
        with pytest.raises(ValueError, match="expected frames"):
            fn(torch.ones(bad), 0.2, 0)


def test_rejects_bad_levels():
    x = frames(T, C, H, W)
    for fn in (center_occlusion, temporal_truncation, frame_discard):
        for bad in (-0.1, 1.5, float("nan")):
            with pytest.raises(ValueError, match=rf"^level must be in \[0, 1\], got {bad}$"):
                fn(x, bad, 0)
    for fn in (gaussian_noise, temporal_jitter):
        with pytest.raises(ValueError):
            fn(x, -0.1, 0)


def test_round_count_is_half_up():
    assert round_count(0.1, 16) == 2 and round_count(0.3, 16) == 5 and round_count(0.5, 16) == 8
    assert round_count(0.1, 5) == 1  # 0.5 -> 1 (Python's round would give 0)
    assert round_count(0.35, 10) == 4  # 3.4999999999999996 -> 4 thanks to the guard
    assert round_count(0.0, 8) == 0 and round_count(1.0, 8) == 8


# -- 1. gaussian noise ------------------------------------------------------------------------


@pytest.mark.parametrize("std", LEVELS["gaussian_noise"])
def test_noise_has_requested_absolute_std(std):
    x = frames(4, T, C, H, W)  # 131072 entries
    d = gaussian_noise(x, std, 123) - x
    n = d.numel()
    # mean ~ N(0, std^2/n); sample std ~ std * (1 +- 1/sqrt(2n)): 6-sigma bounds
    assert abs(d.mean().item()) < 6 * std / math.sqrt(n)
    assert d.std().item() == pytest.approx(std, rel=6 / math.sqrt(2 * n))
    # absolute, not relative to the data scale: scaling the data does not scale the noise
    d10 = gaussian_noise(10 * x, std, 123) - 10 * x
    assert torch.allclose(d10, d, atol=1e-4)


def test_noise_zero_std_identity_and_seeding():
    x = frames(T, C, H, W)
    assert torch.equal(gaussian_noise(x, 0.0, 1), x)
    assert not torch.equal(gaussian_noise(x, 0.3, 1), gaussian_noise(x, 0.3, 2))
    assert gaussian_noise(x.long(), 0.3, 1).dtype == torch.float32
    assert gaussian_noise(x - 10, 0.3, 1, clamp_min=0.0).min() >= 0


# -- 2. center occlusion ----------------------------------------------------------------------


@pytest.mark.parametrize("ratio", LEVELS["center_occlusion"])
@pytest.mark.parametrize("hw", [(32, 32), (128, 128), (34, 48)])
def test_occlusion_zeroes_exactly_the_center_block(ratio, hw):
    h, w = hw
    x = frames(4, C, h, w)
    y = center_occlusion(x, ratio)
    s = int(math.floor(math.sqrt(ratio * h * w) + 0.5))
    top, left = (h - s) // 2, (w - s) // 2
    assert occlusion_box(h, w, ratio) == (top, left, s, s)
    expected = torch.zeros(h, w, dtype=torch.bool)
    expected[top : top + s, left : left + s] = True
    zero = y == 0
    # the same block in every time step and channel, and nothing else
    assert torch.equal(zero, expected.expand_as(zero))
    assert torch.equal(y[..., ~expected], x[..., ~expected])
    # area: s^2 is the closest square to ratio * H * W
    assert abs(s * s - ratio * h * w) <= s + 0.25
    # centered: margins differ by at most one pixel
    assert abs(top - (h - top - s)) <= 1 and abs(left - (w - left - s)) <= 1


def test_occlusion_hand_case():
    # 10 x 10 frame, ratio 0.36 -> side 6 at rows/cols 2..7
    x = torch.ones(2, 1, 10, 10)
    y = center_occlusion(x, 0.36)
    assert y.sum() == 2 * (100 - 36)
    assert (y[:, :, 2:8, 2:8] == 0).all() and y[:, :, :2].eq(1).all() and y[:, :, 8:].eq(1).all()
    assert torch.equal(center_occlusion(x, 0.0), x)


# -- 3. temporal truncation -------------------------------------------------------------------


@pytest.mark.parametrize("ratio", LEVELS["temporal_truncation"])
@pytest.mark.parametrize("batched", [False, True])
def test_truncation_zeroes_exactly_the_last_steps(ratio, batched):
    x = frames(2, T, C, 8, 8) if batched else frames(T, C, 8, 8)
    y = temporal_truncation(x, ratio)
    k = round_count(ratio, T)
    assert k == math.floor(ratio * T + 0.5)
    tx = 1 if batched else 0
    yt, xt = y.movedim(tx, 0), x.movedim(tx, 0)
    assert (yt[T - k :] == 0).all()
    assert torch.equal(yt[: T - k], xt[: T - k])


def test_truncation_modes():
    x = frames(5, T, C, 4, 4)
    k = round_count(0.3, T)
    y = temporal_truncation(x, 0.3, mode="head")
    assert (y[:, :k] == 0).all() and torch.equal(y[:, k:], x[:, k:])
    y = temporal_truncation(x, 0.3, 11, mode="random")
    for b in range(5):
        kept = (y[b] != 0).flatten(1).any(1)
        idx = kept.nonzero().flatten()
        assert len(idx) == T - k and int(idx[-1] - idx[0]) == T - k - 1  # one contiguous window
        assert torch.equal(y[b, idx], x[b, idx])
    assert torch.equal(y, temporal_truncation(x, 0.3, 11, mode="random"))
    with pytest.raises(ValueError, match="mode"):
        temporal_truncation(x, 0.3, mode="middle")


# -- 4. temporal jitter -----------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS["temporal_jitter"])
@pytest.mark.parametrize("boundary", ["clamp", "wrap"])
def test_jitter_preserves_event_counts(level, boundary):
    x = frames(3, T, C, H, W)
    y = temporal_jitter(x, level, 5, boundary=boundary)
    assert y.sum() == x.sum()  # integer-valued counts: exact
    assert torch.equal(y.sum(1), x.sum(1))  # and per sample, channel and pixel
    assert (y >= 0).all()
    assert not torch.equal(y, x)


def test_jitter_float_counts_and_bounded_offsets():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(T, C, 8, 8, generator=g, dtype=torch.float64)
    y = temporal_jitter(x, 0.5, 1)
    assert torch.allclose(y.sum(0), x.sum(0)) and math.isclose(y.sum().item(), x.sum().item(), rel_tol=1e-12)
    # an isolated event at t=8 moves at most m = round(0.2 * 16) = 3 steps
    for seed in range(30):
        e = torch.zeros(T, 1, 1, 1)
        e[8] = 1
        t_new = int(temporal_jitter(e, 0.2, seed).flatten().nonzero())
        assert abs(t_new - 8) <= 3
    # clamping keeps events in the window; level 0 is the identity; seeds matter
    e = torch.zeros(T, 1, 1, 1)
    e[0] = 4
    assert temporal_jitter(e, 0.9, 0).sum() == 4
    assert torch.equal(temporal_jitter(x, 0.0, 1), x)
    assert torch.equal(temporal_jitter(x, 0.02, 1), x)  # round(0.32) = 0 steps
    assert not torch.equal(temporal_jitter(x, 0.3, 1), temporal_jitter(x, 0.3, 2))
    with pytest.raises(ValueError, match="boundary"):
        temporal_jitter(x, 0.3, 1, boundary="drop")


# -- 5. frame discard -------------------------------------------------------------------------


@pytest.mark.parametrize("ratio", LEVELS["frame_discard"])
@pytest.mark.parametrize("batched", [False, True])
def test_discard_zeroes_exactly_k_whole_frames(ratio, batched):
    x = frames(4, T, C, 8, 8) if batched else frames(T, C, 8, 8)
    y = frame_discard(x, ratio, 42)
    k = round_count(ratio, T)
    yb, xb = (y, x) if batched else (y[None], x[None])
    for b in range(yb.shape[0]):
        zero = (yb[b] == 0).flatten(1)
        whole = zero.all(1)
        assert int(whole.sum()) == k
        assert not zero[~whole].any(), "a frame is partly zeroed"
        assert torch.equal(yb[b, ~whole], xb[b, ~whole])


def test_discard_is_seeded():
    x = frames(T, C, 8, 8)
    a = frame_discard(x, 0.3, 1)
    assert torch.equal(a, frame_discard(x, 0.3, 1))
    assert torch.equal(a, frame_discard(x, 0.3, torch.Generator().manual_seed(1)))
    assert not torch.equal(a, frame_discard(x, 0.3, 2))
    # a shared generator advances: two consecutive draws differ
    g = torch.Generator().manual_seed(1)
    assert not torch.equal(frame_discard(x, 0.3, g), frame_discard(x, 0.3, g))
    # batch samples get independent draws
    xb = frames(8, T, C, 2, 2)
    zb = (frame_discard(xb, 0.3, 0) == 0).flatten(2).all(2)
    assert len({tuple(r.tolist()) for r in zb}) > 1


# -- robustness score -------------------------------------------------------------------------


def test_corrupted_dataset_is_per_sample_seeded_and_nested_across_levels():
    data = [(frames(T, C, 4, 4, seed=i), i) for i in range(5)]
    a = CorruptedDataset(data, "frame_discard", 0.2, seed=3)
    assert len(a) == 5 and a[2][1] == 2
    # the same item whatever was read before (order, batch size and workers do not matter)
    first = a[4][0]
    _ = [a[i] for i in range(4)]
    assert torch.equal(a[4][0], first)
    assert torch.equal(first, frame_discard(data[4][0], 0.2, torch.Generator().manual_seed(sample_seed(3, 4))))
    assert not torch.equal(a[4][0], CorruptedDataset(data, "frame_discard", 0.2, seed=4)[4][0])
    # common random numbers: the frames discarded at 0.2 are among those discarded at 0.4
    zeroed = [(CorruptedDataset(data, "frame_discard", lv, seed=3)[1][0] == 0).flatten(1).all(1) for lv in (0.2, 0.4)]
    assert int(zeroed[0].sum()) == round_count(0.2, T) and not (zeroed[0] & ~zeroed[1]).any()
    with pytest.raises(KeyError, match="vision corruption must be one of"):
        CorruptedDataset(data, "nope", 0.1)


# -- graph corruptions ------------------------------------------------------------------------


def _graph(n: int = 20, f: int = 6):
    from torch_geometric.data import Data
    from torch_geometric.utils import to_undirected

    g = torch.Generator().manual_seed(0)
    edges = to_undirected(torch.randint(0, n, (2, 40), generator=g), num_nodes=n)
    edges = edges[:, edges[0] != edges[1]]
    return Data(x=torch.rand(n, f, generator=g) + 0.5, edge_index=edges, y=torch.zeros(n, dtype=torch.long))


@pytest.mark.parametrize("level", GRAPH_LEVELS["feature_masking"])
def test_mask_graph_features_zeroes_exactly_the_ratio(level):
    graph = _graph()
    x = graph.x.clone()
    out = mask_graph_features(graph, level, 1)
    assert torch.equal(graph.x, x), "input graph modified"
    assert out.edge_index is graph.edge_index and torch.equal(out.y, graph.y)
    assert int((out.x == 0).sum()) == round_count(level, x.numel())
    assert torch.equal(out.x[out.x != 0], x[out.x != 0])
    columns = mask_graph_features(graph, level, 1, mode="column").x
    assert int((columns == 0).all(0).sum()) == round_count(level, x.shape[1])


@pytest.mark.parametrize("level", GRAPH_LEVELS["edge_dropping"])
def test_drop_graph_edges_removes_the_ratio_of_undirected_edges(level):
    graph = _graph()
    undirected = graph.edge_index.shape[1] // 2
    out = drop_graph_edges(graph, level, 2)
    assert graph.edge_index.shape[1] == 2 * undirected, "input graph modified"
    assert out.x is graph.x
    kept = {tuple(e) for e in out.edge_index.t().tolist()}
    assert len(kept) == 2 * (undirected - round_count(level, undirected))
    assert all((v, u) in kept for u, v in kept), "not symmetric"
    assert kept <= {tuple(e) for e in graph.edge_index.t().tolist()}
