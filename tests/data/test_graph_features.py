"""Graph features: one SGC hop against its dense formula, standardisation on the training statistics, row
normalisation as PyG's, positional encodings against dense references, edge dropping and feature masking, and
preprocessing that stays sparse on a large graph."""

from __future__ import annotations

import resource
import time

import numpy as np
import pytest
import torch

from fsnn.checks import round_count
from fsnn.data import (
    graph_features as F,
)
from fsnn.data.graphs import make_synthetic_graph


def _random_graph(n: int, degree: float, seed: int, connected: bool = True) -> torch.Tensor:
    """Undirected edge index: a ring (connected) plus random chords."""
    rng = np.random.default_rng(seed)
    m = int(n * degree / 2)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    if connected:
        src = np.concatenate([src, np.arange(n)])
        dst = np.concatenate([dst, (np.arange(n) + 1) % n])
    ei = torch.from_numpy(np.stack([np.concatenate([src, dst]), np.concatenate([dst, src])]))
    from torch_geometric.utils import coalesce, remove_self_loops

    return coalesce(remove_self_loops(ei)[0], num_nodes=n)


def _dense_adj(ei: torch.Tensor, n: int) -> np.ndarray:
    a = np.zeros((n, n))
    a[ei[0].numpy(), ei[1].numpy()] = 1.0
    return a


def test_propagate_matches_dense_formula():
    n = 50
    ei = _random_graph(n, 3.0, seed=0)
    x = torch.randn(n, 6)
    a = _dense_adj(ei, n) + np.eye(n)
    dinv = np.diag(1.0 / np.sqrt(a.sum(1)))
    s = dinv @ a @ dinv
    for hops in (0, 1, 2):
        ref = np.linalg.matrix_power(s, hops) @ x.double().numpy()
        out = F.propagate(x, ei, hops=hops)
        assert out.dtype == torch.float32 and out.shape == x.shape
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)
    # existing self loops are replaced by exactly one
    loops = torch.arange(n).repeat(2, 1)
    np.testing.assert_allclose(F.propagate(x, torch.cat([ei, loops], 1)).numpy(), F.propagate(x, ei).numpy(), atol=1e-6)


def test_standardize_uses_training_statistics():
    x = torch.randn(100, 4) * torch.tensor([1.0, 5.0, 0.1, 0.0]) + 3
    mask = torch.zeros(100, dtype=torch.bool)
    mask[:60] = True
    z = F.standardize(x, mask)
    assert torch.allclose(z[mask, :3].mean(0), torch.zeros(3), atol=1e-5)
    assert torch.allclose(z[mask, :3].std(0), torch.ones(3), atol=1e-4)
    assert torch.all(z[:, 3] == 0)  # constant column -> 0, not NaN
    assert not torch.allclose(z[~mask, :3].mean(0), torch.zeros(3), atol=1e-6)


@pytest.mark.parametrize("layout", ["dense", "sparse csr"])
def test_normalize_rows_is_pyg_normalize_features(layout):
    from torch_geometric.data import Data
    from torch_geometric.transforms import NormalizeFeatures

    torch.manual_seed(0)
    x = 2.0 * (torch.rand(40, 30) < 0.2).float()
    x[3], x[5] = 0.0, 0.0
    x[5, 7] = 0.25  # a row summing to less than 1 is left as it is
    expected = NormalizeFeatures()(Data(x=x.clone())).x
    got = F.normalize_rows(x if layout == "dense" else x.to_sparse_csr())
    assert got.layout == (torch.strided if layout == "dense" else torch.sparse_csr)
    assert torch.allclose(got.to_dense(), expected)
    assert torch.equal(got.to_dense()[5], x[5]) and torch.all(got.to_dense()[3] == 0)


def _dense_laplacian(ei, n):
    a = _dense_adj(ei, n)
    d = a.sum(1)
    dinv = np.where(d > 0, 1 / np.sqrt(np.maximum(d, 1e-300)), 0)
    return np.eye(n) - dinv[:, None] * a * dinv[None, :]


@pytest.mark.parametrize("n", [120, 400])  # dense path (<= 256 nodes) and eigsh path
def test_laplacian_pe_matches_dense_eigh(n):
    dim = 16
    ei = _random_graph(n, 4.0, seed=n)
    lam, vec = np.linalg.eigh(_dense_laplacian(ei, n))
    assert lam[1] - lam[0] > 1e-6 and lam[dim + 1] - lam[dim] > 1e-6  # selected subspace well defined
    pe, vals = F.laplacian_pe(ei, n, dim=dim, return_eigenvalues=True)
    assert pe.shape == (n, dim) and pe.dtype == torch.float32
    p = pe.double().numpy()
    np.testing.assert_allclose(p.T @ p, np.eye(dim), atol=1e-5)  # orthonormal columns
    np.testing.assert_allclose(vals.numpy(), lam[1 : dim + 1], atol=1e-7)
    ref = vec[:, 1 : dim + 1]
    np.testing.assert_allclose(p @ p.T, ref @ ref.T, atol=1e-5)  # same subspace (sign/rotation free)
    gaps = np.diff(lam[: dim + 2])
    for j in range(dim):  # eigenvectors of simple eigenvalues agree up to sign
        if min(gaps[j], gaps[j + 1]) > 1e-4:
            assert min(np.abs(p[:, j] - ref[:, j]).max(), np.abs(p[:, j] + ref[:, j]).max()) < 1e-4
    assert torch.equal(pe, F.laplacian_pe(ei, n, dim=dim))  # deterministic signs


