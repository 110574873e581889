"""Graph data layer: loaders on fixtures in the real raw formats, splits, missing-data errors, OGB safety,
and the sparse feature preprocessing (propagation, LapPE, RWPE, perturbations, cache)."""

from __future__ import annotations

import io
import pickle
import shutil
import time
import urllib.error
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from zipdata import member_span

from fsnn.data import (
    DATASETS,
    DatasetDamagedError,
    DatasetMissingError,
    build_dataset,
    dataset_info,
    graph_features as F,
    load_graph,
)
from fsnn.data.cache import cache_dir
from fsnn.data.fakes.fixtures import write_fixtures
from fsnn.data.fakes.graph_fixtures import GRAPH_FIXTURE_NAMES
from fsnn.data.graphs import stratified_masks

FILE_DATASETS = ["cora", "citeseer", "pubmed", "photo", "computers", "cs", "physics", "ogbn_arxiv"]


@pytest.fixture(scope="module")
def graph_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("graphs")
    write_fixtures(root, GRAPH_FIXTURE_NAMES)
    return root


def test_registry_and_info():
    graphs = {name for name, info in DATASETS.items() if info.kind == "graph"}
    assert set(FILE_DATASETS) | {"karate", "synthetic"} == graphs
    info = dataset_info("cora")
    assert (info.name, info.num_classes, info.in_channels, info.library) == ("cora", 7, 1433, "planetoid")
    assert dataset_info("ogbn-arxiv") == dataset_info("ogbn_arxiv")
    assert dataset_info("ogbn_arxiv").library == "ogb"
    assert {DATASETS[n].library for n in ("photo", "computers")} == {"amazon"}
    assert {DATASETS[n].library for n in ("cs", "physics")} == {"coauthor"}
    with pytest.raises(KeyError, match="dataset must be one of .*, got .nope."):
        dataset_info("nope")
    with pytest.raises(TypeError, match="takes no options"):
        load_graph("karate", num_nodes=5)
    with pytest.raises(ValueError, match="load_graph"):
        build_dataset("cora")
    with pytest.raises(ValueError, match="build_dataset"):
        load_graph("digits_dvs")
    with pytest.raises(ValueError, match="^split must be one of ratio, public, got 'random'$"):
        load_graph("karate", split="random")
    with pytest.raises(Exception):
        info.num_classes = 3  # frozen


def test_fixture_layout(tmp_path):
    t0 = time.perf_counter()
    out = write_fixtures(tmp_path, GRAPH_FIXTURE_NAMES)
    assert time.perf_counter() - t0 < 20
    assert set(out) == set(GRAPH_FIXTURE_NAMES) == set(FILE_DATASETS)
    assert (tmp_path / "Cora/raw/ind.cora.x").is_file()
    assert (tmp_path / "CiteSeer/raw/ind.citeseer.test.index").is_file()
    assert (tmp_path / "Photo/raw/amazon_electronics_photo.npz").is_file()
    assert (tmp_path / "Physics/raw/ms_academic_phy.npz").is_file()
    assert (tmp_path / "ogbn_arxiv/RELEASE_v1.txt").is_file()
    assert (tmp_path / "ogbn_arxiv/split/time/valid.csv.gz").is_file()
    assert set(np.load(tmp_path / "CS/raw/ms_academic_cs.npz")) >= {
        "adj_data",
        "adj_indices",
        "adj_indptr",
        "adj_shape",
        "attr_data",
        "attr_indices",
        "attr_indptr",
        "attr_shape",
        "labels",
    }


# -- loaders on the fixtures ----------------------------------------------------------------------


def _check_graph(data, num_features, num_classes):
    n = data.num_nodes
    assert data.x.dtype == torch.float32 and data.x.shape == (n, num_features)
    assert data.y.dtype == torch.long and data.y.shape == (n,)
    assert int(data.y.max()) < num_classes
    ei = data.edge_index
    assert ei.dtype == torch.long and ei.shape[0] == 2 and ei.shape[1] > 0
    assert not bool((ei[0] == ei[1]).any())
    from torch_geometric.utils import is_undirected

    assert is_undirected(ei, num_nodes=n)


