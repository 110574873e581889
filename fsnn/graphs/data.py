"""Node-classification graphs of the f-SNN experiments, by name: ``load_graph(name, data_dir, split, seed)``.

>>> from fsnn.graphs.data import GRAPH_DATASETS, graph_dataset_info, load_graph
>>> info = graph_dataset_info("cora")        # GraphDatasetInfo(name="cora", num_classes=7, num_features=1433, ...)
>>> data = load_graph("cora", data_dir="./data", split="ratio", seed=0)
>>> data.x, data.edge_index, data.y, data.train_mask, data.val_mask, data.test_mask

On-disk layouts under ``data_dir`` (the libraries' own; PyG / OGB download them automatically when online):

* ``cora`` / ``citeseer`` / ``pubmed``: ``Cora/raw/ind.cora.{x,tx,allx,y,ty,ally,graph,test.index}`` (likewise
  ``CiteSeer/raw/ind.citeseer.*``, ``PubMed/raw/ind.pubmed.*``), PyG's ``Planetoid``; processed by PyG into
  ``<Name>/processed/``.
* ``photo`` / ``computers``: ``Photo/raw/amazon_electronics_photo.npz``,
  ``Computers/raw/amazon_electronics_computers.npz`` (PyG ``Amazon``).
* ``cs`` / ``physics``: ``CS/raw/ms_academic_cs.npz``, ``Physics/raw/ms_academic_phy.npz`` (PyG ``Coauthor``).
* ``ogbn_arxiv``: ``ogbn_arxiv/{RELEASE_v1.txt, raw/*.csv.gz, split/time/{train,valid,test}.csv.gz}`` (OGB
  ``PygNodePropPredDataset``; processed into ``ogbn_arxiv/processed/geometric_data_processed.pt``).
* ``karate`` (PyG ``KarateClub``, built in) and ``synthetic`` (generated in code) need no files.

Derived features (propagation, positional encodings) are cached by :func:`fsnn.graphs.features.node_features`
under ``graph_cache_dir(data_dir, name)`` = ``<data_dir>/fsnn_cache/graphs/<name>/``.

Every graph is returned with ``x`` float32 ``[N, F]``, ``edge_index`` ``[2, E]`` undirected (both directions),
coalesced and without self loops, ``y`` long ``[N]``, and boolean ``train_mask`` / ``val_mask`` / ``test_mask``:
``split="ratio"`` is a per-class stratified, seeded split with ``ratios`` (default 0.7/0.2/0.1, the paper's);
``split="public"`` is the library's own split (Planetoid's 20-per-class/500/1000, ogbn-arxiv's time split).
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from fsnn.data import DatasetMissingError
from fsnn.data.common import abspath, missing_message, resolve_download

__all__ = [
    "GRAPH_DATASETS",
    "GraphDatasetInfo",
    "graph_cache_dir",
    "graph_dataset_info",
    "load_graph",
    "make_synthetic_graph",
    "stratified_masks",
]

PAPER_RATIOS = (0.7, 0.2, 0.1)


@dataclass(frozen=True)
class GraphDatasetInfo:
    """What a model needs before loading a graph. ``library``: ``planetoid``, ``amazon``, ``coauthor``, ``ogb``,
    ``pyg`` (KarateClub) or ``synthetic``; ``directory``: its folder under ``data_dir`` (``""``: no files);
    ``num_nodes``: nodes of the real dataset; ``public_split``: whether ``split="public"`` exists."""

    name: str
    num_classes: int
    num_features: int
    library: str
    directory: str = ""
    num_nodes: int = 0
    public_split: bool = False
    pyg_name: str = ""


SYNTHETIC_DEFAULTS = dict(num_nodes=2000, num_classes=5, num_features=64, avg_degree=8.0, homophily=0.8,
                          feature_signal=0.2, graph_seed=0)

GRAPH_DATASETS: dict[str, GraphDatasetInfo] = {
    info.name: info
    for info in (
        GraphDatasetInfo("cora", 7, 1433, "planetoid", "Cora", 2708, True, "Cora"),
        GraphDatasetInfo("citeseer", 6, 3703, "planetoid", "CiteSeer", 3327, True, "CiteSeer"),
        GraphDatasetInfo("pubmed", 3, 500, "planetoid", "PubMed", 19717, True, "PubMed"),
        GraphDatasetInfo("photo", 8, 745, "amazon", "Photo", 7650, False, "Photo"),
        GraphDatasetInfo("computers", 10, 767, "amazon", "Computers", 13752, False, "Computers"),
        GraphDatasetInfo("cs", 15, 6805, "coauthor", "CS", 18333, False, "CS"),
        GraphDatasetInfo("physics", 5, 8415, "coauthor", "Physics", 34493, False, "Physics"),
        GraphDatasetInfo("ogbn_arxiv", 40, 128, "ogb", "ogbn_arxiv", 169343, True, "ogbn-arxiv"),
        GraphDatasetInfo("karate", 4, 34, "pyg", "", 34, False, "KarateClub"),
        GraphDatasetInfo("synthetic", SYNTHETIC_DEFAULTS["num_classes"], SYNTHETIC_DEFAULTS["num_features"],
                         "synthetic", "", SYNTHETIC_DEFAULTS["num_nodes"], False, ""),
    )
}

_RAW_FILES = {
    "planetoid": lambda stem: [f"ind.{stem}.{ext}" for ext in ("x", "tx", "allx", "y", "ty", "ally", "graph",
                                                                "test.index")],
    "amazon": lambda stem: [f"amazon_electronics_{stem}.npz"],
    "coauthor": lambda stem: [f"ms_academic_{stem[:3]}.npz"],
}
_URLS = {
    "planetoid": "https://github.com/kimiyoung/planetoid/raw/master/data/",
    "amazon": "https://github.com/shchur/gnn-benchmark/raw/master/data/npz/",
    "coauthor": "https://github.com/shchur/gnn-benchmark/raw/master/data/npz/",
}
OGB_ARXIV_URL = "http://snap.stanford.edu/ogb/data/nodeproppred/arxiv.zip"
OGB_RAW = ["edge.csv.gz", "node-feat.csv.gz", "num-node-list.csv.gz", "num-edge-list.csv.gz",
           "node_year.csv.gz", "node-label.csv.gz"]
OGB_SPLIT = ["train.csv.gz", "valid.csv.gz", "test.csv.gz"]


def _canonical(name: str) -> str:
    key = str(name).strip().lower().replace("-", "_")
    if key not in GRAPH_DATASETS:
        raise KeyError(f"unknown graph dataset {name!r}; available: {', '.join(GRAPH_DATASETS)}")
    return key


def graph_dataset_info(name: str, **options) -> GraphDatasetInfo:
    """The :class:`GraphDatasetInfo` of ``name`` (``ogbn-arxiv`` and ``ogbn_arxiv`` both work). For
    ``synthetic``, pass the same size options as to :func:`load_graph` (``num_classes``, ``num_features``,
    ``num_nodes``) to get matching numbers."""
    info = GRAPH_DATASETS[_canonical(name)]
    if info.library == "synthetic":
        opts = _synthetic_options(options)
        return replace(info, num_classes=opts["num_classes"], num_features=opts["num_features"],
                       num_nodes=opts["num_nodes"])
    if options:
        raise TypeError(f"graph dataset {info.name!r} takes no options, got {sorted(options)}")
    return info


def graph_cache_dir(data_dir: str | Path, name: str) -> Path:
    """``<data_dir>/fsnn_cache/graphs/<name>``: where derived features of ``name`` are cached."""
    return abspath(data_dir) / "fsnn_cache" / "graphs" / _canonical(name)


# -- splits -----------------------------------------------------------------------------------


def _check_ratios(ratios) -> tuple[float, float, float]:
    r = tuple(float(v) for v in ratios)
    if len(r) != 3 or min(r) < 0 or r[0] <= 0 or abs(sum(r) - 1.0) > 1e-6:
        raise ValueError(f"ratios must be (train, val, test) >= 0 with train > 0 summing to 1, got {ratios!r}")
    return r


def stratified_masks(y, ratios=PAPER_RATIOS, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Boolean train/val/test masks, disjoint and covering all nodes, stratified per class.

    Each class's ``n_c`` members are shuffled by ``numpy.random.default_rng(seed)`` (classes in ascending
    order); the first ``round(r_train * n_c)`` (at least 1) go to train, up to ``round((r_train + r_val) * n_c)``
    to validation, the rest to test, so every class's proportions are within one node of ``ratios``.
    """
    r = _check_ratios(ratios)
    y = np.asarray(torch.as_tensor(y).reshape(-1).cpu().numpy())
    n = y.size
    rng = np.random.default_rng(seed)
    split = np.full(n, 2, dtype=np.int8)
    for c in np.unique(y):
        members = rng.permutation(np.flatnonzero(y == c))
        n_c = members.size
        b1 = max(1, math.floor(r[0] * n_c + 0.5))
        b2 = max(b1, min(n_c, math.floor((r[0] + r[1]) * n_c + 0.5)))
        split[members[:b1]] = 0
        split[members[b1:b2]] = 1
    split_t = torch.from_numpy(split)
    return split_t == 0, split_t == 1, split_t == 2


