"""The training application: config composition, training runs, errors, determinism (resume, idempotence and
bad values: test_runs.py)."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import lightning as L
import pytest
import torch
from helpers import CONF, one_run_cells, run_app
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, OmegaConf
from torch import nn
from torch.utils.data import TensorDataset

from fsnn import build_neuron
from fsnn.data.datamodules import SplitDataModule
from fsnn.models import backbone_names, build_backbone
from fsnn.suite.training import NonFiniteLossError, SpikingClassifier

DATASETS = sorted(p.stem for p in (CONF / "dataset").glob("*.yaml"))
BACKBONE_CFGS = sorted(p.stem for p in (CONF / "backbone").glob("*.yaml"))
NEURONS = sorted(p.stem for p in (CONF / "neuron").glob("*.yaml") if p.stem != "common")
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))

# a tiny, fast version of the default experiment
TINY = [
    "trainer.max_epochs=1",
    "trainer.limit_train_batches=3",
    "trainer.limit_val_batches=2",
    "trainer.limit_test_batches=2",
    "trainer.enable_progress_bar=false",
    "logger=none",
    "dataset.batch_size=16",
]


@pytest.fixture
def hydra_context():
    """One initialised Hydra context for many compositions (``compose_cfg`` opens a new one per call)."""
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        yield
    GlobalHydra.instance().clear()


def _composes(*overrides: str) -> DictConfig:
    """The config of ``overrides`` (inside an initialised Hydra context), its neuron and optimizer resolved: f-LIF's
    alpha interpolates the dataset and the backbone, the optimizer's learning rate the dataset."""
    cfg = compose("config", overrides=list(overrides), return_hydra_config=True)
    OmegaConf.to_container(cfg.neuron, resolve=True)
    OmegaConf.to_container(cfg.optimizer, resolve=True)
    return cfg


@pytest.mark.parametrize("dataset", DATASETS)
def test_every_config_composes_with_every_dataset(hydra_context, dataset):
    # every pair of config groups composes (the whole dataset x backbone x neuron product costs twice the time and
    # adds no case: the one three-way interpolation, f-LIF's alpha per backbone and dataset, runs with every pair)
    for backbone in BACKBONE_CFGS:
        cfg = _composes(f"dataset={dataset}", f"backbone={backbone}", "neuron=flif")
        assert (cfg.dataset.name, cfg.hydra.runtime.choices.backbone) == (dataset, backbone)
    for neuron in NEURONS:
        assert _composes(f"dataset={dataset}", f"neuron={neuron}").neuron.name == neuron
    for experiment in EXPERIMENTS:
        assert _composes(f"experiment={experiment}", f"dataset={dataset}").task_name


def test_every_backbone_composes_with_every_neuron(hydra_context):
    for backbone, neuron in itertools.product(BACKBONE_CFGS, NEURONS):
        cfg = _composes(f"backbone={backbone}", f"neuron={neuron}")
        assert (cfg.hydra.runtime.choices.backbone, cfg.neuron.name) == (backbone, neuron)


@pytest.mark.parametrize("dataset,backbone", [("cora", "dvsnet"), ("dvsgesture", "sgcn"), ("digits_dvs", "msg")])
def test_incompatible_pair_fails_before_loading_data(compose_cfg, dataset, backbone):
    from fsnn.checks import ConfigError
    from fsnn.suite.tasks import build_task

    cfg = compose_cfg(f"dataset={dataset}", f"backbone={backbone}", "paths.data_dir=/nonexistent")
    with pytest.raises(ConfigError, match=backbone):
        build_task(cfg)


def test_link_task_needs_msg(compose_cfg):
    from fsnn.checks import ConfigError
    from fsnn.suite.tasks import build_task

    with pytest.raises(ConfigError, match="msg"):
        build_task(compose_cfg("dataset=cora", "backbone=sgcn", "task=link"))


@pytest.mark.parametrize("neuron", NEURONS)
def test_every_neuron_config_builds_its_neuron(compose_cfg, neuron):
    options = OmegaConf.to_container(compose_cfg(f"neuron={neuron}").neuron, resolve=True)
    module = build_neuron(options.pop("name"), **options)
    x = torch.rand(4, 2, 3) * 2
    assert module(x).shape == x.shape


