"""Real data in the loop: the real Cora (tests/data/planetoid, Planetoid's raw release) through the loaders, one short
epoch of Table 2's SGCN, its DRSGNN input made of its components and a DRSGNN run that reruns bit for bit, and (slow) Table 2's
recipe on it for SGCN and DRSGNN."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
import torch
from helpers import ROOT, SHARED_GRAPHS, SHARED_SUMS, needs_shared, run_app

from fsnn.data import load_graph
from fsnn.data.graph_features import node_features
from fsnn.models.poisson import poisson_encode

PLANETOID = ROOT / "tests" / "data" / "planetoid"
RAW = PLANETOID / "Cora" / "raw"
# the sums in the data's README, one `sha256  file` line each
SUMS = dict(
    (name, digest)
    for digest, name in re.findall(r"^([0-9a-f]{64})  (ind\.cora\.\S+)$", (PLANETOID / "README.md").read_text(), re.M)
)
NODES, CLASSES, FEATURES, LINKS = 2708, 7, 1433, 5278  # links: PyG's undirected Cora without duplicates
# one thread per run: several small torch processes on a shared CPU run several times faster so
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@pytest.fixture
def cora_dir(tmp_path) -> Path:
    """A ``paths.data_dir`` with a copy of the real Cora raw files (PyG writes ``processed/`` beside them)."""
    shutil.copytree(RAW, tmp_path / "Cora" / "raw")
    return tmp_path


def test_real_cora_files_match_their_checksums():
    assert sorted(SUMS) == sorted(p.name for p in RAW.iterdir())
    assert len(SUMS) == 8
    for name, digest in SUMS.items():
        assert hashlib.sha256((RAW / name).read_bytes()).hexdigest() == digest, name


def test_real_cora_loads_with_the_papers_split(cora_dir):
    graph = load_graph("cora", cora_dir, split="ratio", seed=0, download=False)
    assert (graph.num_nodes, graph.num_features, int(graph.y.max()) + 1) == (NODES, FEATURES, CLASSES)
    assert graph.edge_index.shape[1] == 2 * LINKS and graph.is_undirected() and not graph.has_self_loops()
    assert set(graph.x.unique().tolist()) == {0.0, 1.0}  # binary bag of words
    masks = torch.stack([graph.train_mask, graph.val_mask, graph.test_mask])
    assert torch.equal(masks.sum(0), torch.ones(NODES, dtype=torch.long))  # disjoint, every node once
    assert masks.sum(1).tolist() == [1896, 542, 270]  # 0.7 / 0.2 / 0.1 of 2,708, stratified per class
    per_class = torch.bincount(graph.y, minlength=CLASSES)
    for mask, ratio in zip(masks, (0.7, 0.2, 0.1)):  # every class in every split, in proportion
        counts = torch.bincount(graph.y[mask], minlength=CLASSES)
        assert (counts > 0).all() and ((counts - ratio * per_class).abs() <= 1).all(), counts
    other = load_graph("cora", cora_dir, split="ratio", seed=1, download=False)
    assert not torch.equal(other.test_mask, graph.test_mask)  # the split follows the run's seed
    public = load_graph("cora", cora_dir, split="public", download=False)
    assert [int(m.sum()) for m in (public.train_mask, public.val_mask, public.test_mask)] == [140, 500, 1000]


def test_poisson_rates_per_feature_on_real_cora_features(cora_dir):
    """Per-feature firing rates of the encoder on Cora's z-scored features against clamp(x, 0, 1): every feature
    within 5 binomial sigma, and the certain entries exact (never / always)."""
    graph = load_graph("cora", cora_dir, split="ratio", seed=0, download=False)
    x = node_features(graph, hops=1)[:64]  # the SGCN input: propagated, z-scored on the training nodes
    steps = 400
    spikes = poisson_encode(x, steps, generator=torch.Generator().manual_seed(0))
    dense = spikes.dense()
    q = x.clamp(0, 1)
    rate = dense.mean(0)
    sigma = torch.sqrt(q * (1 - q) / steps)
    assert torch.all((rate - q).abs() <= 5 * sigma + 1e-12)
    assert torch.equal(rate[q == 0], q[q == 0]) and torch.equal(rate[q == 1], q[q == 1])
    assert ((q > 0) & (q < 1)).any() and (q == 1).any()  # the test exercises both kinds of entries
    assert spikes.count() == float(dense.sum()) and spikes.numel() == dense.numel()
    per_feature = dense.mean((0, 1))  # each feature's rate over nodes and steps
    assert torch.allclose(per_feature, q.mean(0), atol=5 * float(sigma.max()) / 8 + 1e-6)


def _table2_smoke(cwd: Path, data_dir: Path, backbone: str, neuron: str, *overrides: str):
    """A shrunk Table 2 run on Cora (``+smoke=graph``) from ``cwd``, one torch thread: the process and its record."""
    proc = run_app(
        "train.py",
        "experiment=table2_node_classification",
        "hydra.mode=RUN",
        "dataset=cora",
        f"backbone={backbone}",
        f"neuron={neuron}",
        "+smoke=graph",
        *overrides,
        f"paths.data_dir={data_dir}",
        cwd=cwd,
        env=ONE_THREAD,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, json.loads(next((cwd / "runs" / "table2_node_classification").glob("*/metrics.json")).read_text())


def test_one_epoch_of_table2_on_real_cora(cora_dir, tmp_path):
    """One epoch of Table 2's SGCN / f-LIF (T=100; two Poisson test re-samplings instead of 20) already learns."""
    proc, run = _table2_smoke(tmp_path, cora_dir, "sgcn", "flif", "dataset.T=100")
    assert run["status"] == "complete" and run["epochs"] == 1 and run["recipe"] == "matched"
    assert run["fake_data"] is False  # the real release carries no fake marker
    assert "Warning" not in proc.stderr, proc.stderr  # no library's deprecation notice about its own code
    assert run["num_parameters"] == FEATURES * CLASSES + CLASSES
    assert run["config"]["neuron"]["alpha"] == 0.3  # tab:alpha_gnn's Cora alpha
    majority = 818 / NODES  # Cora's largest class: what a constant guess scores
    assert run["test_acc"] > majority + 0.1 and run["val_acc_best"] > majority + 0.1