@pytest.mark.parametrize("name", FILE_DATASETS)
def test_loaders_on_fixtures(graph_root, name):
    info = dataset_info(name)
    data = load_graph(name, data_dir=graph_root, split="ratio", seed=0, download=False)
    _check_graph(data, info.in_channels, info.num_classes)
    tr, va, te = data.train_mask, data.val_mask, data.test_mask
    assert tr.dtype == va.dtype == te.dtype == torch.bool
    assert not bool((tr & va).any() | (tr & te).any() | (va & te).any())
    assert bool((tr | va | te).all())
    assert te.sum() > 0 and va.sum() > 0
    for c in data.y.unique():  # stratified: each class training and validation within one node of 0.7 / 0.2
        members = data.y == c
        n_c = int(members.sum())
        assert abs(int((tr & members).sum()) - 0.7 * n_c) <= 1
        assert abs(int((va & members).sum()) - 0.2 * n_c) <= 1
    again = load_graph(name, data_dir=graph_root, split="ratio", seed=0, download=False)  # processed cache
    assert torch.equal(again.train_mask, tr) and torch.equal(again.test_mask, te)
    assert torch.equal(again.x, data.x) and torch.equal(again.edge_index, data.edge_index)
    other = load_graph(name, data_dir=graph_root, split="ratio", seed=1, download=False)
    assert not torch.equal(other.train_mask, tr)


def test_public_splits(graph_root):
    cora = load_graph("cora", data_dir=graph_root, split="public", download=False)
    assert (int(cora.train_mask.sum()), int(cora.val_mask.sum()), int(cora.test_mask.sum())) == (14, 500, 30)
    arxiv = load_graph("ogbn_arxiv", data_dir=graph_root, split="public", download=False)
    import gzip

    valid = np.loadtxt(gzip.open(graph_root / "ogbn_arxiv/split/time/valid.csv.gz"), dtype=int)
    assert torch.equal(torch.nonzero(arxiv.val_mask).flatten(), torch.from_numpy(np.sort(valid)))
    assert not bool((arxiv.train_mask & arxiv.test_mask).any())
    with pytest.raises(ValueError, match="no public split"):
        load_graph("photo", data_dir=graph_root, split="public", download=False)


def test_custom_ratios_and_bad_arguments(graph_root):
    data = load_graph("cora", data_dir=graph_root, ratios=(0.5, 0.25, 0.25), download=False)
    assert abs(int(data.train_mask.sum()) - 275) <= 7
    with pytest.raises(ValueError):
        load_graph("cora", data_dir=graph_root, ratios=(0.5, 0.5, 0.5), download=False)
    with pytest.raises(ValueError):
        load_graph("cora", data_dir=graph_root, split="random", download=False)


def test_stratified_masks_small_classes():
    y = torch.tensor([0] * 10 + [1] * 3 + [2])
    tr, va, te = stratified_masks(y, (0.7, 0.2, 0.1), seed=3)
    assert bool((tr | va | te).all()) and not bool((tr & va).any() | (tr & te).any() | (va & te).any())
    for c in range(3):
        assert bool(tr[y == c].any())  # every class is represented in training
    tr2, _, _ = stratified_masks(y, (0.7, 0.2, 0.1), seed=3)
    assert torch.equal(tr, tr2)


def test_karate_and_synthetic():
    k = load_graph("karate", data_dir="/nonexistent")
    _check_graph(k, dataset_info("karate").in_channels, dataset_info("karate").num_classes)
    s = load_graph("synthetic", seed=2, num_nodes=300, num_classes=3, num_features=7, graph_seed=5)
    _check_graph(s, 7, 3)
    s2 = load_graph("synthetic", seed=4, num_nodes=300, num_classes=3, num_features=7, graph_seed=5)
    assert torch.equal(s.edge_index, s2.edge_index) and torch.equal(s.x, s2.x)  # graph depends on graph_seed
    assert not torch.equal(s.train_mask, s2.train_mask)  # split depends on seed
    same = (s.y[s.edge_index[0]] == s.y[s.edge_index[1]]).float().mean()
    assert same > 0.6  # homophilous
    with pytest.raises(TypeError):
        load_graph("synthetic", bogus=1)


