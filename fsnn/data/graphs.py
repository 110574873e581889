"""Graphs of the f-SNN experiments (node classification, link prediction), read through PyG / OGB or generated.

>>> from fsnn.data import dataset_info, load_graph
>>> info = dataset_info("cora")  # DatasetInfo(name="cora", kind="graph", num_classes=7, in_channels=1433, ...)
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

Derived features (propagation, positional encodings) are cached by :func:`fsnn.data.graph_features.node_features`
under ``<data_dir>/fsnn_cache/graphs/<name>/`` (:func:`fsnn.data.cache.cache_dir`).

Every graph is returned with ``x`` float32 ``[N, F]``, ``edge_index`` ``[2, E]`` undirected (both directions),
coalesced and without self loops, ``y`` long ``[N]``, and boolean ``train_mask`` / ``val_mask`` / ``test_mask``:
``split="ratio"`` is a per-class stratified, seeded split with ``ratios`` (default 0.7/0.2/0.1, the paper's,
:func:`fsnn.data.splits.stratified_split`); ``split="public"`` is the library's own split (Planetoid's
20-per-class/500/1000, ogbn-arxiv's time split).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import torch

from fsnn.atomic import file_lock
from fsnn.checks import checked, one_of
from fsnn.data.environment import abspath, resolve_download, resolve_verify
from fsnn.data.errors import DatasetDamagedError, dataset_missing
from fsnn.data.graph_checks import check_graph, check_raw_files, damaged, record_processed, use_or_clear_processed
from fsnn.data.info import BuilderArgs, DatasetInfo
from fsnn.data.splits import stratified_split

__all__ = ["PAPER_RATIOS", "build_graph", "make_synthetic_graph", "read_graph", "stratified_masks"]

log = logging.getLogger(__name__)
PAPER_RATIOS = (0.7, 0.2, 0.1)
#: graphs whose library defines a train/val/test split (``split="public"``)
PUBLIC_SPLITS = frozenset({"cora", "citeseer", "pubmed", "ogbn_arxiv"})
SYNTHETIC_DEFAULTS = dict(
    num_nodes=2000, num_classes=5, num_features=64, avg_degree=8.0, homophily=0.8, feature_signal=0.2, graph_seed=0
)

_RAW_FILES = {
    "planetoid": lambda stem: [
        f"ind.{stem}.{ext}" for ext in ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
    ],
    "amazon": lambda stem: [f"amazon_electronics_{stem}.npz"],
    "coauthor": lambda stem: [f"ms_academic_{stem[:3]}.npz"],
}
#: which raw files of a library hold the features, the labels and the edges (named when their values are wrong)
_HOLDS = {
    "planetoid": lambda stem: {
        "x": [f"ind.{stem}.{e}" for e in ("x", "tx", "allx")],
        "y": [f"ind.{stem}.{e}" for e in ("y", "ty", "ally")],
        "edge_index": [f"ind.{stem}.graph"],
    },
    "amazon": lambda stem: dict.fromkeys(("x", "y", "edge_index"), _RAW_FILES["amazon"](stem)),
    "coauthor": lambda stem: dict.fromkeys(("x", "y", "edge_index"), _RAW_FILES["coauthor"](stem)),
    "ogb": lambda stem: {"x": ["node-feat.csv.gz"], "y": ["node-label.csv.gz"], "edge_index": ["edge.csv.gz"]},
}
_URLS = {
    "planetoid": "https://github.com/kimiyoung/planetoid/raw/master/data/",
    "amazon": "https://github.com/shchur/gnn-benchmark/raw/master/data/npz/",
    "coauthor": "https://github.com/shchur/gnn-benchmark/raw/master/data/npz/",
}
OGB_ARXIV_URL = "http://snap.stanford.edu/ogb/data/nodeproppred/arxiv.zip"
OGB_RAW = [
    "edge.csv.gz",
    "node-feat.csv.gz",
    "num-node-list.csv.gz",
    "num-edge-list.csv.gz",
    "node_year.csv.gz",
    "node-label.csv.gz",
]
OGB_SPLIT = ["train.csv.gz", "valid.csv.gz", "test.csv.gz"]


# -- splits -----------------------------------------------------------------------------------


def _check_ratios(ratios) -> tuple[float, float, float]:
    r = tuple(float(v) for v in ratios)
    if len(r) != 3 or min(r) < 0 or r[0] <= 0 or abs(sum(r) - 1.0) > 1e-6:
        raise ValueError(f"ratios must be (train, val, test) >= 0 with train > 0 summing to 1, got {ratios!r}")
    return r


def stratified_masks(y, ratios=PAPER_RATIOS, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Boolean train/val/test masks, disjoint and covering all nodes, stratified per class: validation and test are
    carved from the labels by :func:`fsnn.data.splits.stratified_split` (seeded), training keeps the rest, so every
    class's training and validation counts are within one node of ``ratios`` and every class keeps a training node
    where it has one to spare.
    """
    r = _check_ratios(ratios)
    y = np.asarray(torch.as_tensor(y).reshape(-1).cpu().numpy())
    val, test, _ = stratified_split(y, r[1:], seed)
    split = torch.zeros(y.size, dtype=torch.int8)
    split[torch.from_numpy(val)] = 1
    split[torch.from_numpy(test)] = 2
    return split == 0, split == 1, split == 2


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


