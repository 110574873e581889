"""Tiny copies of the graph datasets in their real raw formats, for offline tests and demos; written by
:func:`fsnn.data.fakes.fixtures.write_fixtures` with the others, under ``root`` (usable as ``data_dir`` of
:func:`fsnn.data.load_graph`):

* ``Cora/raw/ind.cora.*``, ``CiteSeer/raw/ind.citeseer.*``, ``PubMed/raw/ind.pubmed.*``: Planetoid pickles
  (``x``/``tx``/``allx`` scipy CSR features, ``y``/``ty``/``ally`` one-hot arrays, ``graph`` a
  ``defaultdict(list)`` adjacency, ``test.index`` text), 550 nodes: ``2C`` labelled training nodes, the
  500 validation nodes PyG hard-codes, 30 test nodes in shuffled order.
* ``Photo/raw/amazon_electronics_photo.npz``, ``Computers/raw/amazon_electronics_computers.npz``,
  ``CS/raw/ms_academic_cs.npz``, ``Physics/raw/ms_academic_phy.npz``: the CSR keys ``attr_*``, ``adj_*`` and
  ``labels`` that PyG's ``parse_npz`` reads, ``max(120, 10 C)`` nodes.
* ``ogbn_arxiv/``: ``RELEASE_v1.txt``, ``raw/{edge,node-feat,num-node-list,num-edge-list,node_year,node-label}
  .csv.gz`` (headerless gzip CSV, directed citation edges) and ``split/time/{train,valid,test}.csv.gz`` (time
  split by ``node_year``: up to 2017 / 2018 / 2019), 400 nodes.

Feature and class counts equal the real datasets' (Cora 1433 features, 7 classes, ...), so models built from
:func:`fsnn.data.dataset_info` fit the fixtures. Features are sparse and weakly class dependent, edges
mostly within a class. Each folder is replaced whole (:func:`fsnn.data.fakes.write_fakes`), with the processed
folders PyG / OGB derived from an earlier fake. The whole set takes about a second.
"""

from __future__ import annotations

import gzip
import pickle
from collections import defaultdict
from functools import partial
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = ["GRAPH_FIXTURE_NAMES", "GRAPH_WRITERS"]

# name -> (folder, file stem, num_classes, num_features)
_PLANETOID = {
    "cora": ("Cora", "cora", 7, 1433),
    "citeseer": ("CiteSeer", "citeseer", 6, 3703),
    "pubmed": ("PubMed", "pubmed", 3, 500),
}
_NPZ = {
    "photo": ("Photo", "amazon_electronics_photo", 8, 745),
    "computers": ("Computers", "amazon_electronics_computers", 10, 767),
    "cs": ("CS", "ms_academic_cs", 15, 6805),
    "physics": ("Physics", "ms_academic_phy", 5, 8415),
}


def _labels(rng: np.random.Generator, n: int, c: int) -> np.ndarray:
    return rng.permutation(np.arange(n) % c)


def _edges(rng: np.random.Generator, y: np.ndarray, degree: float, homophily: float = 0.8) -> np.ndarray:
    """Undirected simple edges as a ``[2, E]`` array (each pair once, ``u < v``)."""
    n = y.size
    m = int(n * degree / 2)
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    same = rng.random(m) < homophily
    for i in np.flatnonzero(same):
        members = np.flatnonzero(y == y[src[i]])
        dst[i] = members[rng.integers(0, members.size)]
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    pairs = np.unique(np.stack([lo, hi])[:, lo != hi], axis=1)
    return pairs