# -- missing data ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,folder",
    [
        ("cora", "Cora"),
        ("citeseer", "CiteSeer"),
        ("pubmed", "PubMed"),
        ("photo", "Photo"),
        ("computers", "Computers"),
        ("cs", "CS"),
        ("physics", "Physics"),
        ("ogbn_arxiv", "ogbn_arxiv"),
    ],
)
def test_missing_data_raises_clear_error(tmp_path, name, folder):
    with pytest.raises(DatasetMissingError) as err:
        load_graph(name, data_dir=tmp_path, download=False)
    msg = str(err.value)
    assert repr(name) in msg and str(tmp_path / folder) in msg
    assert "How to get it" in msg and "Expected layout" in msg
    assert err.value.dataset == name
    assert isinstance(err.value, FileNotFoundError)


def test_failed_download_is_a_clear_error(tmp_path, monkeypatch):
    from torch_geometric.datasets import Amazon, Planetoid

    def offline(self):
        raise urllib.error.URLError("offline")

    monkeypatch.setattr(Planetoid, "download", offline)
    monkeypatch.setattr(Amazon, "download", offline)
    with pytest.raises(DatasetMissingError, match="automatic download failed") as err:
        load_graph("cora", data_dir=tmp_path, download=True)
    assert "ind.cora.graph" in str(err.value) and "URLError" in str(err.value)
    with pytest.raises(DatasetMissingError, match="amazon_electronics_photo.npz"):
        load_graph("photo", data_dir=tmp_path, download=True)


def test_ogb_never_prompts_or_exits(tmp_path, monkeypatch):
    import ogb.utils.url as ogb_url

    # (1) offline download: URLError -> DatasetMissingError, empty leftovers removed (else OGB would prompt next time)
    def no_network(*args, **kwargs):
        raise urllib.error.URLError("offline")

    monkeypatch.setattr(ogb_url.ur, "urlopen", no_network)
    with pytest.raises(DatasetMissingError, match="download failed"):
        load_graph("ogbn_arxiv", data_dir=tmp_path, download=True)
    assert not (tmp_path / "ogbn_arxiv").exists()

    # (2) OGB's "larger than 1 GB, proceed? (y/N)" input() prompt is never reached (fsnn downloads, not OGB); a
    # broken archive is a clear error
    monkeypatch.setattr(ogb_url.ur, "urlopen", lambda *a, **k: _Served(b"not a zip", length=5 << 30))
    monkeypatch.setattr("builtins.input", lambda *a: pytest.fail("input() was called"))
    with pytest.raises(DatasetMissingError, match="download failed") as err:
        load_graph("ogbn_arxiv", data_dir=tmp_path, download=True)
    assert "BadZipFile" in str(err.value) and not (tmp_path / "ogbn_arxiv").exists()
    (tmp_path / "arxiv.zip").unlink()  # kept, as OGB keeps it; the next download would reuse it

    # (3) a folder without RELEASE_v1.txt (OGB would ask "Will you update the dataset now?")
    write_fixtures(tmp_path, ["ogbn_arxiv"])
    (tmp_path / "ogbn_arxiv/RELEASE_v1.txt").unlink()
    with pytest.raises(DatasetMissingError, match="RELEASE_v1.txt"):
        load_graph("ogbn_arxiv", data_dir=tmp_path, download=True)
    assert (tmp_path / "ogbn_arxiv/raw/edge.csv.gz").is_file()  # user data untouched

    # (4) an empty leftover folder is cleaned up and reported as missing
    shutil.rmtree(tmp_path / "ogbn_arxiv")
    (tmp_path / "ogbn_arxiv/raw").mkdir(parents=True)
    with pytest.raises(DatasetMissingError, match="folder not found"):
        load_graph("ogbn_arxiv", data_dir=tmp_path, download=False)


class _Served(io.BytesIO):
    """What ``urllib.request.urlopen`` answers, for ogb's ``download_url``: the bytes and their Content-Length."""

    def __init__(self, content: bytes, length: int | None = None):
        super().__init__(content)
        self.length = len(content) if length is None else length

    def info(self):
        return {"Content-Length": str(self.length)}


