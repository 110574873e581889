"""The graph datasets' files and what is read from them, checked before a run trusts them:

* raw files are read without running code (Planetoid's are pickles: :func:`safe_unpickle` takes only the numpy,
  scipy and list types they hold) and checked whole and consistent before PyG / OGB process them
  (:func:`check_raw_files`), so that a truncated or damaged file is named, not a traceback from deep inside PyG;
* a processed cache (``<Name>/processed/``, PyG's and OGB's) is used only when every file in it loads as tensors and
  plain data (PyG itself falls back to ``torch.load(weights_only=False)``, which runs whatever pickle it is given) and
  it was made from the raw files as they are now (its record, :data:`PROCESSED_RECORD`); otherwise it is rebuilt
  (:func:`processed_problem`), with a warning saying why;
* the graph read is checked against what the registry knows of the dataset and against itself
  (:func:`check_graph`): finite features, the dataset's feature and class counts (and, with
  ``FSNN_DATA_VERIFY`` on, its published node count), labels and edges that name existing classes and nodes.

Every refusal is a :class:`fsnn.data.errors.DatasetDamagedError`: one line naming the file (or the quantity) and what
to do.
"""

from __future__ import annotations

import gzip
import json
import logging
import pickle
import shutil
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np
import torch

from fsnn.atomic import file_digest, write_text_atomic
from fsnn.data.errors import DatasetDamagedError
from fsnn.data.info import DatasetInfo

log = logging.getLogger(__name__)

#: beside a processed cache: the SHA-256 of each raw file it was made from, and the size and modification time of
#: each of its own files as they were written
PROCESSED_RECORD = "fsnn_made_from.json"
#: the only globals a Planetoid raw file may name: sparse features, one-hot label arrays, the adjacency lists
PLANETOID_GLOBALS = frozenset(
    {
        ("numpy", "dtype"),
        ("numpy", "ndarray"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("scipy.sparse.csr", "csr_matrix"),
        ("scipy.sparse._csr", "csr_matrix"),
        ("collections", "defaultdict"),
        ("builtins", "list"),
        ("builtins", "dict"),
        ("__builtin__", "list"),
        ("__builtin__", "dict"),
        ("_codecs", "encode"),  # Python 2's names, as pickled
    }
)


def damaged(info: DatasetInfo, path: Path | str, problem: str, folder: Path | None = None) -> DatasetDamagedError:
    """The error of a dataset file that does not hold what it should, saying how to get the files again."""
    where = folder if folder is not None else Path(path).parent
    return DatasetDamagedError(
        f"dataset {info.name!r}: {path}: {problem}; replace the dataset's files (delete {where} and download them "
        "again, FSNN_DATA_DOWNLOAD=1, or copy them from a machine that has them)",
        dataset=info.name,
        path=path,
    )


# -- raw files ----------------------------------------------------------------------------------


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) not in PLANETOID_GLOBALS:
            raise pickle.UnpicklingError(
                f"it names {module}.{name}, which a Planetoid file never holds (a pickle that could run code)"
            )
        with warnings.catch_warnings():  # numpy.core and scipy.sparse.csr: the old names these files were written with
            warnings.simplefilter("ignore", DeprecationWarning)
            return super().find_class(module, name)


def safe_unpickle(path: Path):
    """The object pickled in ``path``, read as PyG reads Planetoid's files (latin-1) but taking only
    :data:`PLANETOID_GLOBALS`: a pickle naming anything else is refused before it can run."""
    with open(path, "rb") as handle:
        return _SafeUnpickler(handle, encoding="latin1").load()


def _reason(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text[:200]}" if text else type(error).__name__


def _read_raw(path: Path):
    """The content of one raw file, read whole by its format (an error names what is wrong with it)."""
    if path.suffix == ".npz":
        arrays = {}
        with np.load(path, allow_pickle=False) as archive:
            for key in archive.files:
                try:
                    arrays[key] = archive[key]
                except ValueError as error:
                    if "allow_pickle" not in str(error):
                        raise
                    # an array of Python objects (node names, texts): not read here, nor by PyG (no pickles)
        return arrays
    if path.suffix == ".gz":
        with gzip.open(path) as handle:
            while handle.read(1 << 22):
                pass
        return None
    if path.name.endswith(".test.index"):
        return np.array([int(word) for word in path.read_text().split()], dtype=np.int64)
    return safe_unpickle(path)