def _features(rng: np.random.Generator, y: np.ndarray, f: int, per_row: int = 6) -> sp.csr_matrix:
    """Sparse binary bag-of-words rows; half of each row's words come from a class-specific vocabulary."""
    n = y.size
    rows, cols = [], []
    for i in range(n):
        own = (y[i] * 7919 + rng.integers(0, 16, per_row // 2)) % f
        rand = rng.integers(0, f, per_row - per_row // 2)
        words = np.unique(np.concatenate([own, rand]))
        rows.append(np.full(words.size, i))
        cols.append(words)
    r, c = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_matrix((np.ones(r.size, dtype=np.float32), (r, c)), shape=(n, f))


def _one_hot(y: np.ndarray, c: int) -> np.ndarray:
    out = np.zeros((y.size, c), dtype=np.int32)
    out[np.arange(y.size), y] = 1
    return out


def _dump(path: Path, obj) -> None:
    with open(path, "wb") as f:
        pickle.dump(obj, f, protocol=2)


def _write_planetoid(root: Path, rng: np.random.Generator, name: str) -> Path:
    folder, stem, c, f = _PLANETOID[name]
    raw = root / folder / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    n_all, n_test = 520, 30  # PyG: train = first len(y) nodes, val = the next 500 (needs n_all >= 2c + 500)
    n = n_all + n_test
    y = _labels(rng, n, c)
    x = _features(rng, y, f)
    test_index = rng.permutation(np.arange(n_all, n))  # file order of the tx/ty rows
    _dump(raw / f"ind.{stem}.x", x[: 2 * c])
    _dump(raw / f"ind.{stem}.y", _one_hot(y[: 2 * c], c))
    _dump(raw / f"ind.{stem}.allx", x[:n_all])
    _dump(raw / f"ind.{stem}.ally", _one_hot(y[:n_all], c))
    _dump(raw / f"ind.{stem}.tx", x[test_index])
    _dump(raw / f"ind.{stem}.ty", _one_hot(y[test_index], c))
    graph = defaultdict(list)
    for u, v in _edges(rng, y, degree=4.0).T:
        graph[int(u)].append(int(v))
        graph[int(v)].append(int(u))
    for i in range(n):
        graph[i]  # every node appears as a key, as in the real files
    _dump(raw / f"ind.{stem}.graph", graph)
    (raw / f"ind.{stem}.test.index").write_text("".join(f"{i}\n" for i in test_index))
    return root / folder


def _write_npz(root: Path, rng: np.random.Generator, name: str) -> Path:
    folder, stem, c, f = _NPZ[name]
    raw = root / folder / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    n = max(120, 10 * c)
    y = _labels(rng, n, c)
    attr = _features(rng, y, f)
    pairs = _edges(rng, y, degree=6.0)
    r = np.concatenate([pairs[0], pairs[1]])
    cc = np.concatenate([pairs[1], pairs[0]])
    adj = sp.csr_matrix((np.ones(r.size, dtype=np.float32), (r, cc)), shape=(n, n))
    np.savez(
        raw / f"{stem}.npz",
        adj_data=adj.data,
        adj_indices=adj.indices,
        adj_indptr=adj.indptr,
        adj_shape=np.array(adj.shape),
        attr_data=attr.data,
        attr_indices=attr.indices,
        attr_indptr=attr.indptr,
        attr_shape=np.array(attr.shape),
        labels=y.astype(np.int64),
    )
    return root / folder


def _csv_gz(path: Path, rows: np.ndarray, fmt: str) -> None:
    rows = np.asarray(rows)
    if rows.ndim == 1:
        rows = rows[:, None]
    text = "\n".join(",".join(fmt % v for v in row) for row in rows) + "\n"
    with gzip.open(path, "wt") as f:
        f.write(text)


def _write_ogbn_arxiv(root: Path, rng: np.random.Generator) -> Path:
    folder = root / "ogbn_arxiv"
    raw = folder / "raw"
    split = folder / "split" / "time"
    raw.mkdir(parents=True, exist_ok=True)
    split.mkdir(parents=True, exist_ok=True)
    n, c, f = 400, 40, 128
    y = _labels(rng, n, c)
    pairs = _edges(rng, y, degree=7.0)
    flip = rng.random(pairs.shape[1]) < 0.5  # citations are directed: one direction per pair
    edges = np.where(flip, pairs[::-1], pairs).T
    mu = rng.standard_normal((c, f))
    x = (0.3 * mu[y] + rng.standard_normal((n, f))).astype(np.float32)
    year = rng.choice([2014, 2015, 2016, 2017, 2018, 2019], size=n, p=[0.15, 0.15, 0.15, 0.15, 0.2, 0.2])
    _csv_gz(raw / "edge.csv.gz", edges, "%d")
    _csv_gz(raw / "node-feat.csv.gz", x, "%.6f")
    _csv_gz(raw / "num-node-list.csv.gz", np.array([n]), "%d")
    _csv_gz(raw / "num-edge-list.csv.gz", np.array([edges.shape[0]]), "%d")
    _csv_gz(raw / "node_year.csv.gz", year, "%d")
    _csv_gz(raw / "node-label.csv.gz", y, "%d")
    _csv_gz(split / "train.csv.gz", np.flatnonzero(year <= 2017), "%d")
    _csv_gz(split / "valid.csv.gz", np.flatnonzero(year == 2018), "%d")
    _csv_gz(split / "test.csv.gz", np.flatnonzero(year == 2019), "%d")
    (folder / "RELEASE_v1.txt").write_text("ogbn-arxiv fixture written by fsnn (format of release 1)\n")
    return folder


#: name -> ``writer(root, rng) -> dataset folder``, for :func:`fsnn.data.fakes.fixtures.write_fixtures`
GRAPH_WRITERS = {
    **{name: partial(_write_planetoid, name=name) for name in _PLANETOID},
    **{name: partial(_write_npz, name=name) for name in _NPZ},
    "ogbn_arxiv": _write_ogbn_arxiv,
}
#: the graphs with a fake, in the order that seeds their writers
GRAPH_FIXTURE_NAMES = tuple(GRAPH_WRITERS)