def _arxiv_zip(tmp_path, without: str | None = None) -> bytes:
    """arxiv.zip as OGB serves it (the folder 'arxiv'), holding the fixture's files, ``without`` one of them."""
    write_fixtures(tmp_path / "served", ["ogbn_arxiv"])
    folder = tmp_path / "served" / "ogbn_arxiv"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for f in sorted(p for p in folder.rglob("*") if p.is_file()):
            if f.relative_to(folder).as_posix() != without:
                zf.write(f, "arxiv/" + f.relative_to(folder).as_posix())
    return buffer.getvalue()


def test_ogb_download_is_made_by_fsnn_and_never_prompts(tmp_path, monkeypatch):
    import ogb.utils.url as ogb_url

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    monkeypatch.setattr("builtins.input", lambda *a: pytest.fail("input() was called"))
    # an archive without one raw file is refused before OGB is constructed (its own download would prompt)
    lacking = _arxiv_zip(tmp_path, without="raw/node-label.csv.gz")
    monkeypatch.setattr(ogb_url.ur, "urlopen", lambda *a, **k: _Served(lacking))
    with pytest.raises(DatasetMissingError, match="download failed") as err:
        load_graph("ogbn_arxiv", data_dir=data_dir, download=True)
    assert "lacks raw/node-label.csv.gz" in str(err.value)
    shutil.rmtree(data_dir / "ogbn_arxiv")
    # a complete archive (bigger than OGB's 1 GB prompt, by its Content-Length) is unpacked into ogbn_arxiv/
    complete = _arxiv_zip(tmp_path)
    monkeypatch.setattr(ogb_url.ur, "urlopen", lambda *a, **k: _Served(complete, length=5 << 30))
    data = load_graph("ogbn_arxiv", data_dir=data_dir, split="public", download=True)
    assert int(data.train_mask.sum()) > 0 and (data_dir / "ogbn_arxiv/RELEASE_v1.txt").is_file()
    assert sorted(p.name for p in data_dir.iterdir()) == ["ogbn_arxiv"]  # archive and its folder 'arxiv' gone
    again = load_graph("ogbn_arxiv", data_dir=data_dir, split="public", download=False)
    assert torch.equal(again.test_mask, data.test_mask)