def check_raw_files(info: DatasetInfo, paths: list[Path], folder: Path) -> None:
    """Each raw file of ``info`` (``paths``) read whole, and Planetoid's consistent with each other (rows of
    features, labels and test indices), before PyG / OGB process them: :class:`DatasetDamagedError` naming the first
    file that is not what it should be."""
    contents = {}
    for path in paths:
        try:
            contents[path.name] = _read_raw(path)
        except (
            OSError,
            EOFError,
            ValueError,
            pickle.UnpicklingError,
            zipfile.BadZipFile,
            zlib.error,
            AttributeError,
            ImportError,
            TypeError,
            IndexError,
            KeyError,
        ) as error:
            raise damaged(info, path, f"cannot be read ({_reason(error)})", folder) from None
    if info.library == "planetoid":  # ind.<name>.<part>: x, tx, allx, y, ty, ally, graph, test.index
        path = {p.name.split(".", 2)[-1]: p for p in paths}
        _check_planetoid(info, {part: contents[p.name] for part, p in path.items()}, path, folder)


def _check_planetoid(info: DatasetInfo, parts: dict, path: dict[str, Path], folder: Path) -> None:
    """Planetoid's eight files (``parts`` and ``path`` by part) agree: ``x``/``y``, ``allx``/``ally``, ``tx``/``ty``
    and ``test.index`` have as many rows as each other, every feature matrix the same columns, every label matrix the
    same classes, the test indices are distinct and the adjacency lists are of node indices."""

    def rows(key):
        return np.shape(parts[key])[0] if np.ndim(parts[key]) else 0

    def cols(key):
        return np.shape(parts[key])[1] if np.ndim(parts[key]) == 2 else None

    for features, labels in (("x", "y"), ("allx", "ally"), ("tx", "ty")):
        if rows(features) != rows(labels):
            raise damaged(
                info,
                path[labels],
                f"holds {rows(labels)} rows where {path[features].name} holds {rows(features)}",
                folder,
            )
    for key in ("x", "tx", "allx", "y", "ty", "ally"):
        if cols(key) is None:
            raise damaged(info, path[key], f"holds an array of shape {np.shape(parts[key])}, not a matrix", folder)
    for key, ref in (("tx", "x"), ("allx", "x"), ("ty", "y"), ("ally", "y")):
        if cols(key) != cols(ref):
            raise damaged(info, path[key], f"has {cols(key)} columns where {path[ref].name} has {cols(ref)}", folder)
    index = parts["test.index"]
    if len(index) != rows("tx") or len(np.unique(index)) != len(index) or (len(index) and index.min() < 0):
        raise damaged(
            info,
            path["test.index"],
            f"lists {len(index)} test nodes ({len(np.unique(index))} distinct) "
            f"where {path['tx'].name} holds {rows('tx')}",
            folder,
        )
    graph = parts["graph"]
    if not isinstance(graph, dict) or not all(
        isinstance(node, int) and node >= 0 and isinstance(nbrs, list) and all(isinstance(v, int) for v in nbrs)
        for node, nbrs in graph.items()
    ):
        raise damaged(info, path["graph"], "is not adjacency lists of node indices", folder)


# -- processed caches ---------------------------------------------------------------------------


def _stamps(files: list[Path]) -> dict:
    return {p.name: [p.stat().st_size, p.stat().st_mtime_ns] for p in files}


def _cache_files(processed: Path) -> list[Path]:
    return sorted(p for p in processed.iterdir() if p.is_file() and p.name != PROCESSED_RECORD)


def processed_problem(processed: Path, raw: list[Path], safe: tuple = ()) -> str | None:
    """Why the processed cache in ``processed`` cannot be used as it is (``None``: it can, or there is none): a file
    that does not load as tensors and plain data (``torch.load(weights_only=True)`` allowing the classes ``safe``
    besides those PyG allows, without reading its tensors), no record of what it was made from, raw files that are
    missing or changed since, or files of its own that changed after they were written (another dataset's cache
    copied in)."""
    files = _cache_files(processed) if processed.is_dir() else []
    if not files:
        return None
    for path in files:
        if path.suffix != ".pt":
            continue
        if not zipfile.is_zipfile(path):
            return f"{path} is not an archive as torch.save writes it (truncated, damaged, or a bare pickle)"
        try:
            with torch.serialization.safe_globals(list(safe)):
                torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except Exception as error:  # noqa: BLE001 - truncated, damaged, another format, Python objects: not ours
            if "weights_only" in str(error) or "Unsupported global" in str(error):
                return f"{path} holds Python objects other than tensors and plain data (a pickle that could run code)"
            return f"{path} cannot be read ({_reason(error)})"
    try:
        record = json.loads((processed / PROCESSED_RECORD).read_text())
    except (OSError, ValueError):
        return f"{processed} has no record of the raw files it was made from"
    absent = [p.name for p in raw if not p.is_file()]
    if absent:
        return f"its raw files {', '.join(absent)} are missing"
    if not isinstance(record, dict) or record.get("raw") != {p.name: file_digest(p) for p in raw}:
        return f"it was made from other raw files than those in {raw[0].parent}"
    if record.get("processed") != _stamps(files):
        return f"its files in {processed} changed after they were made"
    return None