def test_drsgnn_input_of_real_cora_lives_in_its_components(cora_dir):
    """Cora has 78 connected components: each column of its Laplacian positional encoding is zero outside one of
    them, so no column is a rounding-dependent mix of the repeated zero eigenvalue's eigenvectors (what made the
    input, and so a seeded run, differ between CPUs' BLAS kernels)."""
    from scipy.sparse.csgraph import connected_components

    from fsnn.data.graph_features import laplacian_pe, normalized_adjacency

    g = load_graph("cora", cora_dir, split="ratio", seed=0, download=False)
    count, owner = connected_components(normalized_adjacency(g.edge_index, g.num_nodes, self_loops=False))
    pe = laplacian_pe(g.edge_index, g.num_nodes, 32).numpy()
    assert count == 78 and pe.shape == (2708, 32)
    assert all(len(set(owner[pe[:, j] != 0])) == 1 for j in range(32))


def test_a_drsgnn_run_on_real_cora_reruns_bit_identically(tmp_path):
    """Two short Table 2 DRSGNN runs, each in a fresh folder with its own copy of Cora (so its own positional
    encoding and caches): the same metrics, bit for bit."""
    records = []
    for name in ("first", "again"):
        folder = tmp_path / name
        shutil.copytree(RAW, folder / "Cora" / "raw")
        records.append(_table2_smoke(folder, folder, "drsgnn", "sj_lif")[1])
    first, again = records
    assert first["status"] == again["status"] == "complete"
    for key in ("val_acc_best", "val_acc_last", "test_acc", "test_acc_last", "test_metrics", "firing_rates"):
        assert first[key] == again[key], key


def _curves(run_dir: Path) -> list[dict[str, str]]:
    """Every row Lightning's CSV logger wrote over the run (epoch, step, losses, accuracies)."""
    with open(next(run_dir.glob("logs/*/metrics.csv"))) as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow
@pytest.mark.parametrize("backbone, options", [("sgcn", []), ("drsgnn", ["backbone.threshold_mode=scale"])])
def test_table2_recipe_learns_real_cora_and_lif_is_sj_lif(cora_dir, tmp_path, backbone, options):
    """Table 2's recipe (T=100, batch 32, Adam 1e-3, 20 Poisson test re-samplings) at 10 instead of 100 epochs.

    DRSGNN learns its threshold the same way for every neuron here (``threshold_mode=scale``): by default fsnn's
    neurons learn it inside the neuron and the baselines through a current scaling, whose surrogate widths differ
    once the threshold moves, so lif and sj_lif would part."""
    proc = run_app(
        "train.py",
        "experiment=table2_node_classification",
        "dataset=cora",
        f"backbone={backbone}",
        "neuron=flif,lif,sj_lif",
        "seed=0",
        "trainer.max_epochs=10",
        f"paths.data_dir={cora_dir}",
        "trainer.enable_progress_bar=false",
        *options,
        cwd=tmp_path,
        env=ONE_THREAD,
        timeout=3000,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = {}
    for path in (tmp_path / "runs" / "table2_node_classification").glob("*/metrics.json"):
        run = json.loads(path.read_text())
        runs[run["config"]["neuron"]["name"]] = (run, path.parent)
    assert sorted(runs) == ["flif", "lif", "sj_lif"]
    for neuron, (run, _) in runs.items():
        assert run["status"] == "complete" and run["epochs"] == 10
        assert run["test_acc"] >= 0.84, (backbone, neuron, run["test_acc"])
    # alpha = 1 is SpikingJelly's LIFNode: the same run, epoch by epoch, to four digits
    (lif, lif_dir), (sj, sj_dir) = runs["lif"], runs["sj_lif"]
    lif_rows, sj_rows = _curves(lif_dir), _curves(sj_dir)
    assert len(lif_rows) == len(sj_rows) > 10
    for a, b in zip(lif_rows, sj_rows):
        assert a.keys() == b.keys()
        for key in a:
            if a[key] or b[key]:
                assert float(a[key]) == pytest.approx(float(b[key]), abs=1e-4), key
    for key in ("val_acc_best", "test_acc", "test_acc_last"):
        assert lif[key] == pytest.approx(sj[key], abs=1e-4), key
    assert lif["test_metrics"]["test/acc_std"] == pytest.approx(sj["test_metrics"]["test/acc_std"], abs=1e-4)


# -- the larger real graphs: ../shared/data/graphs beside the checkout (CI has it; a user's clone does not) ------------
LARGER = {"citeseer": "CiteSeer", "photo": "Photo", "computers": "Computers", "cs": "CS", "physics": "Physics"}


@pytest.fixture(scope="module")
def shared_graphs(tmp_path_factory) -> Path:
    """A ``paths.data_dir`` with a copy of the larger graphs' raw files (PyG writes ``processed/`` beside them, and
    shared/ may be read-only)."""
    root = tmp_path_factory.mktemp("graphs")
    for folder in LARGER.values():
        shutil.copytree(SHARED_GRAPHS / folder / "raw", root / folder / "raw")
    return root


@needs_shared
@pytest.mark.parametrize("name", sorted(LARGER))
def test_larger_real_graphs_load_with_their_published_sizes(shared_graphs, name):
    """Each graph's raw files are the published ones (the README's sha256) and load, through fsnn's loader, with the
    node, feature and class counts that fsnn's registry states (which the cost estimates use)."""
    from fsnn.data.registry import dataset_info

    raw = sorted((shared_graphs / LARGER[name] / "raw").iterdir())
    assert raw and all(
        hashlib.sha256(p.read_bytes()).hexdigest() == SHARED_SUMS[f"{LARGER[name]}/raw/{p.name}"] for p in raw
    )
    graph = load_graph(name, shared_graphs, split="ratio", seed=0, download=False)
    info = dataset_info(name)
    assert (graph.num_nodes, graph.num_features, int(graph.y.max()) + 1) == (
        info.num_nodes,
        info.in_channels,
        info.num_classes,
    )
    assert int(graph.train_mask.sum() + graph.val_mask.sum() + graph.test_mask.sum()) == graph.num_nodes


@needs_shared
def test_dense_poisson_path_on_real_photo_features(shared_graphs):
    """Photo's z-scored features are mostly uncertain (0 < p < 1 for about a quarter of the entries, times 8 classes:
    the dense path): its currents are the layer's on the same spikes, and each feature fires at its probability."""
    from torch import nn

    from fsnn.models import poisson

    graph = load_graph("photo", shared_graphs, split="ratio", seed=0, download=False)
    x = node_features(graph, hops=1)[:48]
    q = x.clamp(0, 1)
    uncertain = float(((q > 0) & (q < 1)).float().mean())
    assert uncertain * 8 >= poisson.DENSE_FROM  # Photo takes the dense path
    layer = nn.Linear(x.shape[1], 8)
    steps = 300
    dense = poisson_encode(x, steps, generator=torch.Generator().manual_seed(0)).dense()
    currents = poisson_encode(x, steps, generator=torch.Generator().manual_seed(0)).linear(layer.weight, layer.bias)
    torch.testing.assert_close(currents, layer(dense), rtol=1e-5, atol=1e-4)
    rate, sigma = dense.mean(0), torch.sqrt(q * (1 - q) / steps)
    assert torch.all((rate - q).abs() <= 5 * sigma + 1e-12)