def test_neurons_share_hyperparameters_except_the_neuron(compose_cfg):
    # the fair-comparison rule: every neuron config inherits the same common block
    common = {"tau", "threshold", "reset", "surrogate", "surrogate_scale"}
    cfgs = {n: compose_cfg(f"neuron={n}", "neuron.threshold=0.7").neuron for n in NEURONS}
    for name, node in cfgs.items():
        assert common <= set(node), name
        assert node.threshold == 0.7
    assert cfgs["flif"].tau == cfgs["sj_lif"].tau == cfgs["snntorch_leaky"].tau == cfgs["lif"].tau


def test_run_folder_follows_the_command(compose_cfg):
    from fsnn.suite.run_names import run_dir_name

    assert run_dir_name(None, []) == "default"
    assert run_dir_name(None, ["neuron=flif", "dataset=dvsgesture"]) == "dataset-dvsgesture+neuron-flif"
    assert run_dir_name(None, ["+neuron_variant=lif", "paths.data_dir=/data"]) == "+neuron_variant-lif"
    assert run_dir_name("mine", ["neuron=flif"]) == "mine"


def test_non_finite_loss_names_epoch_and_step():
    class Broken(nn.Module):
        def forward(self, x):
            return torch.full((x.shape[0], x.shape[1], 2), float("nan"))

    module = SpikingClassifier(Broken(), 2, lambda p: torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1))
    batch = (torch.zeros(3, 2, 1), torch.zeros(3, dtype=torch.long))
    with pytest.raises(NonFiniteLossError, match=r"epoch 0, step 0"):
        module.training_step(batch, 0)


def _tiny_backbone_kwargs(name: str) -> dict:
    return {
        "dvsnet": {"channels": 4, "num_blocks": 2, "hidden": 16},
        "spikformer": {"embed_dim": 16, "num_heads": 2, "depth": 1},
        "resnet18": {},
    }.get(name, {})


@pytest.mark.parametrize("backbone", sorted(set(backbone_names("event")) - {"spikformer_imagenet"}))
@pytest.mark.parametrize("neuron", ["flif", "fif", "lif", "if", "sj_lif", "sj_if", "snntorch_leaky"])
def test_one_training_step_per_backbone_and_neuron(backbone, neuron, tmp_path):
    torch.manual_seed(0)
    size = 16
    neuron_kwargs = {"tau": 1.0} if neuron in ("sj_if", "fif") else {}
    model = build_backbone(
        backbone,
        num_classes=3,
        in_channels=2,
        input_size=(size, size),
        neuron=neuron,
        neuron_kwargs=neuron_kwargs,
        **_tiny_backbone_kwargs(backbone),
    )
    x = torch.rand(4, 2, 2, size, size) * 3  # [B, T, C, H, W]
    y = torch.tensor([0, 1, 2, 0])
    data = SplitDataModule(lambda: (TensorDataset(x, y),) * 3, batch_size=4)
    module = SpikingClassifier(model, 3, lambda p: torch.optim.SGD(p, lr=0.1))
    before = [p.detach().clone() for p in model.parameters()]
    trainer = L.Trainer(
        fast_dev_run=1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        accelerator="cpu",
    )
    trainer.fit(module, datamodule=data)
    changed = sum(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert changed >= len(before) // 2  # gradients reached most parameters


def test_firing_rates_of_a_test_pass_come_with_the_network_order_of_their_layers(tmp_path):
    """A test pass records its layers in the order the network registers them (``metrics.json`` sorts the rates by
    name): DVSNet's classifier neuron, applied last, sorts before its feature blocks."""
    torch.manual_seed(0)
    model = build_backbone("dvsnet", num_classes=3, in_channels=2, input_size=(16, 16), neuron="flif", channels=4)
    x, y = torch.rand(4, 2, 2, 16, 16) * 3, torch.tensor([0, 1, 2, 0])
    data = SplitDataModule(lambda: (TensorDataset(x, y),) * 3, batch_size=4)
    module = SpikingClassifier(model, 3, lambda p: torch.optim.SGD(p, lr=0.1))
    trainer = L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False, accelerator="cpu")
    trainer.test(module, datamodule=data, verbose=False)
    order = module.test_layer_order
    assert order == [name for name, _ in model.named_modules() if name in module.test_rates]
    assert sorted(order) == sorted(module.test_rates) and order != sorted(order) and order[-1].startswith("classifier")