def test_ogb_loads_under_weights_only_without_stdin(tmp_path):
    """A fresh process with stdin closed and torch's default weights_only=True loads the fixture twice
    (process + reload of OGB's processed file)."""
    import subprocess
    import sys

    write_fixtures(tmp_path, ["ogbn_arxiv"])
    code = (
        "import torch; from fsnn.data import load_graph\n"
        f"for _ in range(2): d = load_graph('ogbn_arxiv', data_dir={str(tmp_path)!r}, download=False)\n"
        "print('OK', torch.__version__, d.num_nodes, int(d.train_mask.sum()))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    res = subprocess.run(
        [sys.executable, "-c", code], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, env=env
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "OK" in res.stdout and (tmp_path / "ogbn_arxiv/processed/geometric_data_processed.pt").is_file()


# -- propagation and standardisation ---------------------------------------------------------------


def test_node_features_cache(graph_root, tmp_path, monkeypatch):
    data = load_graph("cora", data_dir=graph_root, download=False)
    cache = cache_dir(tmp_path, "graphs", "cora")
    assert cache == tmp_path / "fsnn_cache" / "graphs" / "cora"
    x1 = F.node_features(data, hops=1, pe="laplacian", pe_dim=8, cache_dir=cache)
    assert x1.shape == (data.num_nodes, 1433 + 8)
    names = sorted(p.name for p in cache.glob("*.pt"))
    assert len(names) == 2 and names[0].startswith("lappe-") and names[1].startswith("propagate-")
    assert not [p for p in cache.iterdir() if ".tmp" in p.name]
    monkeypatch.setattr(F, "laplacian_pe", lambda *a, **k: pytest.fail("recomputed instead of cached"))
    monkeypatch.setattr(F, "propagate", lambda *a, **k: pytest.fail("recomputed instead of cached"))
    x2 = F.node_features(data, hops=1, pe="laplacian", pe_dim=8, cache_dir=cache)
    assert torch.equal(x1, x2)
    xr = F.node_features(
        load_graph("cora", data_dir=graph_root, seed=3, download=False),
        hops=1,
        pe="laplacian",
        pe_dim=8,
        cache_dir=cache,
    )  # other split: same cache, other z-score
    assert not torch.equal(xr, x1)
    monkeypatch.undo()
    rw = F.node_features(data, hops=0, zscore=False, pe="random_walk", pe_dim=4, cache_dir=cache)
    assert rw.shape == (data.num_nodes, 1433 + 4) and any(cache.glob("rwpe-*-exact-*.pt"))
    # a perturbed graph gets its own entries (fingerprint), never the stale ones
    dropped = data.clone()
    dropped.edge_index = F.drop_edges(data.edge_index, 0.5, 0)
    F.node_features(dropped, hops=1, pe="laplacian", pe_dim=8, cache_dir=cache)
    assert len(list(cache.glob("lappe-*.pt"))) == 2


@pytest.mark.parametrize("damage", ["same-size bytes in the tensor", "truncated", "an older format"])
def test_damaged_graph_cache_is_named_and_rebuilt(graph_root, tmp_path, caplog, damage):
    # a same-size corruption must not load silently: its NaN features would train into a "complete" run
    from fsnn.data.cache import cached_tensor

    data = load_graph("cora", data_dir=graph_root, download=False)
    cache = cache_dir(tmp_path, "graphs", "cora")
    x = F.node_features(data, hops=1, cache_dir=cache)
    (path,) = cache.glob("propagate-*.pt")
    raw = bytearray(path.read_bytes())
    if damage == "truncated":
        raw = raw[: len(raw) // 2]
    elif damage == "an older format":  # a bare tensor, as fsnn wrote before the digest
        buffer = io.BytesIO()
        torch.save(torch.load(path, weights_only=True)["tensor"], buffer)
        raw = bytearray(buffer.getvalue())
    else:
        start, _ = member_span(path)
        raw[start : start + 4 * 550] = b"\xff" * (4 * 550)  # 550 float32 NaNs
    path.write_bytes(bytes(raw))
    with caplog.at_level("WARNING", logger="fsnn.data.cache"):
        again = F.node_features(data, hops=1, cache_dir=cache)
    assert str(path) in caplog.text and "rebuilding" in caplog.text
    assert torch.equal(again, x) and torch.isfinite(again).all()
    caplog.clear()
    assert (
        torch.equal(
            cached_tensor(cache, path.stem, lambda: pytest.fail("rebuilt twice")),
            torch.load(path, weights_only=True)["tensor"],
        )
        and not caplog.text
    )


@pytest.mark.parametrize("name,folder", [("cora", "Cora"), ("photo", "Photo")])
@pytest.mark.parametrize("damage", ["truncated", "empty"])
def test_damaged_pyg_processed_cache_is_named_and_rebuilt(graph_root, tmp_path, caplog, name, folder, damage):
    # a truncated Cora/processed/data.pt is named as the damaged cache, not reported as unreadable raw files
    shutil.copytree(graph_root / folder / "raw", tmp_path / folder / "raw")
    data = load_graph(name, data_dir=tmp_path, download=False)
    path = tmp_path / folder / "processed" / "data.pt"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2] if damage == "truncated" else b"")
    with caplog.at_level("WARNING", logger="fsnn.data"):
        again = load_graph(name, data_dir=tmp_path, download=False)
    assert str(path) in caplog.text and "truncated, damaged" in caplog.text and "rebuilt from the raw" in caplog.text
    assert torch.equal(again.x, data.x) and torch.equal(again.edge_index, data.edge_index)
    caplog.clear()
    load_graph(name, data_dir=tmp_path, download=False)  # rebuilt for good
    assert not caplog.text