def use_or_clear_processed(processed: Path, raw: list[Path], safe: tuple = ()) -> bool:
    """Remove the processed cache when :func:`processed_problem` finds one, with a warning saying why; returns
    whether there is none left (the library will build it from the raw files)."""
    problem = processed_problem(processed, raw, safe)
    if problem is not None:
        log.warning("the processed cache %s is not used (%s); it is rebuilt from the raw files", processed, problem)
        shutil.rmtree(processed)
    return not (processed.is_dir() and _cache_files(processed))


def record_processed(processed: Path, raw: list[Path]) -> None:
    """Write what the processed cache was made from (:data:`PROCESSED_RECORD`), once the library has built it."""
    record = {"raw": {p.name: file_digest(p) for p in raw}, "processed": _stamps(_cache_files(processed))}
    write_text_atomic(processed / PROCESSED_RECORD, json.dumps(record, indent=1) + "\n")


# -- the graph read -----------------------------------------------------------------------------


def check_graph(
    info: DatasetInfo,
    x: torch.Tensor,
    y: torch.Tensor,
    edge_index: torch.Tensor,
    num_nodes: int,
    sources: dict[str, list[Path]],
    verify: bool,
) -> None:
    """The graph read for ``info`` is the registry's dataset and whole: ``x`` finite with ``info.in_channels``
    columns, ``y`` of ``num_nodes`` labels in ``[0, info.num_classes)``, ``edge_index`` of nodes in
    ``[0, num_nodes)``, and (``verify``) ``num_nodes`` the published node count. ``sources``: the files that hold
    ``x``, ``y`` and ``edge_index`` (named in the error); a graph generated in code (no files) is checked for
    finiteness and ranges only, since its options set its sizes."""
    files = {key: ", ".join(str(p) for p in paths) for key, paths in sources.items()}
    folder = next((paths[0].parent.parent for paths in sources.values() if paths), None)

    def refuse(key: str, problem: str) -> DatasetDamagedError:
        if not files.get(key):
            return DatasetDamagedError(f"dataset {info.name!r}: {problem}", dataset=info.name)
        return damaged(info, files[key], problem, folder)

    counts = (
        f"{info.name} has {info.num_nodes:,} nodes, " if info.num_nodes else f"{info.name} has "
    ) + f"{info.in_channels:,} features and {info.num_classes} classes"
    if x.dim() != 2 or x.shape[0] != num_nodes:
        raise refuse("x", f"features of shape {tuple(x.shape)} for a graph of {num_nodes} nodes")
    block = max(1, (1 << 24) // max(1, x.shape[1]))  # a block of rows at a time: Physics' features are 1.1 GB
    for start in range(0, num_nodes, block):
        finite = torch.isfinite(x[start : start + block])
        if not bool(finite.all()):
            node, feature = (~finite).nonzero()[0].tolist()
            raise refuse(
                "x",
                f"a feature value is not finite (NaN or infinite; the first at node {start + node}, feature {feature})",
            )
    if sources and x.shape[1] != info.in_channels:
        raise refuse(
            "x",
            f"the graph read has {x.shape[1]:,} features per node where {counts}: these are not {info.name}'s files",
        )
    classes = info.num_classes if sources else None  # a generated graph's options set its classes
    if y.numel() != num_nodes or (y.numel() and (int(y.min()) < 0 or classes and int(y.max()) >= classes)):
        raise refuse(
            "y",
            f"labels {int(y.min()) if y.numel() else '-'}..{int(y.max()) if y.numel() else '-'} for "
            f"{y.numel()} of {num_nodes} nodes where {counts}",
        )
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        worst = int(edge_index.max()) if int(edge_index.max()) >= num_nodes else int(edge_index.min())
        raise refuse(
            "edge_index", f"an edge names node {worst}, outside the graph's {num_nodes} nodes (0..{num_nodes - 1})"
        )
    if sources and verify and info.num_nodes and num_nodes != info.num_nodes:
        raise refuse(
            "x",
            f"the graph read has {num_nodes:,} nodes where {counts}: these are not {info.name}'s files "
            "(FSNN_DATA_VERIFY=0 accepts a subset)",
        )
