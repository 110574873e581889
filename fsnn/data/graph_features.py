"""Sparse node-feature preprocessing for the spiking GNNs: SGC propagation, z-scoring, positional encodings,
robustness perturbations, and the keys under which :func:`node_features` caches them (:mod:`fsnn.data.cache`).

Everything here works on the sparse graph: memory is O(E + N * F) (plus O(N * block) work buffers), never a
dense ``N x N`` matrix, so ogbn-arxiv (169k nodes, 1.17M edges) preprocesses on a small CPU. This replaces
the authors' dense-adjacency ``utils.py`` (dense ``N x N`` normalisation and ``eigh``) and fixes their RWPE,
whose ``diag(P @ column)`` gave one constant per walk length for all nodes.

>>> xp = propagate(data.x, data.edge_index, hops=1)            # (D^-1/2 (A+I) D^-1/2)^hops X
>>> xs = standardize(xp, data.train_mask)                        # z-score with training-node statistics
>>> pe = laplacian_pe(data.edge_index, data.num_nodes, dim=32)   # eigenvectors 2..33 of I - D^-1/2 A D^-1/2
>>> rw = random_walk_pe(data.edge_index, data.num_nodes, 32)    # diag((D^-1 A)^k), k = 1..32
>>> x_in = node_features(data, hops=1, pe="laplacian", cache_dir=cache_dir("./data", "graphs", "cora"))

Conventions: propagation uses the graph as given (a directed edge ``s -> t`` sends ``x_s`` to ``t``, degrees
count incoming edges plus the self loop, as PyG's ``gcn_norm``); the positional encodings use the simple
undirected graph of ``edge_index`` (``A <- A or A^T``, duplicates merged, self loops dropped).
"""

from __future__ import annotations

import hashlib
import math
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse.csgraph import connected_components

from fsnn.checks import Count, NonNegativeInt, Ratio, as_generator, checked, one_of, round_count
from fsnn.data.cache import cached_tensor

__all__ = [
    "CACHE_VERSION",
    "drop_edges",
    "graph_fingerprint",
    "laplacian_pe",
    "mask_features",
    "node_features",
    "normalized_adjacency",
    "propagate",
    "random_walk_pe",
    "resolve_rwpe_method",
    "rwpe_exact_work",
    "standardize",
]

CACHE_VERSION = 2  # bump when an algorithm below changes its output: old cache files are then ignored

# Graphs up to this many nodes use a dense eigendecomposition for LapPE (ARPACK needs k < N; a 256 x 256 matrix
# is 0.5 MB). Everything larger goes through scipy.sparse.linalg.eigsh.
DENSE_EIG_MAX_NODES = 256
# random_walk_pe(method="auto") computes the exact diagonal when N * ceil(steps/2) * nnz(A) stays below this
# (up to about a minute on two cores: Cora ... Computers, CS); larger graphs (Physics, ogbn-arxiv) use the probe
# estimator.
RWPE_EXACT_MAX_WORK = 1.2e11
# Estimator: connected components up to this size are computed exactly; diag(S^3), diag(S^4) are exact when
# the row chunks of S^2 need at most this many multiply-adds (sum of squared degrees).
RWPE_SMALL_COMPONENT = 256
RWPE_SQUARE_MAX_WORK = 5e8
# Columns per block of the walk products (N x 32 float32/64 blocks stay cache friendly).
RWPE_BLOCK = 32
# Work buffers of the blocked/probe products: at most this many bytes per N x block matrix.
BLOCK_BYTES = 64 * 2**20


# -- graph matrices ----------------------------------------------------------------------------


def _edges_numpy(edge_index) -> tuple[np.ndarray, np.ndarray]:
    ei = torch.as_tensor(edge_index)
    if ei.dim() != 2 or ei.size(0) != 2:
        raise ValueError(f"edge_index must have shape [2, E], got {tuple(ei.shape)}")
    ei = ei.detach().to("cpu", torch.int64).numpy()
    return ei[0], ei[1]