class Payload:
    """A pickle that creates a file when it is loaded."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def _copy_raw(graph_root: Path, tmp_path: Path, *folders: str) -> Path:
    for folder in folders:
        shutil.copytree(graph_root / folder / "raw", tmp_path / folder / "raw")
    return tmp_path


@pytest.mark.parametrize("file", ["data.pt", "pre_transform.pt", "pre_filter.pt"])
@pytest.mark.parametrize("form", ["torch.save", "bare pickle"])
def test_a_processed_cache_holding_a_pickle_runs_nothing_and_is_rebuilt(graph_root, tmp_path, caplog, file, form):
    # PyG reads pre_transform.pt with weights_only=False, and data.pt too once weights_only fails
    root = _copy_raw(graph_root, tmp_path, "Cora")
    data = load_graph("cora", data_dir=root, download=False)
    marker, path = tmp_path / "PAYLOAD_RAN", root / "Cora" / "processed" / file
    if form == "torch.save":
        torch.save(Payload(str(marker)), path)
    else:
        path.write_bytes(pickle.dumps(Payload(str(marker))))
    with caplog.at_level("WARNING", logger="fsnn.data"):
        again = load_graph("cora", data_dir=root, download=False)
    assert not marker.exists() and str(path) in caplog.text and "rebuilt from the raw files" in caplog.text
    assert torch.equal(again.x, data.x) and torch.equal(again.edge_index, data.edge_index)


def test_a_foreign_or_stale_processed_cache_is_rebuilt_from_the_raw_files(graph_root, tmp_path, caplog):
    root = _copy_raw(graph_root, tmp_path, "Cora", "CiteSeer")
    cora = load_graph("cora", data_dir=root, download=False)
    load_graph("citeseer", data_dir=root, download=False)
    # CiteSeer's cache copied into Cora/processed: Cora's graph all the same
    shutil.rmtree(root / "Cora" / "processed")
    shutil.copytree(root / "CiteSeer" / "processed", root / "Cora" / "processed")
    with caplog.at_level("WARNING", logger="fsnn.data"):
        again = load_graph("cora", data_dir=root, download=False)
    assert "made from other raw files" in caplog.text and str(root / "Cora" / "processed") in caplog.text
    assert again.x.shape == cora.x.shape and torch.equal(again.x, cora.x)
    # the raw files replaced after processing (a label changed): the graph of the new files
    ally = root / "Cora" / "raw" / "ind.cora.ally"
    labels = pickle.loads(ally.read_bytes(), encoding="latin1")
    labels[0] = np.roll(labels[0], 1)
    ally.write_bytes(pickle.dumps(labels, protocol=2))
    caplog.clear()
    with caplog.at_level("WARNING", logger="fsnn.data"):
        changed = load_graph("cora", data_dir=root, download=False)
    assert "made from other raw files" in caplog.text and not torch.equal(changed.y, cora.y)
    caplog.clear()
    with caplog.at_level("WARNING", logger="fsnn.data"):
        load_graph("cora", data_dir=root, download=False)  # rebuilt for good
    assert not caplog.text


def test_a_processed_cache_the_library_cannot_read_is_rebuilt(graph_root, tmp_path, caplog):
    """Tensors and plain data, recorded as made from these raw files, in a layout this PyG does not read (another
    version of it wrote them): rebuilt, with a warning."""
    from fsnn.data.graph_checks import record_processed

    root = _copy_raw(graph_root, tmp_path, "Cora")
    data = load_graph("cora", data_dir=root, download=False)
    torch.save({"not": torch.zeros(2)}, root / "Cora" / "processed" / "data.pt")
    record_processed(root / "Cora" / "processed", sorted((root / "Cora" / "raw").iterdir()))
    with caplog.at_level("WARNING", logger="fsnn.data"):
        again = load_graph("cora", data_dir=root, download=False)
    assert "cannot be read" in caplog.text and "rebuilt from the raw files" in caplog.text
    assert torch.equal(again.x, data.x) and torch.equal(again.edge_index, data.edge_index)


def _edit_pickle(path: Path, edit) -> None:
    obj = pickle.loads(path.read_bytes(), encoding="latin1")
    path.write_bytes(pickle.dumps(edit(obj), protocol=2))


def _edge_beyond(graph):
    graph[0].append(99_999)
    return graph


def _nan_feature(x):
    x = x.tolil()
    x[3, 5] = float("nan")
    return x.tocsr()


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _npz_edge_beyond(path: Path) -> None:
    arrays = dict(np.load(path))
    arrays["adj_indices"][0] = 99_999
    np.savez(path, **arrays)


def _citeseer_as_cora(raw: Path) -> None:
    citeseer = raw.parent.parent / "CiteSeer" / "raw"
    for path in raw.iterdir():
        shutil.copy(citeseer / path.name.replace("cora", "citeseer"), path)


CORRUPT = {  # (dataset, its folder, the damage, the file or text named, the problem)
    "truncated features": (
        "cora",
        "Cora",
        lambda raw: _truncate(raw / "ind.cora.x"),
        "ind.cora.x",
        "cannot be read .*truncated",
    ),
    "truncated test index": (
        "cora",
        "Cora",
        lambda raw: _truncate(raw / "ind.cora.test.index"),
        "ind.cora.test.index",
        "lists 15 test nodes",
    ),
    "edge beyond the nodes": (
        "cora",
        "Cora",
        lambda raw: _edit_pickle(raw / "ind.cora.graph", _edge_beyond),
        "ind.cora.graph",
        "an edge names node 99999, outside the graph's 550 nodes",
    ),
    "pickle payload in a raw file": (
        "cora",
        "Cora",
        lambda raw: (raw / "ind.cora.graph").write_bytes(pickle.dumps(Payload(str(raw / "PAYLOAD_RAN")))),
        "ind.cora.graph",
        "a pickle that could run code",
    ),
    "NaN feature": (
        "cora",
        "Cora",
        lambda raw: _edit_pickle(raw / "ind.cora.allx", _nan_feature),
        "ind.cora.allx",
        "a feature value is not finite .*node 3, feature 5",
    ),
    "another dataset's files": (
        "cora",
        "Cora",
        _citeseer_as_cora,
        "ind.cora.x",
        "3,703 features per node where cora has 2,708 nodes, 1,433 features and 7 classes: these are not cora's files",
    ),
    "truncated npz": (
        "photo",
        "Photo",
        lambda raw: _truncate(raw / "amazon_electronics_photo.npz"),
        "amazon_electronics_photo.npz",
        "cannot be read",
    ),
    "npz edge beyond the nodes": (
        "photo",
        "Photo",
        lambda raw: _npz_edge_beyond(raw / "amazon_electronics_photo.npz"),
        "Photo/raw",
        "PyG cannot read the raw files",
    ),
    "truncated gzip": (
        "ogbn_arxiv",
        "ogbn_arxiv",
        lambda raw: _truncate(raw / "edge.csv.gz"),
        "edge.csv.gz",
        "cannot be read",
    ),
}


@pytest.mark.parametrize("case", CORRUPT)
def test_corrupt_raw_graph_files_are_one_error_naming_the_file(graph_root, tmp_path, case):
    name, folder, damage, named, problem = CORRUPT[case]
    shutil.copytree(graph_root / folder, tmp_path / folder, ignore=shutil.ignore_patterns("processed"))
    shutil.copytree(graph_root / "CiteSeer", tmp_path / "CiteSeer", ignore=shutil.ignore_patterns("processed"))
    damage(tmp_path / folder / "raw")
    with pytest.raises(DatasetDamagedError, match=problem) as error:
        load_graph(name, data_dir=tmp_path, download=False)
    message = str(error.value)
    assert named in message and "\n" not in message and message.startswith(f"dataset {name!r}: ")
    assert "replace the dataset's files" in message and not (tmp_path / folder / "raw" / "PAYLOAD_RAN").exists()


def test_with_verification_a_graph_has_its_published_node_count(graph_root, monkeypatch):
    monkeypatch.setenv("FSNN_DATA_VERIFY", "1")
    with pytest.raises(DatasetDamagedError, match="the graph read has 550 nodes where cora has 2,708 nodes"):
        load_graph("cora", data_dir=graph_root, download=False)
    assert load_graph("karate").num_nodes == 34  # built in: nothing published to compare with
    # generated: its options set its sizes, not the registry's defaults
    assert int(load_graph("synthetic", num_nodes=60, num_classes=9, num_features=3).y.max()) == 8


# -- scale ---------------------------------------------------------------------------------------------