def _index_mask(n: int, idx) -> torch.Tensor:
    mask = torch.zeros(n, dtype=torch.bool)
    mask[torch.as_tensor(idx, dtype=torch.long).reshape(-1)] = True
    return mask


# -- synthetic graph --------------------------------------------------------------------------


def _synthetic_options(options: dict) -> dict:
    unknown = sorted(set(options) - set(SYNTHETIC_DEFAULTS))
    if unknown:
        raise TypeError(f"unknown synthetic-graph options {unknown}; available: {sorted(SYNTHETIC_DEFAULTS)}")
    opts = {**SYNTHETIC_DEFAULTS, **options}
    for key in ("num_nodes", "num_classes", "num_features", "graph_seed"):
        opts[key] = int(opts[key])
    if opts["num_nodes"] < 2 or opts["num_classes"] < 1 or opts["num_features"] < 1:
        raise ValueError(f"synthetic graph needs num_nodes >= 2, num_classes >= 1, num_features >= 1: {opts}")
    if not 0.0 <= float(opts["homophily"]) <= 1.0 or float(opts["avg_degree"]) < 0:
        raise ValueError(f"homophily must be in [0, 1] and avg_degree >= 0: {opts}")
    return opts


def make_synthetic_graph(num_nodes: int = 2000, num_classes: int = 5, num_features: int = 64,
                         avg_degree: float = 8.0, homophily: float = 0.8, feature_signal: float = 0.2,
                         seed: int = 0):
    """A seeded stochastic-block-model-like graph with class-dependent Gaussian features, built sparsely in
    O(N * (degree + features)) time and memory (ogbn-arxiv size in about a second).

    Labels are balanced (``i mod C``, shuffled). ``round(N * avg_degree / 2)`` endpoint pairs are drawn: a
    uniform source, and a target from the source's class with probability ``homophily``, else uniform;
    self loops and duplicates are removed and the result is made undirected. Features:
    ``feature_signal * mu[y] + N(0, 1)`` with class means ``mu ~ N(0, I_F)``. Returns a ``Data(x, edge_index, y)``.
    """
    from torch_geometric.data import Data

    rng = np.random.default_rng(seed)
    n, c, f = int(num_nodes), int(num_classes), int(num_features)
    y = rng.permutation(np.arange(n) % c)
    order = np.argsort(y, kind="stable")  # nodes grouped by class
    counts = np.bincount(y, minlength=c)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    m = int(round(n * float(avg_degree) / 2))
    src = rng.integers(0, n, size=m)
    same = rng.random(m) < float(homophily)
    dst = rng.integers(0, n, size=m)
    cs = y[src[same]]
    dst[same] = order[offsets[cs] + (rng.random(cs.size) * counts[cs]).astype(np.int64)]
    ei = _clean_edges(torch.from_numpy(np.stack([src, dst])), n)
    mu = rng.standard_normal((c, f)).astype(np.float32)
    x = float(feature_signal) * mu[y] + rng.standard_normal((n, f), dtype=np.float32)
    return Data(x=torch.from_numpy(x), edge_index=ei, y=torch.from_numpy(y.astype(np.int64)), num_nodes=n)