def test_laplacian_pe_small_graph_is_padded():
    ei = _random_graph(10, 2.0, seed=1)
    pe = F.laplacian_pe(ei, 10, dim=32)
    assert pe.shape == (10, 32)
    assert torch.all(pe[:, 9:] == 0) and torch.linalg.matrix_rank(pe[:, :9].double()) == 9
    assert F.laplacian_pe(torch.zeros(2, 0, dtype=torch.long), 1, dim=4).abs().sum() == 0


def test_laplacian_pe_of_a_disconnected_graph_is_made_of_its_components_eigenvectors():
    """Components of 300 (eigsh) and 40 nodes (dense eigh), two 10-node paths (equal spectra) and two isolated
    nodes, in shuffled node order: the columns are eigenvectors of the smallest eigenvalues left after each
    component's constant one, each zero outside its component, equal eigenvalues in the order of the components'
    first nodes."""
    path = torch.stack([torch.arange(9), torch.arange(1, 10)])
    path = torch.cat([path, path.flip(0)], 1)
    parts = [(_random_graph(300, 4.0, seed=3), 300), (_random_graph(40, 3.0, seed=4), 40), (path, 10), (path, 10)]
    n, dim = 300 + 40 + 10 + 10 + 2, 40
    order = torch.from_numpy(np.random.default_rng(0).permutation(n))
    owner = torch.full((n,), len(parts))  # the isolated nodes: the last two
    edges, start = [], 0
    for c, (ei, size) in enumerate(parts):
        edges.append(order[ei + start])
        owner[order[start : start + size]] = c
        start += size
    ei = torch.cat(edges, 1)
    lap = _dense_laplacian(ei, n)
    expected = []  # each component's eigenvalues after its first (the constant vector's)
    for c in range(len(parts)):
        members = np.flatnonzero(owner.numpy() == c)
        expected.extend(np.linalg.eigvalsh(lap[np.ix_(members, members)])[1:])
    pe, vals = F.laplacian_pe(ei, n, dim=dim, return_eigenvalues=True)
    np.testing.assert_allclose(vals.numpy(), np.sort(expected)[:dim], atol=1e-7)
    homes = []
    for j in range(dim):
        home = owner[pe[:, j] != 0].unique()
        assert len(home) == 1, j  # zero outside one component
        homes.append(int(home[0]))
        v = pe[:, j].double().numpy()
        np.testing.assert_allclose(lap @ v, vals[j].item() * v, atol=1e-5)
    assert torch.all(pe[owner == len(parts)] == 0)
    ties = [(homes[j], homes[j + 1]) for j in range(dim - 1) if vals[j + 1] - vals[j] < 1e-9]
    first = 2 if order[300 + 40 : 350].min() < order[350:360].min() else 3
    assert len(ties) == 2 and set(ties) == {(first, 5 - first)}  # the paths' two smallest, in that order


def _dense_rwpe(ei, n, steps):
    a = _dense_adj(ei, n)
    d = a.sum(1)
    p = a / np.maximum(d, 1)[:, None]
    out, pk = [], np.eye(n)
    for _ in range(steps):
        pk = pk @ p
        out.append(np.diag(pk).copy())
    return np.stack(out, 1)


def test_random_walk_pe_matches_dense_powers():
    n, steps = 80, 32
    ei = _random_graph(n, 3.0, seed=7)
    ref = _dense_rwpe(ei, n, steps)
    rw = F.random_walk_pe(ei, n, steps=steps, method="exact")
    assert rw.shape == (n, steps) and rw.dtype == torch.float32
    np.testing.assert_allclose(rw.numpy(), ref, rtol=1e-5, atol=1e-7)
    assert torch.equal(rw, F.random_walk_pe(ei, n, steps=steps))  # auto = exact on small graphs
    assert torch.all(rw[:, 0] == 0)  # no self loops
    for k in (1, 2, 3, 5, 31):  # varies across nodes (the authors' version was constant per column)
        assert rw[:, k].std() > 1e-4
    odd = F.random_walk_pe(ei, n, steps=7, method="exact")  # odd number of steps
    np.testing.assert_allclose(odd.numpy(), ref[:, :7], rtol=1e-5, atol=1e-7)