def _check_nodes(row: np.ndarray, col: np.ndarray, num_nodes: int) -> int:
    num_nodes = int(num_nodes)
    if num_nodes < 0:
        raise ValueError(f"num_nodes must be >= 0, got {num_nodes}")
    if row.size and (min(row.min(), col.min()) < 0 or max(row.max(), col.max()) >= num_nodes):
        raise ValueError(f"edge_index refers to nodes outside 0..{num_nodes - 1}")
    return num_nodes


def _simple_undirected(edge_index, num_nodes: int, dtype=np.float64) -> sp.csr_matrix:
    """Binary symmetric adjacency of the simple undirected graph of ``edge_index`` (no self loops)."""
    row, col = _edges_numpy(edge_index)
    n = _check_nodes(row, col, num_nodes)
    keep = row != col
    row, col = row[keep], col[keep]
    r = np.concatenate([row, col])
    c = np.concatenate([col, row])
    a = sp.csr_matrix((np.ones(r.size, dtype=dtype), (r, c)), shape=(n, n))
    a.sum_duplicates()
    a.data[:] = 1
    return a


def _scale_sym(a: sp.csr_matrix, scale: np.ndarray) -> sp.csr_matrix:
    """``diag(scale) @ a @ diag(scale)`` for CSR ``a`` without forming the diagonals."""
    a = a.tocsr(copy=True)
    rows = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
    a.data *= (scale[rows] * scale[a.indices]).astype(a.data.dtype)
    return a


def normalized_adjacency(edge_index, num_nodes: int, *, self_loops: bool, dtype=np.float64) -> sp.csr_matrix:
    """Sparse ``D^-1/2 A D^-1/2`` (scipy CSR).

    ``self_loops=True``: the GCN/SGC operator of ``edge_index`` as given, ``A[t, s] = 1`` per edge ``s -> t``
    (duplicates merged, existing self loops replaced by exactly one), ``D = diag(A.sum(1))``.
    ``self_loops=False``: the simple undirected graph (the operator of the normalised Laplacian
    ``I - D^-1/2 A D^-1/2``); isolated nodes get a zero row.
    """
    if self_loops:
        row, col = _edges_numpy(edge_index)
        n = _check_nodes(row, col, num_nodes)
        keep = row != col
        loops = np.arange(n)
        r = np.concatenate([col[keep], loops])  # target aggregates from source
        c = np.concatenate([row[keep], loops])
        a = sp.csr_matrix((np.ones(r.size, dtype=dtype), (r, c)), shape=(n, n))
        a.sum_duplicates()
        a.data[:] = 1
    else:
        a = _simple_undirected(edge_index, num_nodes, dtype)
    deg = np.asarray(a.sum(axis=1)).ravel()
    with np.errstate(divide="ignore"):
        dinv = np.where(deg > 0, 1.0 / np.sqrt(deg), 0.0)
    return _scale_sym(a, dinv)


# -- propagation and standardisation ----------------------------------------------------------


@checked
def propagate(x: torch.Tensor, edge_index, hops: NonNegativeInt = 1, num_nodes: int | None = None) -> torch.Tensor:
    """SGC features ``(D^-1/2 (A + I) D^-1/2)^hops X`` with a sparse operator (``hops=0`` returns a copy).

    ``x``: ``[N, F]`` floating tensor (float32 stays float32). Cost O(hops * nnz * F), memory O(nnz + N * F).
    """
    x = torch.as_tensor(x)
    if x.dim() != 2:
        raise ValueError(f"x must be [N, F], got {tuple(x.shape)}")
    if x.dtype not in (torch.float32, torch.float64):
        x = x.float()
    n = x.size(0) if num_nodes is None else int(num_nodes)
    if n != x.size(0):
        raise ValueError(f"x has {x.size(0)} rows but num_nodes={n}")
    out = x.detach().cpu().numpy()
    if hops == 0:
        return torch.from_numpy(out.copy())
    s = normalized_adjacency(edge_index, n, self_loops=True, dtype=out.dtype)
    for _ in range(int(hops)):
        out = s @ out
    return torch.from_numpy(np.ascontiguousarray(out))