# -- library loaders --------------------------------------------------------------------------


def _clean_edges(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    from torch_geometric.utils import remove_self_loops, to_undirected

    ei, _ = remove_self_loops(edge_index.to(torch.long))
    return to_undirected(ei, num_nodes=num_nodes)


def _missing(info: GraphDatasetInfo, directory: Path, problem: str, layout: list[str], get_it: str,
             cause: BaseException | None = None) -> DatasetMissingError:
    if cause is not None:
        problem = f"{problem} ({type(cause).__name__}: {cause})"
    return DatasetMissingError(missing_message(info.name, directory, problem, layout, get_it),
                               dataset=info.name, directory=directory)


def _remove_empty_dirs(top: Path) -> None:
    """Remove ``top`` if neither it nor any subfolder holds a file (leftover of a failed download attempt);
    a folder with any file in it is left untouched."""
    if not top.is_dir() or any(files for _, _, files in os.walk(top)):
        return
    for dirpath, _, _ in os.walk(top, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(dirpath)


def _load_pyg_files(info: GraphDatasetInfo, root: Path, download: bool):
    from torch_geometric.datasets import Amazon, Coauthor, Planetoid

    stem = info.pyg_name.lower()
    folder = root / info.directory
    raw_dir = folder / "raw"
    files = _RAW_FILES[info.library](stem)
    missing = [f for f in files if not (raw_dir / f).is_file()]
    layout = [f"{raw_dir}/{f}" for f in files]
    get_it = (f"PyG downloads the files from {_URLS[info.library]} automatically when online "
              f"(load_graph(..., download=True) or FSNN_DATA_DOWNLOAD=1); offline, copy them from a machine "
              f"that has them into {raw_dir}/")
    if missing and not download:
        raise _missing(info, folder, f"missing {', '.join(missing)} (automatic download disabled)", layout, get_it)
    cls = {"planetoid": Planetoid, "amazon": Amazon, "coauthor": Coauthor}[info.library]
    existed = folder.exists()
    try:
        dataset = cls(str(root), info.pyg_name)
    except Exception as err:
        if missing:
            if not existed:
                _remove_empty_dirs(folder)
            raise _missing(info, folder, f"missing {', '.join(missing)} and the automatic download failed",
                           layout, get_it, err) from err
        raise _missing(info, folder, "the raw files are present but could not be read (partial download or "
                       "wrong format?)", layout, get_it, err) from err
    return dataset[0]


class _OgbRefused(RuntimeError):
    pass


def _refuse(*args, **kwargs):
    raise _OgbRefused(f"ogb asked for interactive input or tried to exit: {args}")


def _load_ogb(info: GraphDatasetInfo, root: Path, download: bool):
    """ogbn-arxiv through ``ogb.nodeproppred.PygNodePropPredDataset``, made safe for unattended runs:

    * OGB prompts with ``input()`` when ``<root>/ogbn_arxiv`` exists without ``RELEASE_v1.txt``, and its download
      path can call ``input()`` / ``exit()``: the folder is checked first (an incomplete one raises
      :class:`DatasetMissingError`; empty leftovers of a failed download are removed), and ``input`` / ``exit``
      inside the ogb modules are replaced by a function that raises while the dataset is constructed.
    * ogb 1.3.6 reads its processed file with a plain ``torch.load``, which torch >= 2.6 refuses
      (``weights_only``): construction runs inside ``torch.serialization.safe_globals`` with the three PyG
      classes that file contains.
    """
    from unittest import mock

    for leftover in (root / "ogbn_arxiv", root / "ogbn_arxiv_pyg"):
        _remove_empty_dirs(leftover)  # an empty folder from a failed download would trigger OGB's input() prompt
    folder = root / "ogbn_arxiv"
    if (root / "ogbn_arxiv_pyg").is_dir():  # OGB prefers an existing *_pyg folder
        folder = root / "ogbn_arxiv_pyg"
    release = folder / "RELEASE_v1.txt"
    raw_needed = [folder / "raw" / f for f in OGB_RAW]
    split_dir = folder / "split" / "time"
    split_needed = [split_dir / f for f in OGB_SPLIT]
    layout = [str(release)] + [str(p) for p in raw_needed] + [str(p) for p in split_needed]
    get_it = (f"OGB downloads {OGB_ARXIV_URL} automatically when online (load_graph(..., download=True) or "
              f"FSNN_DATA_DOWNLOAD=1); offline, unzip arxiv.zip elsewhere and copy its folder 'arxiv' to "
              f"{root / 'ogbn_arxiv'} (with RELEASE_v1.txt, raw/, split/time/)")
    absent = [p for p in [release, *raw_needed] if not p.is_file()]
    has_split = all(p.is_file() for p in split_needed) or (split_dir / "split_dict.pt").is_file()
    if folder.exists() and (absent or not has_split):
        what = [str(p.relative_to(folder)) for p in absent] + ([] if has_split else ["split/time/*.csv.gz"])
        raise _missing(info, folder, f"incomplete: missing {', '.join(what)}", layout, get_it)
    if not folder.exists() and not download:
        raise _missing(info, folder, "folder not found (automatic download disabled)", layout, get_it)

    import ogb.nodeproppred.dataset_pyg as ogb_dataset
    import ogb.utils.url as ogb_url
    from ogb.nodeproppred import PygNodePropPredDataset
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import GlobalStorage

    safe = [DataEdgeAttr, DataTensorAttr, GlobalStorage]
    existed = folder.exists()
    patches = [mock.patch.object(ogb_dataset, "input", _refuse, create=True),
               mock.patch.object(ogb_dataset, "exit", _refuse, create=True),
               mock.patch.object(ogb_url, "input", _refuse, create=True)]
    try:
        with contextlib.ExitStack() as stack:
            for p in patches:
                stack.enter_context(p)
            stack.enter_context(torch.serialization.safe_globals(safe))
            stack.enter_context(warnings.catch_warnings())
            # pandas >= 3 hands ogb read-only arrays; torch.from_numpy then warns once (harmless: ogb copies)
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            dataset = PygNodePropPredDataset(name="ogbn-arxiv", root=str(root))
            data = dataset[0]
            split = dataset.get_idx_split()
    except (Exception, SystemExit) as err:
        if not existed:
            _remove_empty_dirs(folder)
            raise _missing(info, folder, "folder not found and the automatic download failed", layout, get_it,
                           err) from err
        raise _missing(info, folder, "the files are present but could not be read", layout, get_it, err) from err
    n = int(data.num_nodes)
    data.train_mask = _index_mask(n, split["train"])
    data.val_mask = _index_mask(n, split["valid"])
    data.test_mask = _index_mask(n, split["test"])
    return data


def _load_karate():
    from torch_geometric.datasets import KarateClub

    return KarateClub()[0]


def load_graph(name: str, data_dir: str | Path = "./data", split: str = "ratio", seed: int = 0,
               ratios=PAPER_RATIOS, *, download: bool | None = None, **options):
    """Load ``name`` as a ``torch_geometric.data.Data`` with ``x`` (float32 ``[N, F]``), ``edge_index``
    (``[2, E]`` undirected, coalesced, no self loops), ``y`` (long ``[N]``) and boolean
    ``train_mask``/``val_mask``/``test_mask``.

    ``split="ratio"``: per-class stratified seeded split (:func:`stratified_masks`, ``ratios`` = train/val/test,
    default 0.7/0.2/0.1); ``split="public"``: Planetoid's public split or ogbn-arxiv's time split (other
    datasets have none: ValueError). ``download``: try the library's automatic download when files are missing
    (default ``$FSNN_DATA_DOWNLOAD``, on); missing data raises :class:`fsnn.data.DatasetMissingError` naming the
    dataset, the directory and the files expected. ``options``: only for ``synthetic``
    (``num_nodes``, ``num_classes``, ``num_features``, ``avg_degree``, ``homophily``, ``feature_signal``,
    ``graph_seed``; the graph depends on ``graph_seed``, the split on ``seed``).
    """
    from torch_geometric.data import Data

    info = graph_dataset_info(name, **options)
    if split not in ("ratio", "public"):
        raise ValueError(f"split must be 'ratio' or 'public', got {split!r}")
    if split == "public" and not info.public_split:
        raise ValueError(f"graph dataset {info.name!r} has no public split; use split='ratio'")
    ratios = _check_ratios(ratios)
    root = abspath(data_dir)
    download = resolve_download(download)
    if info.library in ("planetoid", "amazon", "coauthor"):
        raw = _load_pyg_files(info, root, download)
    elif info.library == "ogb":
        raw = _load_ogb(info, root, download)
    elif info.library == "pyg":
        raw = _load_karate()
    else:
        opts = _synthetic_options(options)
        raw = make_synthetic_graph(opts["num_nodes"], opts["num_classes"], opts["num_features"],
                                   opts["avg_degree"], opts["homophily"], opts["feature_signal"],
                                   seed=opts["graph_seed"])
    n = int(raw.num_nodes)
    x = torch.as_tensor(raw.x).to(torch.float32).contiguous()
    y = torch.as_tensor(raw.y).reshape(-1).to(torch.long)
    edge_index = _clean_edges(raw.edge_index, n)
    if split == "public":
        masks = (raw.train_mask.clone(), raw.val_mask.clone(), raw.test_mask.clone())
    else:
        masks = stratified_masks(y, ratios, seed)
    return Data(x=x, edge_index=edge_index, y=y, train_mask=masks[0], val_mask=masks[1], test_mask=masks[2],
                num_nodes=n)