def make_synthetic_graph(
    num_nodes: int = 2000,
    num_classes: int = 5,
    num_features: int = 64,
    avg_degree: float = 8.0,
    homophily: float = 0.8,
    feature_signal: float = 0.2,
    seed: int = 0,
):
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


def _remove_empty_dirs(top: Path) -> None:
    """Remove ``top`` if neither it nor any subfolder holds a file (leftover of a failed download attempt);
    a folder with any file in it is left untouched."""
    if not top.is_dir() or any(files for _, _, files in os.walk(top)):
        return
    for dirpath, _, _ in os.walk(top, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(dirpath)


def _load_pyg_files(info: DatasetInfo, root: Path, download: bool):
    from torch_geometric.datasets import Amazon, Coauthor, Planetoid

    stem = info.directory.lower()  # PyG names the dataset as its folder
    folder = root / info.directory
    raw_dir = folder / "raw"
    files = _RAW_FILES[info.library](stem)
    missing = [f for f in files if not (raw_dir / f).is_file()]
    layout = [f"{raw_dir}/{f}" for f in files]
    get_it = (
        f"PyG downloads the files from {_URLS[info.library]} automatically when online "
        f"(load_graph(..., download=True) or FSNN_DATA_DOWNLOAD=1); offline, copy them from a machine "
        f"that has them into {raw_dir}/"
    )
    if missing and not download:
        raise dataset_missing(
            info.name, folder, f"missing {', '.join(missing)} (automatic download disabled)", layout, get_it
        )
    cls = {"planetoid": Planetoid, "amazon": Amazon, "coauthor": Coauthor}[info.library]
    existed = folder.exists()
    try:
        if missing:  # PyG downloads them, then builds its processed cache from them
            dataset = cls(str(root), info.directory)
            record_processed(folder / "processed", [raw_dir / f for f in files])
        else:
            dataset = _checked_dataset(
                info, folder, [raw_dir / f for f in files], lambda: cls(str(root), info.directory)
            )
    except DatasetDamagedError:
        raise
    except Exception as err:
        if missing:
            if not existed:
                _remove_empty_dirs(folder)
            raise dataset_missing(
                info.name,
                folder,
                f"missing {', '.join(missing)} and the automatic download failed",
                layout,
                get_it,
                err,
            ) from err
        raise damaged(
            info,
            raw_dir,
            f"PyG cannot read the raw files ({type(err).__name__}: "
            f"{str(err).strip().splitlines()[0][:200] if str(err).strip() else ''})",
            folder,
        ) from err
    return dataset[0]


def _checked_dataset(info: DatasetInfo, folder: Path, raw: list[Path], make, safe: tuple = ()):
    """``make()``, the library's dataset of ``folder``, read from a processed cache made from the ``raw`` files as
    they are now and holding only tensors and plain data (and the classes ``safe``), else built from the raw files
    once they are checked (:mod:`fsnn.data.graph_checks`), under a lock: parallel runs check and build it once."""
    processed = folder / "processed"
    with file_lock(folder / ".processed.lock"):
        if not use_or_clear_processed(processed, raw, safe):
            try:
                return make()
            except Exception as error:  # noqa: BLE001 - a cache another version of the library wrote
                reason = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
                log.warning(
                    "the processed cache %s cannot be read (%s: %s); it is rebuilt from the raw files",
                    processed,
                    type(error).__name__,
                    reason,
                )
                shutil.rmtree(processed)
        check_raw_files(info, raw, folder)
        dataset = make()
        record_processed(processed, raw)
        return dataset


def _ogb_missing(folder: Path) -> list[str]:
    """What ``folder`` (ogbn-arxiv's) lacks of OGB's layout, relative to it: with all of it there OGB neither asks
    about a newer release nor enters its own download, the two places where it calls ``input()`` / ``exit()``."""
    absent = [p for p in [folder / "RELEASE_v1.txt", *(folder / "raw" / f for f in OGB_RAW)] if not p.is_file()]
    split_dir = folder / "split" / "time"
    has_split = all((split_dir / f).is_file() for f in OGB_SPLIT) or (split_dir / "split_dict.pt").is_file()
    return [str(p.relative_to(folder)) for p in absent] + ([] if has_split else ["split/time/*.csv.gz"])


def _ogb_folder(root: Path) -> Path:
    """ogbn-arxiv's folder under ``root``: OGB prefers an existing ``ogbn_arxiv_pyg``."""
    return root / "ogbn_arxiv_pyg" if (root / "ogbn_arxiv_pyg").is_dir() else root / "ogbn_arxiv"


def _download_ogb_arxiv(root: Path) -> None:
    """``<root>/ogbn_arxiv`` from :data:`OGB_ARXIV_URL`, made as OGB's own download makes it but without its
    "larger than 1 GB, proceed? (y/N)" ``input()`` and ``exit()``: ``download=True`` has decided already."""
    from ogb.utils.url import download_url, extract_zip

    archive = download_url(OGB_ARXIV_URL, str(root))
    extract_zip(archive, str(root))
    os.unlink(archive)
    shutil.move(str(root / "arxiv"), str(root / "ogbn_arxiv"))  # the archive holds the folder 'arxiv'
    missing = _ogb_missing(root / "ogbn_arxiv")
    if missing:  # OGB would start its own download for them, which can prompt
        raise RuntimeError(f"{OGB_ARXIV_URL} lacks {', '.join(missing)}")


def _load_ogb(info: DatasetInfo, root: Path, download: bool):
    """ogbn-arxiv through ``ogb.nodeproppred.PygNodePropPredDataset``, made safe for unattended runs:

    * OGB prompts with ``input()`` when ``<root>/ogbn_arxiv`` exists without ``RELEASE_v1.txt``, and its download
      can call ``input()`` / ``exit()``: the folder is checked first (an incomplete one raises
      :class:`DatasetMissingError`; empty leftovers of a failed download are removed), and a missing one is
      downloaded here, so OGB is only ever constructed on a complete folder and reaches neither.
    * ogb 1.3.6 reads its processed file with a plain ``torch.load``, which torch >= 2.6 refuses
      (``weights_only``): construction runs inside ``torch.serialization.safe_globals`` with the three PyG
      classes that file contains.
    """
    for leftover in (root / "ogbn_arxiv", root / "ogbn_arxiv_pyg"):
        _remove_empty_dirs(leftover)  # an empty folder from a failed download would trigger OGB's input() prompt
    folder = _ogb_folder(root)
    release = folder / "RELEASE_v1.txt"
    raw_needed = [folder / "raw" / f for f in OGB_RAW]
    split_dir = folder / "split" / "time"
    split_needed = [split_dir / f for f in OGB_SPLIT]
    layout = [str(release)] + [str(p) for p in raw_needed] + [str(p) for p in split_needed]
    get_it = (
        f"OGB downloads {OGB_ARXIV_URL} automatically when online (load_graph(..., download=True) or "
        f"FSNN_DATA_DOWNLOAD=1); offline, unzip arxiv.zip elsewhere and copy its folder 'arxiv' to "
        f"{root / 'ogbn_arxiv'} (with RELEASE_v1.txt, raw/, split/time/)"
    )
    missing = _ogb_missing(folder)
    if folder.exists() and missing:
        raise dataset_missing(info.name, folder, f"incomplete: missing {', '.join(missing)}", layout, get_it)
    if not folder.exists() and not download:
        raise dataset_missing(info.name, folder, "folder not found (automatic download disabled)", layout, get_it)

    from ogb.nodeproppred import PygNodePropPredDataset
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import GlobalStorage

    safe = (DataEdgeAttr, DataTensorAttr, GlobalStorage)
    existed = folder.exists()

    def make():
        with torch.serialization.safe_globals(list(safe)), warnings.catch_warnings():
            # pandas >= 3 hands ogb read-only arrays; torch.from_numpy then warns once (harmless: ogb copies)
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            dataset = PygNodePropPredDataset(name="ogbn-arxiv", root=str(root))
            return dataset[0], dataset.get_idx_split()

    try:
        if not existed:
            _download_ogb_arxiv(root)
        data, split = _checked_dataset(info, folder, raw_needed, make, safe)
    except DatasetDamagedError:
        raise
    except (Exception, SystemExit) as err:
        if not existed:
            _remove_empty_dirs(folder)
            raise dataset_missing(
                info.name, folder, "folder not found and the automatic download failed", layout, get_it, err
            ) from err
        raise dataset_missing(
            info.name, folder, "the files are present but could not be read", layout, get_it, err
        ) from err
    n = int(data.num_nodes)
    data.train_mask = _index_mask(n, split["train"])
    data.val_mask = _index_mask(n, split["valid"])
    data.test_mask = _index_mask(n, split["test"])
    return data


def _load_karate():
    from torch_geometric.datasets import KarateClub

    return KarateClub()[0]


def _sources(info: DatasetInfo, root: Path) -> dict[str, list[Path]]:
    """The raw files that hold the features, labels and edges of ``info`` under ``root`` (none for a graph built in
    code: ``karate``, ``synthetic``, or one registered with a builder of its own)."""
    holds = _HOLDS.get(info.library)
    if holds is None or info.builder is not read_graph:
        return {}
    raw_dir = (_ogb_folder(root) if info.library == "ogb" else root / info.directory) / "raw"
    return {key: [raw_dir / name for name in names] for key, names in holds(info.directory.lower()).items()}


def read_graph(args: BuilderArgs, **options):
    """The graph ``info`` as its library gives it (the ``builder`` of every graph in :data:`fsnn.data.DATASETS`).
    ``options`` are for ``synthetic`` only (:data:`SYNTHETIC_DEFAULTS`).

    Called by :func:`build_graph` (through :func:`fsnn.data.load_graph`), which makes the result uniform and adds the
    split's masks; ``cora``, ``citeseer``, ``pubmed``, ``photo``, ``computers``, ``cs``, ``physics`` and
    ``ogbn_arxiv`` are read from their files, ``karate`` and ``synthetic`` need none.

    Args:
        args: the :class:`fsnn.data.info.BuilderArgs` of a graph: its ``info`` (``kind="graph"``, whose ``library``
            says what reads it), ``data_dir`` (the layout of each graph's files is in this module's docstring) and
            ``download`` (whether PyG / OGB may download missing files; ignored by ``karate`` and ``synthetic``).
        **options: ``synthetic`` only (any other graph refuses options with ``TypeError``), each optional:
            ``num_nodes`` (an integer >= 2; default ``2000``), ``num_classes`` (an integer >= 1; default ``5``),
            ``num_features`` (an integer >= 1; default ``64``), ``avg_degree`` (the mean degree, a number >= 0;
            default ``8.0``), ``homophily`` (the probability that an edge's target is drawn from its source's
            class rather than uniformly, in ``[0, 1]``; default ``0.8``), ``feature_signal`` (the scale of the
            class means added to ``N(0, 1)`` features, a number, 0 for features without signal; default ``0.2``)
            and ``graph_seed`` (the seed of the graph itself, an integer >= 0, independent of the split's seed;
            default ``0``); see :func:`make_synthetic_graph`.
    """
    info = args.info
    if info.library == "synthetic":
        opts = _synthetic_options(options)
        return make_synthetic_graph(
            opts["num_nodes"],
            opts["num_classes"],
            opts["num_features"],
            opts["avg_degree"],
            opts["homophily"],
            opts["feature_signal"],
            seed=opts["graph_seed"],
        )
    if options:
        raise TypeError(f"graph dataset {info.name!r} takes no options, got {sorted(options)}")
    if info.library == "ogb":
        return _load_ogb(info, args.data_dir, args.download)
    if info.library == "pyg":
        return _load_karate()
    return _load_pyg_files(info, args.data_dir, args.download)


@checked
def build_graph(
    info: DatasetInfo,
    data_dir: str | Path,
    split: one_of("ratio", "public") = "ratio",
    seed: int = 0,
    ratios=PAPER_RATIOS,
    *,
    download: bool | None = None,
    **options,
):
    """Graph ``info`` read by its ``builder`` and made uniform: ``x`` float32, ``edge_index`` undirected, coalesced
    and without self loops, ``y`` long, and the ``split``'s masks (see :func:`fsnn.data.load_graph`)."""
    from torch_geometric.data import Data

    if split == "public" and info.name not in PUBLIC_SPLITS:
        raise ValueError(f"graph dataset {info.name!r} has no public split; use split='ratio'")
    ratios = _check_ratios(ratios)
    raw = info.builder(
        BuilderArgs(info=info, data_dir=abspath(data_dir), seed=seed, download=resolve_download(download)), **options
    )
    n = int(raw.num_nodes)
    x = torch.as_tensor(raw.x).to(torch.float32).contiguous()
    y = torch.as_tensor(raw.y).reshape(-1).to(torch.long)
    verify = resolve_verify(None, abspath(data_dir) / info.directory)
    check_graph(info, x, y, torch.as_tensor(raw.edge_index), n, _sources(info, abspath(data_dir)), verify)
    edge_index = _clean_edges(raw.edge_index, n)
    if split == "public":
        masks = (raw.train_mask.clone(), raw.val_mask.clone(), raw.test_mask.clone())
    else:
        masks = stratified_masks(y, ratios, seed)
    return Data(
        x=x, edge_index=edge_index, y=y, train_mask=masks[0], val_mask=masks[1], test_mask=masks[2], num_nodes=n
    )


def _info(name, num_classes, num_features, library, directory="", num_nodes=None) -> DatasetInfo:
    """The registry entry of the graph ``name``: ``library`` picks the loader of :func:`read_graph`, ``T`` is the
    paper's Poisson steps."""
    return DatasetInfo(
        name=name,
        kind="graph",
        num_classes=num_classes,
        in_channels=num_features,
        size=None,
        default_T=100,
        library=library,
        directory=directory,
        builder=read_graph,
        num_nodes=num_nodes,
    )


#: the graphs this module reads, registered by :mod:`fsnn.data.registry`, with their published node counts
INFOS = (
    _info("cora", 7, 1433, "planetoid", "Cora", 2_708),
    _info("citeseer", 6, 3703, "planetoid", "CiteSeer", 3_327),
    _info("pubmed", 3, 500, "planetoid", "PubMed", 19_717),
    _info("photo", 8, 745, "amazon", "Photo", 7_650),
    _info("computers", 10, 767, "amazon", "Computers", 13_752),
    _info("cs", 15, 6805, "coauthor", "CS", 18_333),
    _info("physics", 5, 8415, "coauthor", "Physics", 34_493),
    _info("ogbn_arxiv", 40, 128, "ogb", "ogbn_arxiv", 169_343),
    _info("karate", 4, 34, "pyg"),
    _info("synthetic", SYNTHETIC_DEFAULTS["num_classes"], SYNTHETIC_DEFAULTS["num_features"], "synthetic"),
)