def standardize(x: torch.Tensor, mask: torch.Tensor | None = None, eps: float = 1e-12) -> torch.Tensor:
    """Column z-score ``(x - mean) / std`` with mean and (unbiased) std over the rows selected by ``mask``
    (a boolean ``[N]`` mask or an index tensor; ``None`` = all rows). Constant columns get std 1 (they become
    0 instead of NaN). Returns a new tensor of ``x``'s dtype."""
    x = torch.as_tensor(x)
    if not x.is_floating_point():
        x = x.float()
    ref = x if mask is None else x[torch.as_tensor(mask, device=x.device)]
    if ref.size(0) == 0:
        raise ValueError("standardize: the mask selects no rows")
    if ref.size(0) == 1:
        mean, std = ref[0], torch.ones_like(ref[0])
    else:  # float64 statistics, a block of columns at a time (bounded extra memory for wide features)
        step = max(1, (64 * 2**20) // (8 * ref.size(0)))
        parts = [torch.std_mean(ref[:, i : i + step].double(), dim=0) for i in range(0, ref.size(1), step)]
        std = torch.cat([p[0] for p in parts]).to(x.dtype) if parts else ref.new_zeros(0)
        mean = torch.cat([p[1] for p in parts]).to(x.dtype) if parts else ref.new_zeros(0)
    std = torch.where(std > eps, std, torch.ones_like(std))
    return (x - mean) / std


def normalize_rows(x: torch.Tensor) -> torch.Tensor:
    """Each row of non-negative features divided by its sum, a sum below 1 counting as 1 (PyG's
    ``NormalizeFeatures`` on features whose minimum is 0), for ``x`` ``[N, F]`` dense or sparse CSR; returns a new
    tensor of the same layout."""
    if x.layout == torch.sparse_csr:
        counts = x.crow_indices().diff()
        sums = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device).index_add_(
            0, torch.repeat_interleave(torch.arange(x.shape[0], device=x.device), counts), x.values()
        )
        values = x.values() / sums.clamp(min=1.0).repeat_interleave(counts)
        return torch.sparse_csr_tensor(x.crow_indices(), x.col_indices(), values, x.shape, check_invariants=False)
    return x / x.sum(dim=-1, keepdim=True).clamp(min=1.0)


# -- positional encodings ---------------------------------------------------------------------


def _fix_signs(vecs: np.ndarray) -> np.ndarray:
    """Deterministic sign convention: the entry of largest magnitude of each column is positive."""
    if vecs.size == 0:
        return vecs
    idx = np.argmax(np.abs(vecs), axis=0)
    signs = np.sign(vecs[idx, np.arange(vecs.shape[1])])
    signs[signs == 0] = 1
    return vecs * signs