def test_random_walk_pe_estimate():
    n = 1500
    ei = _random_graph(n, 10.0, seed=3)
    # add a few small components (exact in the estimator): an edge and a triangle
    extra = torch.tensor([[n, n + 1, n + 2, n + 3, n + 4, n + 2], [n + 1, n, n + 3, n + 4, n + 2, n + 4]])
    ei = torch.cat([ei, extra, extra.flip(0)], 1)
    n += 5
    exact = F.random_walk_pe(ei, n, steps=16, method="exact").double()
    est = F.random_walk_pe(ei, n, steps=16, method="estimate", num_probes=512, seed=0).double()
    assert torch.equal(est, F.random_walk_pe(ei, n, steps=16, method="estimate", num_probes=512, seed=0).double())
    np.testing.assert_allclose(est[:, :4].numpy(), exact[:, :4].numpy(), rtol=1e-5, atol=1e-7)  # k <= 4 exact
    np.testing.assert_allclose(est[-5:].numpy(), exact[-5:].numpy(), rtol=1e-5, atol=1e-7)  # small components
    assert est[-5, 1] == pytest.approx(1.0) and est[-5, 0] == 0  # isolated edge: returns after 2 steps
    rel = ((est - exact).abs() / exact.clamp_min(1e-12))[:-5]
    for k in (6, 8, 12, 16):
        assert float(rel[:, k - 1].median()) < 0.1, k
    rms = (est - exact)[:-5, 5].pow(2).mean().sqrt()
    assert rms < 0.5 * exact[:-5, 5].std()  # node-to-node signal survives the noise


def test_drop_edges_symmetric_fraction_and_seeded():
    n = 200
    ei = _random_graph(n, 6.0, seed=2)
    undirected = ei.size(1) // 2
    g = torch.Generator().manual_seed(5)
    out = F.drop_edges(ei, 0.3, g)
    from torch_geometric.utils import is_undirected

    assert is_undirected(out, num_nodes=n)
    assert out.size(1) // 2 == undirected - round_count(0.3, undirected)
    kept = set(map(tuple, out.t().tolist()))
    assert kept <= set(map(tuple, ei.t().tolist()))
    assert torch.equal(out, F.drop_edges(ei, 0.3, torch.Generator().manual_seed(5)))
    assert not torch.equal(out, F.drop_edges(ei, 0.3, torch.Generator().manual_seed(6)))
    assert torch.equal(F.drop_edges(ei, 0.0, 0), ei)
    assert F.drop_edges(ei, 1.0, 0).size(1) == 0
    assert ei.size(1) == 2 * undirected  # input untouched


def test_mask_features():
    x = torch.rand(50, 20) + 0.5
    g = torch.Generator().manual_seed(0)
    out = F.mask_features(x, 0.25, g)
    assert int((out == 0).sum()) == 250 and torch.all(x > 0)
    assert torch.equal(out[out != 0], x[out != 0])
    assert torch.equal(out, F.mask_features(x, 0.25, torch.Generator().manual_seed(0)))
    cols = F.mask_features(x, 0.5, 1, mode="column")
    assert int((cols == 0).all(0).sum()) == 10
    with pytest.raises(ValueError, match=r"^ratio must be in \[0, 1\], got 1.5$"):
        F.mask_features(x, 1.5)
    with pytest.raises(ValueError, match="^mode must be one of entry, column, got 'row'$"):
        F.mask_features(x, 0.5, mode="row")


def test_the_encodings_refuse_a_bad_option_naming_it():
    edge_index = torch.tensor([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="^hops must be an integer >= 0, got -1$"):
        F.propagate(torch.ones(2, 3), edge_index, hops=-1)
    with pytest.raises(ValueError, match="^dim must be an integer >= 0, got 1.5$"):
        F.laplacian_pe(edge_index, 2, dim=1.5)
    with pytest.raises(ValueError, match="^method must be one of auto, exact, estimate, got 'fast'$"):
        F.random_walk_pe(edge_index, 2, method="fast")
    with pytest.raises(ValueError, match="^num_probes must be an integer >= 1, got 0$"):
        F.random_walk_pe(edge_index, 2, num_probes=0)


@pytest.mark.slow
def test_preprocessing_stays_sparse_on_a_large_graph():
    """50k nodes: a dense N x N float32 would need 10 GB; the whole pipeline must stay far below that."""
    n = 50_000
    g = make_synthetic_graph(n, num_classes=10, num_features=32, avg_degree=10, seed=0)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # GiB (Linux: kB)
    t0 = time.perf_counter()
    xp = F.propagate(g.x, g.edge_index, hops=2)
    pe = F.laplacian_pe(g.edge_index, n, dim=32)
    rw = F.random_walk_pe(g.edge_index, n, steps=32, method="estimate", num_probes=128)
    elapsed = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    assert xp.shape == (n, 32) and pe.shape == (n, 32) and rw.shape == (n, 32)
    assert elapsed < 120
    assert peak - base < 3.0