# -- end to end through train.py, as a user runs it ------------------------------------------


def _metrics(cwd: Path, task: str = "train") -> dict:
    paths = list((cwd / "runs" / task).glob("*/metrics.json"))
    assert len(paths) == 1, paths
    return json.loads(paths[0].read_text())


@pytest.mark.slow
def test_default_experiment_end_to_end(tmp_path, data_root):
    proc = run_app("train.py", *TINY, f"paths.data_dir={data_root}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = _metrics(tmp_path)
    assert m["status"] == "complete"
    for key in (
        "val_acc_best",
        "val_acc_last",
        "test_acc",
        "test_acc_last",
        "firing_rates",
        "layer_order",
        "alphas",
        "versions",
        "config",
        "overrides",
        "seed",
        "wall_time_s",
        "device",
        "precision",
    ):
        assert key in m, key
    assert 0.0 <= m["test_acc"] <= 1.0
    assert m["config"]["neuron"]["name"] == "flif" and m["alphas"]
    assert all(0.0 <= r <= 1.0 for r in m["firing_rates"].values()) and m["firing_rates"]
    assert sorted(m["layer_order"]) == sorted(m["firing_rates"]) and m["layer_order"] != sorted(m["layer_order"])
    run_dir = next((tmp_path / "runs" / "train").glob("*/metrics.json")).parent
    assert m["best_checkpoint"] == "checkpoints/best.ckpt" and (run_dir / m["best_checkpoint"]).is_file()


def test_a_default_run_prints_its_progress_and_percentages_and_no_noise(tmp_path, data_root):
    # the default logger (csv) and progress bars, shrunk to seconds
    proc = run_app(
        "train.py",
        "+smoke=vision",
        "logger=csv",
        "trainer.enable_progress_bar=true",
        f"paths.data_dir={data_root}",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    for noise in ("litlogger", "LeafSpec", "FLOPs", "Warning"):  # Lightning's advert, torch's deprecation, summary
        assert noise not in out, noise
    assert "Epoch 0: 100%" in out and re.search(r"val/acc=\d+\.\d\d%", out)  # progress bars, in percent
    m = _metrics(tmp_path)
    assert re.search(rf"test acc at best val {100 * m['test_acc']:.2f} %", out) and m["metric_unit"] == "fraction"
    assert re.search(r"model: DVSNet, [\d,]+ parameters", out)
    # the csv logger writes into the run folder, which the record names relative to itself: it names no place
    assert m["config"]["logger"]["save_dir"] == "." and str(tmp_path) not in json.dumps(m)


def test_metrics_json_records_the_precision_lightning_ran(tmp_path, data_root):
    # Lightning runs 16-mixed on a CPU as bf16-mixed: the record says what ran, the config what was asked
    proc = run_app(
        "train.py",
        "+smoke=vision",
        "logger=none",
        "trainer.precision=16-mixed",
        f"paths.data_dir={data_root}",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = _metrics(tmp_path)
    ran = "16-mixed" if torch.cuda.is_available() else "bf16-mixed"
    assert (m["precision"], m["config"]["trainer"]["precision"]) == (ran, "16-mixed")
    assert ("trainer.precision=16-mixed runs as bf16-mixed" in proc.stdout + proc.stderr) == (ran == "bf16-mixed")


@pytest.mark.slow
def test_same_seed_same_metrics(tmp_path, data_root):
    results = []
    for run in ("a", "b"):
        cwd = tmp_path / run
        cwd.mkdir()
        proc = run_app("train.py", *TINY, f"paths.data_dir={data_root}", cwd=cwd)
        assert proc.returncode == 0, proc.stderr[-3000:]
        m = _metrics(cwd)
        results.append({k: m[k] for k in ("val_acc_best", "val_acc_last", "test_acc", "test_acc_last", "firing_rates")})
    assert results[0] == results[1]


def test_missing_dataset_is_one_clear_message(tmp_path):
    empty = tmp_path / "nodata"
    empty.mkdir()
    proc = run_app(
        "train.py", "dataset=dvsgesture", "backbone=dvsnet", *TINY, f"paths.data_dir={empty}", cwd=tmp_path, timeout=300
    )
    assert proc.returncode == 2
    err = proc.stderr
    assert "dvsgesture" in err.lower() and str(empty) in err
    assert "Traceback" not in err
    assert f"paths.data_dir is {empty}" in err and "`fsnn-fixtures DIR`" in err
    m = _metrics(tmp_path)
    assert m["status"] == "failed"


@pytest.mark.parametrize(
    "experiment,lacking",
    [
        # the sweep selects datasets itself, and through setups (global configs) that choose them
        (
            "table2_node_classification_smoke",
            "cora (Cora/), citeseer (CiteSeer/), pubmed (PubMed/), photo (Photo/), "
            "computers (Computers/), ogbn_arxiv (ogbn_arxiv/)",
        ),
        (
            "table1_neuromorphic_smoke",
            "nmnist (NMNIST/), dvslip (DVSLip/), dvsgesture (DVSGesture/), "
            "ncaltech101 (NCALTECH101/), hardvs (HARDVS/)",
        ),
    ],
)
def test_a_sweep_without_its_data_is_refused_once_before_any_job(tmp_path, data_root, experiment, lacking):
    data = tmp_path / "data"
    shutil.copytree(data_root / "Cora", data / "Cora")  # a dataset that is there is not listed
    proc = run_app("train.py", f"experiment={experiment}", f"paths.data_dir={data}", cwd=tmp_path, timeout=600)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(
        f"fsnn: error: paths.data_dir: expected a folder holding the sweep's datasets, got '{data}', which lacks "
        f"{lacking.replace('cora (Cora/), ', '')}. "
    )
    assert "fsnn-fixtures" in proc.stderr
    assert not list((tmp_path / "runs").iterdir())  # not one job's folder


# what a command answers without: help and a refused typo come from Hydra and the config tree alone
HEAVY = (
    "torch",
    "lightning",
    "torch_geometric",
    "spikingjelly",
    "snntorch",
    "matplotlib",
    "torchvision",
    "tonic",
    "scipy",
)
PROBE = """
import json, runpy, sys
sys.argv = [{script!r}, *{args!r}]
try:
    runpy.run_path({script!r}, run_name="__main__")
except SystemExit as stop:
    print(json.dumps({{"code": stop.code, "loaded": [m for m in {heavy!r} if m in sys.modules]}}))
"""


@pytest.mark.parametrize(
    "script,args,code",
    [
        ("train.py", ["--help"], 0),
        ("evaluate.py", ["--help"], 0),
        ("train.py", ["neuron=flf"], 2),
        ("train.py", ["-m", "neuron=flif,flf"], 2),
        ("train.py", ["trainer.max_epoch=3"], 2),
        ("evaluate.py", ["study=energi"], 2),
    ],
)
def test_help_and_typos_answer_before_the_heavy_libraries_load(tmp_path, script, args, code):
    probe = PROBE.format(script=str(CONF.parent / script), args=args, heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(CONF.parent)},
    )
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer == {"code": code, "loaded": []}, done.stderr[-2000:]
    assert (code == 0) == ("== Configuration groups ==" in done.stdout)
    assert code == 0 or done.stderr.count("fsnn: error:") == 1
    assert not (tmp_path / "runs").exists() and not (tmp_path / "outputs").exists()


def test_unknown_group_option_lists_choices(tmp_path):
    proc = run_app("train.py", "neuron=nosuch", cwd=tmp_path, timeout=120)
    assert proc.returncode != 0
    assert "flif" in proc.stderr and "nosuch" in proc.stderr


@pytest.mark.slow
def test_dvsgesture_fixture_epoch_and_evaluate(tmp_path, data_root):
    proc = run_app(
        "train.py",
        "dataset=dvsgesture",
        "backbone=dvsnet",
        "neuron=flif",
        "backbone.channels=8",
        "dataset.batch_size=4",
        "dataset.num_workers=0",
        "trainer.max_epochs=1",
        "logger=none",
        "trainer.enable_progress_bar=false",
        f"paths.data_dir={data_root}",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = _metrics(tmp_path)
    assert m["status"] == "complete" and m["epochs"] == 1
    run_dir = next((tmp_path / "runs" / "train").glob("*/metrics.json")).parent
    ev = run_app("evaluate.py", f"run_dir={run_dir}", f"paths.data_dir={data_root}", cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr[-3000:]
    assert json.loads((run_dir / "eval.json").read_text())["test_acc"] == pytest.approx(m["test_acc"])


@pytest.mark.slow
@pytest.mark.parametrize(
    "args,metric",
    [
        (["experiment=graph_demo"], "acc"),
        (["dataset=cora", "backbone=drsgnn", "backbone.pe=random_walk", "neuron.dt=0.1"], "acc"),
        (["dataset=photo", "backbone=msg", "neuron=fif"], "acc"),
        (["dataset=computers", "backbone=msg", "neuron=fif", "task=link"], "auc"),
        (["dataset=ogbn_arxiv", "backbone=sgcn", "neuron=sj_lif"], "acc"),
    ],
)
def test_graph_runs_on_fixtures(tmp_path, data_root, args, metric):
    proc = run_app(
        "train.py",
        *args,
        "trainer.max_epochs=1",
        "dataset.T=5",
        "dataset.test_repeats=2",
        "logger=none",
        "trainer.enable_progress_bar=false",
        f"paths.data_dir={data_root}",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    task = "graph_demo" if "experiment=graph_demo" in args else "train"
    m = _metrics(tmp_path, task)
    assert m["status"] == "complete" and m["metric"] == metric
    assert 0.0 <= m[f"test_{metric}"] <= 1.0 and m["firing_rates"]
    if metric == "acc":
        assert "test/energy_mJ" in m["test_metrics"] and m["test_metrics"]["test/energy_mJ"] > 0


@pytest.mark.slow
def test_table1_smoke_sweep_then_table(tmp_path, data_root):
    # the whole Table 1 sweep shape (every setting x neuron) on fixtures, then the table from its metrics
    proc = run_app(
        "train.py", "experiment=table1_neuromorphic_smoke", f"paths.data_dir={data_root}", cwd=tmp_path, timeout=1500
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = [json.loads(p.read_text()) for p in (tmp_path / "runs" / "table1_neuromorphic_smoke").glob("*/metrics.json")]
    assert len(runs) == 8 * 4 and all(r["status"] == "complete" for r in runs)
    from fsnn.report.tables import make_tables

    make_tables(tmp_path / "runs", tmp_path / "tables", echo=lambda *a, **k: None)
    assert (tmp_path / "tables" / "neuromorphic.md").exists() and (tmp_path / "tables" / "neuromorphic.tex").exists()
    md = (tmp_path / "tables" / "neuromorphic.md").read_text()
    assert one_run_cells(md) == 8 * 4  # every cell of Table 1 filled by exactly one smoke run

    # the energy table from the layer-wise count of one Spikformer run
    run = tmp_path / "runs" / "table1_neuromorphic_smoke" / "neuron-flif+seed-0+setup-dvsgesture_transformer"
    proc = run_app(
        "evaluate.py",
        f"run_dir={run}",
        "study=energy",
        f"paths.data_dir={data_root}",
        cwd=tmp_path,
        timeout=300,
        env={"FSNN_DATA_VERIFY": "0"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "E_overall" in proc.stdout and (run / "energy.json").exists()
    make_tables(tmp_path / "runs", tmp_path / "tables", echo=lambda *a, **k: None)
    energy = (tmp_path / "tables" / "energy.md").read_text()
    assert one_run_cells(energy) == 4  # the f-LIF row: synaptic, neuron, total, share


@pytest.mark.slow
def test_table2_smoke_sweep_then_table(tmp_path, data_root):
    proc = run_app(
        "train.py",
        "experiment=table2_node_classification_smoke",
        f"paths.data_dir={data_root}",
        cwd=tmp_path,
        timeout=1500,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = list((tmp_path / "runs" / "table2_node_classification_smoke").glob("*/metrics.json"))
    assert len(runs) == 6 * 2 * 4
    from fsnn.report.tables import make_tables

    make_tables(tmp_path / "runs", tmp_path / "tables", echo=lambda *a, **k: None)
    md = (tmp_path / "tables" / "node_classification.md").read_text()
    assert one_run_cells(md) == 6 * 2 * 4  # SGCN/DRSGNN x 4 neurons x 6 datasets, one seed each