def _component_spectrum(s: sp.csr_matrix, dim: int, seed: int, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``dim`` eigenpairs of ``L = I - s``, ``s`` the normalised adjacency of one connected component, in
    ascending eigenvalue after the first (its vector is constant up to ``D^1/2``: eigenvalue 0, or 1 for an isolated
    node, whose ``L`` is ``[1]``)."""
    m = s.shape[0]
    if m == 1:
        return np.zeros(0), np.zeros((1, 0))
    if m <= DENSE_EIG_MAX_NODES:
        lam, vec = np.linalg.eigh(np.eye(m) - s.toarray())
    else:
        from scipy.sparse.linalg import eigsh

        k = min(dim + 1, m - 1)  # ARPACK needs k < m
        v0 = np.random.default_rng(seed).standard_normal(m)
        mu, vec = eigsh(s, k=k, which="LA", v0=v0, tol=tol, ncv=min(m, max(2 * k + 1, k + 32)))
        order = np.argsort(-mu, kind="stable")
        lam, vec = 1.0 - mu[order], vec[:, order]
    return lam[1 : dim + 1], vec[:, 1 : dim + 1]  # a connected component's zero eigenvalue is simple


@checked
def laplacian_pe(
    edge_index,
    num_nodes: int,
    dim: NonNegativeInt = 32,
    *,
    seed: int = 0,
    tol: float = 1e-8,
    return_eigenvalues: bool = False,
):
    """Laplacian positional encoding: the eigenvectors of the ``dim`` smallest eigenvalues of the symmetric
    normalised Laplacian ``L = I - D^-1/2 A D^-1/2`` of the simple undirected graph left after each connected
    component's first (eigenvectors 2..dim+1 of a connected graph), as ``[N, dim]`` float32, in ascending eigenvalue.

    ``L`` is block diagonal over the connected components, so each component is decomposed on its own and the
    pairs merged (equal eigenvalues, to 9 decimals, in the order of the components' first nodes): every column is
    exactly zero outside one component. A component's first eigenvector (constant up to ``D^1/2``: eigenvalue 0, or
    1 for an isolated node) is left out: it only says which component a node is in, and over several components the
    zero eigenvalue is repeated, so the basis a whole-graph eigensolver returns for it comes from its rounding
    errors, which differ with the BLAS kernels of the CPU. Components with at most ``DENSE_EIG_MAX_NODES`` nodes use
    a dense ``eigh``, larger ones ``scipy.sparse.linalg.eigsh`` for the ``dim + 1`` algebraically largest eigenpairs
    of their ``D^-1/2 A D^-1/2`` with a start vector seeded by ``seed`` (ARPACK needs ``k < N``). Columns beyond the
    available eigenvectors are zero. Signs are fixed (largest-magnitude entry positive); a model may flip them
    randomly during training, as in the LSPE recipe. Within an eigenvalue repeated inside one component the basis is
    arbitrary (only the spanned subspace is defined). ``return_eigenvalues=True`` also returns the ``[dim]``
    eigenvalues of ``L`` (NaN for padded columns).
    """
    n = int(num_nodes)
    s = normalized_adjacency(edge_index, n, self_loops=False)
    count, labels = connected_components(s, directed=False)  # labelled in the order of their first nodes
    nodes = np.argsort(labels, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(labels, minlength=count))])
    s = s[nodes][:, nodes]  # components as consecutive blocks
    vals, cols, owners = [], [], []
    for c in range(count if dim else 0):
        a, b = bounds[c], bounds[c + 1]
        lam, vec = _component_spectrum(s[a:b, a:b], dim, seed, tol)
        vals.append(lam)
        cols.extend((nodes[a:b], vec[:, j]) for j in range(len(lam)))
        owners.append(np.full(len(lam), c))
    pe = np.zeros((n, dim), dtype=np.float32)
    lam_out = np.full(dim, np.nan)
    if vals:
        vals, owners = np.concatenate(vals), np.concatenate(owners)
        # ties (isomorphic components) by component, whatever the last bits of their eigenvalues
        chosen = np.lexsort((np.arange(len(vals)), owners, np.round(vals, 9)))[:dim]
        for j, i in enumerate(chosen):
            at, vec = cols[i]
            pe[at, j] = _fix_signs(vec[:, None])[:, 0]
        lam_out[: len(chosen)] = vals[chosen]
    pe = torch.from_numpy(pe)
    return (pe, torch.from_numpy(lam_out)) if return_eigenvalues else pe


def rwpe_exact_work(edge_index, num_nodes: int, steps: int = 32) -> float:
    """Multiply-adds of ``random_walk_pe(method="exact")``: ``N * ceil(steps / 2) * nnz(A)``."""
    s = _simple_undirected(edge_index, num_nodes, np.float32)
    return float(num_nodes) * math.ceil(int(steps) / 2) * s.nnz


def _workers(workers: int | None) -> int:
    return max(1, int(workers) if workers else min(torch.get_num_threads(), os.cpu_count() or 1))


def _map(fn, items, workers: int) -> list:
    """``[fn(item) for item in items]`` on a thread pool (scipy's sparse products release the GIL)."""
    if workers <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


def _walk_chain(s: sp.csr_matrix, y: np.ndarray, steps: int, axis: int) -> np.ndarray:
    """For ``Y_a = S^a Y`` (``a = 0..ceil(steps/2)``): column ``k-1`` of the result is
    ``sum(Y_(k//2) * Y_(k - k//2), axis)``, i.e. ``diag(Y^T S^k Y)`` (``axis=0``, one row per column of ``Y``) or
    ``rowsum(Y_(k//2) * Y_(k - k//2))`` (``axis=1``, one row per node)."""
    out = np.zeros((y.shape[1 - axis], steps))
    prev = y
    for a in range(1, (steps + 1) // 2 + 1):
        cur = s @ prev
        if 2 * a - 1 <= steps:  # k = 2a - 1 = (a - 1) + a
            out[:, 2 * a - 2] = np.einsum("ij,ij->j" if axis == 0 else "ij,ij->i", prev, cur, dtype=np.float64)
        if 2 * a <= steps:  # k = 2a = a + a
            out[:, 2 * a - 1] = np.einsum("ij,ij->j" if axis == 0 else "ij,ij->i", cur, cur, dtype=np.float64)
        prev = cur
    return out


def _rwpe_exact(s: sp.csr_matrix, steps: int, workers: int) -> np.ndarray:
    """``diag(S^k)``, ``k = 1..steps``, from ``S^a E_B`` for blocks ``B`` of unit vectors (float64)."""
    n = s.shape[0]
    block = max(1, min(n, RWPE_BLOCK, BLOCK_BYTES // (8 * max(n, 1))))
    starts = list(range(0, n, block))

    def run(start):
        idx = np.arange(start, min(start + block, n))
        y = np.zeros((n, idx.size))
        y[idx, np.arange(idx.size)] = 1.0
        return _walk_chain(s, y, steps, axis=0)

    return np.concatenate(_map(run, starts, workers)) if starts else np.zeros((0, steps))


def _rwpe_low_orders(s: sp.csr_matrix, steps: int, pe: np.ndarray, max_work: float) -> None:
    """Exact ``diag(S^k)`` for ``k <= 4`` into ``pe``: ``diag(S) = 0``, ``diag(S^2) = rowsum(S o S)``, and, when
    ``sum_j deg_j^2 <= max_work``, ``diag(S^3) = rowsum(S^2 o S)``, ``diag(S^4) = rowsum(S^2 o S^2)`` from row
    chunks of ``S^2`` (memory bounded by the chunk)."""
    pe[:, 0] = 0.0
    if steps >= 2:
        pe[:, 1] = np.asarray(s.multiply(s).sum(axis=1)).ravel()
    if steps < 3:
        return
    pattern = s.copy()
    pattern.data[:] = 1.0
    deg = np.diff(s.indptr).astype(np.float64)
    row_work = pattern @ deg  # nnz of row i of S^2 is at most sum_{j in N(i)} deg_j
    if row_work.sum() > max_work:
        return
    bounds = np.searchsorted(np.cumsum(row_work), np.arange(1, math.ceil(row_work.sum() / 2e7) + 1) * 2e7)
    start = 0
    for stop in list(np.unique(np.minimum(bounds + 1, s.shape[0]))) + [s.shape[0]]:
        if stop <= start:
            continue
        rows = s[start:stop]
        sq = (rows @ s).tocsr()  # rows of S^2
        pe[start:stop, 2] = np.asarray(sq.multiply(rows).sum(axis=1)).ravel()
        if steps >= 4:
            pe[start:stop, 3] = np.asarray(sq.multiply(sq).sum(axis=1)).ravel()
        start = stop


def _rwpe_estimate(s: sp.csr_matrix, steps: int, num_probes: int, seed: int, workers: int) -> np.ndarray:
    """Stochastic ``diag(S^k)``: small connected components exactly, large ones by Rademacher probes with the
    trivial eigenvector of each component (``u = sqrt(deg / vol)``, eigenvalue 1) deflated exactly, so the
    probes only estimate the decaying remainder ``diag(S^k) - u_i^2``; orders ``k <= 4`` exact."""
    from scipy.sparse.csgraph import connected_components

    n = s.shape[0]
    pe = np.zeros((n, steps))
    _, labels = connected_components(s, directed=False)
    sizes = np.bincount(labels)
    small = sizes[labels] <= RWPE_SMALL_COMPONENT
    # small components: exact, on chunks of whole components
    nodes = np.flatnonzero(small)
    nodes = nodes[np.argsort(labels[nodes], kind="stable")]
    if nodes.size:
        comp_start = np.flatnonzero(np.r_[True, labels[nodes][1:] != labels[nodes][:-1]])
        cuts = [0]
        for c in comp_start[1:]:
            if c - cuts[-1] > RWPE_SMALL_COMPONENT:
                cuts.append(int(c))
        cuts.append(nodes.size)
        chunks = [nodes[a:b] for a, b in zip(cuts[:-1], cuts[1:])]
        results = _map(lambda idx: _rwpe_exact(s[idx][:, idx].tocsr(), steps, 1), chunks, workers)
        for idx, res in zip(chunks, results):
            pe[idx] = res
    large = ~small
    if large.any():
        deg = np.diff(s.indptr).astype(np.float64)  # S and A share the sparsity pattern
        vol = np.bincount(labels, weights=deg)
        u = np.where(large, np.sqrt(deg / np.maximum(vol[labels], 1.0)), 0.0)
        comp_ids, comp_of = np.unique(labels[large], return_inverse=True)
        proj = sp.csr_matrix((u[large], (comp_of, np.flatnonzero(large))), shape=(comp_ids.size, n))
        s32 = s.astype(np.float32)
        m = int(num_probes)
        block = max(1, min(m, RWPE_BLOCK))
        seeds = np.random.SeedSequence(seed).spawn(math.ceil(m / block))

        def run(i):
            b = min(block, m - i * block)
            rng = np.random.default_rng(seeds[i])
            g = (rng.integers(0, 2, size=(n, b), dtype=np.int8) * 2 - 1).astype(np.float32)
            g[~large] = 0.0
            g -= (proj.T @ (proj @ g)).astype(np.float32)  # remove the eigenvalue-1 component
            return _walk_chain(s32, g, steps, axis=1)

        est = np.sum(_map(run, list(range(len(seeds))), workers), axis=0) / m
        pe[large] = est[large] + (u[large] ** 2)[:, None]
    exact_small = pe[small].copy()
    _rwpe_low_orders(s, steps, pe, RWPE_SQUARE_MAX_WORK)
    pe[small] = exact_small
    return np.clip(pe, 0.0, 1.0, out=pe)  # return probabilities; removes negative estimates


@checked
def random_walk_pe(
    edge_index,
    num_nodes: int,
    steps: Count = 32,
    *,
    method: one_of("auto", "exact", "estimate") = "auto",
    num_probes: Count = 512,
    seed: int = 0,
    workers: int | None = None,
) -> torch.Tensor:
    """Random-walk positional encoding ``[N, steps]`` float32: column ``k-1`` holds the return probabilities
    ``diag((D^-1 A)^k)``, ``k = 1..steps``, of the simple undirected graph (isolated nodes: 0). Every node gets
    its own values (the authors' version broadcast one constant per column).

    ``diag(P^k) = diag(S^k)`` for ``S = D^-1/2 A D^-1/2`` (similar matrices, same diagonal), and for the
    symmetric ``S``: ``diag(S^(a+b))_i = <S^a e_i, S^b e_i>``, so ``ceil(steps/2)`` sparse products per vector
    suffice. Nothing dense of size ``N x N`` is formed: the products run on ``N x 32`` blocks.

    ``method``:
      * ``"exact"``: ``S^a E_B`` for blocks ``B`` of unit vectors, float64; work ``N * ceil(steps/2) * nnz``
        (:func:`rwpe_exact_work`), 0.5-2e9 multiply-adds per second on a 2-core CPU; measured on graphs of
        the datasets' sizes: Cora 0.3 s, Photo 12 s, Pubmed 27 s, Computers 61 s; ogbn-arxiv (6.3e12) over an
        hour.
      * ``"estimate"``: connected components of at most ``RWPE_SMALL_COMPONENT`` nodes and orders ``k <= 4``
        exactly (``k = 3, 4`` through row chunks of ``S^2`` when ``sum deg^2 <= RWPE_SQUARE_MAX_WORK``); the
        rest from ``num_probes`` seeded Rademacher probes ``G`` (``rowsum(S^a G o S^b G) / m``, unbiased) after
        removing each component's stationary eigenvector exactly, so the noise only affects the decaying part.
        Work ``num_probes * ceil(steps/2) * nnz``; values clipped to ``[0, 1]``.
      * ``"auto"`` (default): exact when :func:`rwpe_exact_work` is at most ``RWPE_EXACT_MAX_WORK``, else
        estimate.
    ``workers``: threads for the block products (default: ``torch.get_num_threads()``).
    """
    n = int(num_nodes)
    if n == 0:
        return torch.zeros(0, steps)
    s = normalized_adjacency(edge_index, n, self_loops=False)
    if method == "auto":
        method = "exact" if float(n) * math.ceil(steps / 2) * s.nnz <= RWPE_EXACT_MAX_WORK else "estimate"
    w = _workers(workers)
    pe = _rwpe_exact(s, steps, w) if method == "exact" else _rwpe_estimate(s, steps, num_probes, seed, w)
    return torch.from_numpy(pe.astype(np.float32))


def resolve_rwpe_method(edge_index, num_nodes: int, steps: int = 32, method: str = "auto") -> str:
    """The method ``random_walk_pe(method=method)`` uses for this graph (``"exact"`` or ``"estimate"``)."""
    if method != "auto":
        return method
    return "exact" if rwpe_exact_work(edge_index, num_nodes, steps) <= RWPE_EXACT_MAX_WORK else "estimate"


# -- robustness perturbations (pure functions) ------------------------------------------------


@checked
def drop_edges(edge_index: torch.Tensor, ratio: Ratio, generator=None) -> torch.Tensor:
    """Randomly remove ``round_count(ratio, U)`` of the ``U`` undirected edges ``{u, v}`` (both directions together)
    and return the remaining graph as a symmetric, coalesced ``[2, E']`` edge index. Self loops count as edges
    of their own. ``generator``: a ``torch.Generator``, an int seed, or ``None`` (seed 0). Does not modify the
    input."""
    ei = torch.as_tensor(edge_index).to(torch.long)
    lo, hi = torch.minimum(ei[0], ei[1]), torch.maximum(ei[0], ei[1])
    pairs = torch.unique(torch.stack([lo, hi]), dim=1)  # sorted unique undirected pairs
    u = pairs.size(1)
    n_drop = round_count(ratio, u)
    keep = torch.ones(u, dtype=torch.bool)
    if n_drop:
        keep[torch.randperm(u, generator=as_generator(generator))[:n_drop]] = False
    kept = pairs[:, keep]
    loops = kept[0] == kept[1]
    both = torch.cat([kept, kept[:, ~loops].flip(0)], dim=1)
    order = torch.argsort(both[0] * (int(both.max()) + 1 if both.numel() else 1) + both[1])
    return both[:, order].contiguous()


@checked
def mask_features(
    x: torch.Tensor, ratio: Ratio, generator=None, *, mode: one_of("entry", "column") = "entry"
) -> torch.Tensor:
    """Zero a random fraction ``ratio`` of the feature matrix and return the new tensor (input unchanged).

    ``mode="entry"``: exactly ``round_count(ratio, N * F)`` entries chosen uniformly; ``mode="column"``: exactly
    ``round_count(ratio, F)`` whole feature columns. ``generator``: ``torch.Generator``, int seed or ``None`` (0)."""
    x = torch.as_tensor(x)
    out = x.clone(memory_format=torch.contiguous_format)
    g = as_generator(generator)
    if mode == "entry":
        k = round_count(ratio, x.numel())
        if k:
            out.view(-1)[torch.randperm(x.numel(), generator=g)[:k].to(x.device)] = 0
    else:
        k = round_count(ratio, x.size(-1))
        if k:
            out[..., torch.randperm(x.size(-1), generator=g)[:k].to(x.device)] = 0
    return out


# -- cache keys ---------------------------------------------------------------------------------


#: node features with fewer non-zero entries than this share are stored and multiplied as sparse CSR matrices (the
#: bag-of-words of CS and Physics: under 1 %; Amazon's and the Planetoid graphs' are denser or small)
SPARSE_FEATURES_BELOW = 0.1


def sparse_if_sparse(x: torch.Tensor) -> torch.Tensor:
    """``x`` as a sparse CSR matrix where fewer than :data:`SPARSE_FEATURES_BELOW` of its entries are non-zero (1.1 GB
    of dense Physics features are 14 MB so), else ``x`` itself."""
    if x.layout != torch.strided or x.dim() != 2:
        return x
    return x.to_sparse_csr() if int(torch.count_nonzero(x)) < SPARSE_FEATURES_BELOW * x.numel() else x


def graph_fingerprint(edge_index, num_nodes: int, x: torch.Tensor | None = None) -> str:
    """16-hex-digit BLAKE2b digest of ``num_nodes``, ``edge_index`` (and ``x`` if given): the cache key of
    everything derived from them, so a changed graph (another copy of the data, dropped edges, masked
    features) never reuses stale results."""
    h = hashlib.blake2b(digest_size=8)
    h.update(f"n={int(num_nodes)};".encode())
    h.update(np.ascontiguousarray(torch.as_tensor(edge_index).detach().cpu().to(torch.int64).numpy()).data)
    if x is not None:
        xt = torch.as_tensor(x).detach().cpu().contiguous()
        h.update(f"x={tuple(xt.shape)}{xt.dtype};".encode())
        h.update(xt.view(torch.uint8).numpy().data if xt.numel() else b"")
    return h.hexdigest()


def node_features(
    data,
    *,
    hops: int = 1,
    zscore: bool = True,
    pe: str | None = None,
    pe_dim: int = 32,
    rwpe_method: str = "auto",
    rwpe_probes: int = 512,
    pe_seed: int = 0,
    cache_dir: str | Path | None = None,
) -> torch.Tensor:
    """The spiking GNN input of the paper's recipe: ``standardize(propagate(x, hops), train_mask)``, with a
    positional encoding concatenated when ``pe`` is ``"laplacian"`` or ``"random_walk"`` (DRSGNN, ``pe_dim``
    columns, not z-scored). ``data`` needs ``x``, ``edge_index`` and (for ``zscore``) ``train_mask``.

    With ``cache_dir`` (:func:`fsnn.data.cache.cache_dir` ``(data_dir, "graphs", name)``), the propagated features
    and the PE are memoised there under keys that include the parameters and a :func:`graph_fingerprint` of the inputs
    (``propagate-h1-<fp>.pt``, ``lappe-d32-s0-<fp>.pt``, ``rwpe-k32-exact-<fp>.pt``,
    ``rwpe-k32-estimate-m512-s0-<fp>.pt``); z-scoring depends on the split and is cheap, so it is not cached.
    """
    n = data.num_nodes
    ei = data.edge_index
    fp_graph = graph_fingerprint(ei, n) if cache_dir is not None else ""
    if hops:
        fp_x = graph_fingerprint(ei, n, data.x) if cache_dir is not None else ""
        x = cached_tensor(
            cache_dir,
            f"propagate-v{CACHE_VERSION}-h{hops}-{fp_x}",
            lambda: propagate(data.x, ei, hops=hops, num_nodes=n),
        )
    else:
        x = torch.as_tensor(data.x).float()
    if zscore:
        x = standardize(x, getattr(data, "train_mask", None))
    if pe in (None, "none", ""):
        return x
    if pe == "laplacian":
        enc = cached_tensor(
            cache_dir,
            f"lappe-v{CACHE_VERSION}-d{pe_dim}-s{pe_seed}-{fp_graph}",
            lambda: laplacian_pe(ei, n, pe_dim, seed=pe_seed),
        )
    elif pe == "random_walk":
        method = resolve_rwpe_method(ei, n, pe_dim, rwpe_method)
        tag = "exact" if method == "exact" else f"estimate-m{rwpe_probes}-s{pe_seed}"
        enc = cached_tensor(
            cache_dir,
            f"rwpe-v{CACHE_VERSION}-k{pe_dim}-{tag}-{fp_graph}",
            lambda: random_walk_pe(ei, n, pe_dim, method=method, num_probes=rwpe_probes, seed=pe_seed),
        )
    else:
        raise ValueError(f"pe must be None, 'laplacian' or 'random_walk', got {pe!r}")
    return torch.cat([x, enc.to(x.dtype)], dim=1)
