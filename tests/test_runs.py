"""Safe runs: every bad value refused before any work, checkpoints that resume bit-identically and refuse damage,
nothing run from a shared run folder, finished runs not redone, one process per run folder, the umask's file modes,
DDP with each sample counted once."""

from __future__ import annotations

import io
import json
import logging
import os
import pickle
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import CONF, ROOT, run_app
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import CompactHydraException
from interrupt import FillingUp
from omegaconf import OmegaConf
from torch.utils.data import TensorDataset
from zipdata import flip_tensor_byte

from fsnn.atomic import write_json_atomic
from fsnn.checks import ConfigError
from fsnn.data.datamodules import ShardSampler, SplitDataModule
from fsnn.suite.checkpoint import (
    CheckpointError,
    RunCheckpointIO,
    check_fits,
    load_checkpoint,
    result_config,
    save_checkpoint,
    strip_non_result,
)
from fsnn.suite.config import check_config
from fsnn.suite.evaluate import open_run
from fsnn.suite.run import run_guarded
from fsnn.suite.runfiles import RunLockedError, run_lock

# a tiny version of the default experiment: 2 epochs of 3 batches
TINY = [
    "trainer.max_epochs=2",
    "trainer.limit_train_batches=3",
    "trainer.limit_val_batches=1",
    "trainer.limit_test_batches=1",
    "trainer.enable_progress_bar=false",
    "logger=none",
    "dataset.batch_size=16",
]

# (override, the key the error names): bad values of every kind a command line can give
BAD_VALUES = [
    *[(f"neuron.alpha={v}", "neuron.alpha") for v in ("0", "1.5", "-1", "nan", "abc", "inf", "null", "true")],
    ("neuron.tau=0", "neuron.tau"),
    ("neuron.tau=-1", "neuron.tau"),
    ("neuron.tau=inf", "neuron.tau"),
    ("neuron.tau=1e-09", "neuron.tau"),
    ("neuron.tau=0.5", "neuron.tau"),  # below f-LIF's stability bound
    ("neuron.memory=0", "neuron.memory"),
    ("neuron.memory=1.5", "neuron.memory"),
    ("neuron.method=xyz", "neuron.method"),
    ("neuron.threshold=-1", "neuron.threshold"),
    ("neuron.threshold=0", "neuron.threshold"),
    ("neuron.dt=0", "neuron.dt"),
    ("neuron.surrogate=foo", "neuron.surrogate"),
    ("neuron.surrogate_scale=0", "neuron.surrogate_scale"),
    ("neuron.reset=foo", "neuron.reset"),
    ("neuron.engine=foo", "neuron.engine"),
    ("neuron.learn_alpha=yes", "neuron.learn_alpha"),
    *[(f"dataset.T={v}", "dataset.T") for v in ("0", "-3", "2.5", "abc", "'8'")],
    ("dataset.size=0", "dataset.size"),
    ("dataset.size=[32,0]", "dataset.size"),
    ("dataset.size=[8,8,8]", "dataset.size"),
    ("dataset.val_fraction=1.5", "dataset.val_fraction"),
    ("dataset.val_fraction=0", "dataset.val_fraction"),
    ("dataset.batch_size=0", "dataset.batch_size"),
    ("dataset.batch_size=-2", "dataset.batch_size"),
    ("dataset.num_workers=-1", "dataset.num_workers"),
    ("dataset.name=nosuch", "dataset.name"),
    ("backbone.channels=0", "backbone.channels"),
    ("optimizer.lr=-1", "optimizer.lr"),
    ("optimizer.lr=0", "optimizer.lr"),
    ("optimizer.lr=abc", "optimizer.lr"),
    ("optimizer.weight_decay=-1", "optimizer.weight_decay"),
    ("optimizer._target_=os.system", "optimizer._target_"),
    ("+backbone._target_=shutil.rmtree", "backbone._target_"),
    ("seed=abc", "seed"),
    ("seed=-1", "seed"),
    ("seed=1.5", "seed"),
    ("task=nonsense", "task"),
    ("force=maybe", "force"),
    ("trainer.max_epochs=abc", "trainer.max_epochs"),
    ("trainer.max_epochs=-1", "trainer.max_epochs"),
    ("trainer.max_epochs=0", "trainer.max_epochs"),
    ("trainer.devices=0", "trainer.devices"),
    ("trainer.num_nodes=0", "trainer.num_nodes"),
    ("trainer.strategy=foo", "trainer.strategy"),
    ("trainer.precision=foo", "trainer.precision"),
    ("trainer.accelerator=tpu", "trainer.accelerator"),
    ("trainer.limit_train_batches=-1", "trainer.limit_train_batches"),
    ("trainer.limit_val_batches=1.5", "trainer.limit_val_batches"),
    ("trainer.gradient_clip_val=-1", "trainer.gradient_clip_val"),
]


def _config_error(cfg) -> str:
    with pytest.raises(ConfigError) as error:
        check_config(cfg)
    return str(error.value)


@pytest.mark.parametrize("override,key", BAD_VALUES)
def test_every_bad_value_is_one_line_naming_its_key(compose_cfg, tmp_path, override, key):
    message = _config_error(compose_cfg(override, f"paths.results_dir={tmp_path}"))
    value = override.split("=", 1)[1].strip("'")
    assert message.startswith(f"{key}: expected ") and "\n" not in message, message
    got = message.rsplit(", got ", 1)[1].replace(" ", "")  # a list is shown as Python writes it: [32, 0]
    assert got in (value, repr(value)) or (value, got) in (("null", "None"), ("true", "True")), message


def test_good_values_pass(compose_cfg, tmp_path):
    for overrides in (
        [],
        [
            "neuron.alpha=1",
            "neuron.memory=4",
            "dataset.size=[32,48]",
            "trainer.strategy=ddp",
            "trainer.devices=auto",
            "trainer.limit_val_batches=0.5",
            "scheduler=none",
            "optimizer=adamw",
        ],
        ["dataset=cora", "backbone=sgcn", "neuron=sj_lif"],
        ["dataset=computers", "backbone=msg", "task=link", "logger=wandb"],
    ):
        check_config(compose_cfg(*overrides, f"paths.results_dir={tmp_path}"))


def test_paths_and_hardware_are_checked(compose_cfg, tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder")
    assert _config_error(compose_cfg(f"paths.data_dir={a_file}")) == (
        f"paths.data_dir: expected a folder, got {str(a_file)!r} (a file)"
    )
    assert _config_error(compose_cfg(f"paths.results_dir={a_file}/results")).startswith(
        f"paths.results_dir: expected a writable folder, got {str(a_file / 'results')!r}"
    )
    assert _config_error(compose_cfg("paths.results_dir=/proc/fsnn_results")).startswith(
        "paths.results_dir: expected a writable folder"
    )
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert "paths.results_dir: expected a writable folder" in _config_error(
            compose_cfg(f"paths.results_dir={locked}")
        )
    if not torch.cuda.is_available():
        assert _config_error(compose_cfg("trainer.accelerator=gpu", f"paths.results_dir={tmp_path}")).startswith(
            "trainer.accelerator: expected auto or cpu (no GPU is visible"
        )


@pytest.mark.parametrize(
    "overrides,message",
    [
        (
            ["neuron.tau=1e-09"],
            r"neuron.tau: expected a number > 0.857805 \(at or below it the discrete f-LIF with "
            r"alpha=0.5, dt=1, method=pred grows without bound, to inf and NaN; the bound scales as "
            r"dt\^alpha\), got 1e-09",
        ),
        (["neuron.dt=100"], r"neuron.tau: expected a number > 8.578.*dt=100.*, got 2.0"),  # the dt / tau ratio
        (["neuron=lif", "neuron.tau=0.5"], r"neuron.tau: expected a number > 0.5 .*alpha=1,.*, got 0.5"),
        (["neuron.memory=3", "neuron.tau=0.7"], r"neuron.tau: expected a number > 0.717282 .*, got 0.7"),
        (
            ["neuron.engine=triton"],
            r"neuron.engine: expected auto, direct or soe \(the Triton kernels need a CUDA GPU or "
            r"TRITON_INTERPRET=1, and no GPU is visible\), got 'triton'",
        ),
    ],
)
def test_values_that_cannot_work_are_refused_with_the_config(compose_cfg, tmp_path, monkeypatch, overrides, message):
    from fsnn.neurons import triton_kernels as kernels

    monkeypatch.setattr(kernels, "interpreting", lambda: False)  # the tests run the kernels through the interpreter
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    found = _config_error(compose_cfg(*overrides, f"paths.results_dir={tmp_path}"))
    assert re.fullmatch(message, found), found
    check_config(compose_cfg("neuron.tau=0.86", f"paths.results_dir={tmp_path}"))  # just above the bound
    check_config(compose_cfg("neuron=fif", "neuron.tau=1e-09", f"paths.results_dir={tmp_path}"))  # no leak, no bound


@pytest.mark.skipif(torch.cuda.is_available(), reason="the Triton kernels run on this machine's GPU")
def test_triton_engine_without_a_gpu_exits_2_with_one_line_before_any_folder_is_made(tmp_path):
    proc = run_app("train.py", "neuron.engine=triton", cwd=tmp_path, env={"TRITON_INTERPRET": "0"}, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        "fsnn: error: neuron.engine: expected auto, direct or soe (the Triton kernels need a CUDA GPU or "
        "TRITON_INTERPRET=1, and no GPU is visible), got 'triton'"
    ]
    assert not (tmp_path / "runs").exists()


def test_result_config_leaves_out_what_does_not_change_a_result(compose_cfg):
    # the keys left out of a run folder's name are the keys a finished run is not compared on
    from fsnn.suite.run import run_dir_name

    ignored = [
        "paths.data_dir=/elsewhere",
        "dataset.num_workers=3",
        "logger=wandb",
        "logger.mode=online",
        "force=true",
        "trainer.enable_progress_bar=false",
        "study=energy",
        "robustness=events",
    ]
    assert run_dir_name(None, ignored + ["launcher=joblib", "experiment=graph_demo"]) == "default"
    assert run_dir_name(None, ["seed=1", *ignored, "neuron=lif"]) == "neuron-lif+seed-1"
    base = result_config(compose_cfg())
    assert result_config(compose_cfg(*ignored)) == base
    assert result_config(compose_cfg("neuron.tau=3.0")) != base
    assert base["optimizer"]["lr"] == 5e-3 and base["scheduler"]["T_max"] == 10  # resolved


@pytest.mark.parametrize("blank", ["", "  "])
def test_an_environment_variable_set_to_nothing_counts_as_unset(compose_cfg, monkeypatch, tmp_path, blank):
    from fsnn.records import results_root

    for name in ("FSNN_RESULTS", "FSNN_DATA", "FSNN_SLURM_PARTITION", "WANDB_MODE"):
        monkeypatch.setenv(name, blank)
    cfg = compose_cfg("launcher=slurm", "logger=wandb")
    assert (cfg.paths.results_dir, cfg.paths.data_dir) == ("./runs", "./data")  # not '' (runs in /train/...)
    assert cfg.hydra.launcher.partition is None and cfg.logger.mode == "offline"
    assert results_root() == Path("results")
    monkeypatch.setenv("FSNN_RESULTS", str(tmp_path))
    assert compose_cfg().paths.results_dir == str(tmp_path) and results_root() == tmp_path
    # given blank on purpose, it is refused by name
    assert _config_error(compose_cfg("paths.results_dir=''")) == (
        "paths.results_dir: expected a folder (a path, not blank), got ''"
    )


def _folder(*overrides: str) -> str:
    """The run folder name ``train.py <overrides>`` gets (a sweep's job: the overrides the sweeper gives it), from
    the config Hydra composes, as the ``run_dir`` resolver names it."""
    from fsnn.suite.run import run_dir_name

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides), return_hydra_config=True)
        return run_dir_name(cfg.get("run_name"), cfg.hydra.overrides.task, cfg)


def test_one_configuration_one_folder_whichever_default_values_are_given():
    # the seed is always named; a key at its default value is the configuration without it
    assert _folder() == _folder("seed=0") == _folder("neuron=flif", "seed=0") == "seed-0"
    assert _folder("neuron=lif") == "neuron-lif+seed-0" and _folder("seed=3") == "seed-3"
    # +smoke=vision sets its sweep's seed: a single run and the sweep's job (seed=0 given) are one folder
    assert _folder("+smoke=vision") == _folder("+smoke=vision", "seed=0") == "+smoke-vision+seed-0"
    # a key the experiment sweeps is named at its default too, as every job of the sweep names it
    cell = ["experiment=table2_node_classification", "dataset=cora", "backbone=sgcn", "neuron=flif", "seed=0"]
    assert _folder(*cell) == "backbone-sgcn+dataset-cora+neuron-flif+seed-0"
    assert _folder(*cell, "recipe=matched") == _folder(*cell)  # the default recipe
    assert _folder(*cell, "recipe=authors") == "backbone-sgcn+dataset-cora+neuron-flif+recipe-authors+seed-0"


def test_every_committed_run_is_found_by_its_command():
    """Rerunning the command of a committed run (its recorded overrides) names the run's own folder, and the config
    it composes is the recorded one (keys added to fsnn's configs since aside), so the rerun finds it finished.
    Records whose overrides differ only in the values of swept keys share one composition."""
    from fsnn.suite.run import folder_keys, rendered_run_name
    from fsnn.suite.runfiles import tree_changes

    groups: dict[tuple, list[dict]] = {}
    for path in sorted((ROOT / "results").glob("*/*/metrics.json")):
        record = json.loads(path.read_text())
        keys = [o.split("=")[0] for o in record["overrides"]]
        swept = (
            "seed",
            "dataset",
            "backbone",
            "neuron",
            "+neuron_variant",
            "+recipe_switch",
            "+cue_variant",
            "dataset.delay",
            "dataset.permute",
            "neuron.alpha",
            "neuron.tau",
            "tau_lr_scale",
        )
        shape = (*sorted(keys), *sorted(o for o, key in zip(record["overrides"], keys) if key not in swept))
        groups.setdefault(shape, []).append({**record, "folder": path.parent.name})
    runs = sum(map(len, groups.values()))
    # grouping is what keeps this test fast: one composition per command shape, many runs per shape
    assert runs > 1000 and len(groups) * 20 < runs, (runs, len(groups))
    for records in groups.values():
        first = records[0]
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            cfg = compose("config", overrides=first["overrides"], return_hydra_config=True)
            keys = folder_keys(cfg, cfg.hydra)
            changes = tree_changes(strip_non_result(first["config"]), result_config(cfg), added=False)
            assert not changes, (first["folder"], changes)
        for record in records:
            assert rendered_run_name(None, record["overrides"], *keys) == record["folder"], record["overrides"]
    GlobalHydra.instance().clear()


@pytest.mark.parametrize(
    "args", [["neuron.alpha=abc"], ["dataset.T=2.5"], ["trainer.max_epochs=-1"], ["paths.results_dir=a_file/results"]]
)
def test_bad_value_exits_2_with_one_line_before_any_folder_is_made(tmp_path, args):
    (tmp_path / "a_file").write_text("")
    proc = run_app("train.py", *args, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fsnn: error: ") and "Traceback" not in proc.stderr + proc.stdout
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*"))


def test_evaluate_checks_its_values_before_hydra_makes_a_folder(tmp_path):
    proc = run_app("evaluate.py", f"run_dir={tmp_path / 'nosuch'}", cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and proc.stderr.startswith("fsnn: error: run_dir: expected the folder of a train.py")
    assert not (tmp_path / "nosuch").exists()


def test_a_bug_in_a_multirun_job_is_one_line_and_its_traceback_goes_to_the_log(compose_cfg, tmp_path, capsys):
    from hydra.core.hydra_config import HydraConfig

    HydraConfig.instance().set_config(compose_cfg("hydra.mode=MULTIRUN"))
    handler = logging.FileHandler(tmp_path / "train.log")
    logging.getLogger().addHandler(handler)

    def broken(cfg):
        raise RuntimeError("a bug")

    try:
        with pytest.raises(CompactHydraException, match="fsnn: error: RuntimeError: a bug"):
            run_guarded(broken, None)
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
        HydraConfig.instance().cfg = None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(tmp_path / "train.log") in err and "Traceback" not in err
    assert "Traceback" in (tmp_path / "train.log").read_text() and "a bug" in (tmp_path / "train.log").read_text()


# -- checkpoints ----------------------------------------------------------------------------------------------------

CONFIG = {"neuron": {"name": "flif", "alpha": 0.5}, "seed": 0}


def _checkpoint(path: Path, config=CONFIG) -> dict:
    state = {
        "state_dict": {"w": torch.randn(64, 32), "b": torch.zeros(32)},
        "epoch": 3,
        "global_step": 12,
        "callbacks": {"ModelCheckpoint": {"best_model_score": torch.tensor(0.5), "dirpath": str(path.parent)}},
        "loops": {"fit_loop": {"epoch_progress": {"total": {"ready": 4}}}},
    }
    save_checkpoint(state, path, config)
    return state


def test_checkpoint_round_trip(tmp_path):
    state = _checkpoint(tmp_path / "last.ckpt")
    loaded = load_checkpoint(tmp_path / "last.ckpt", CONFIG)
    assert torch.equal(loaded["state_dict"]["w"], state["state_dict"]["w"]) and loaded["epoch"] == 3
    assert "fsnn" not in loaded and not list(tmp_path.glob(".*tmp*"))


class Payload:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def _damage(path: Path, how: str, tmp_path: Path) -> None:
    if how == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "random bytes":
        path.write_bytes(os.urandom(path.stat().st_size))
    elif how == "bit flip in tensor data":
        flip_tensor_byte(path)
    elif how == "another run's":
        _checkpoint(path, {**CONFIG, "seed": 1})
    elif how == "not written by fsnn":
        torch.save({"state_dict": {"w": torch.zeros(2)}}, path)
    elif how == "pickle payload":
        path.write_bytes(pickle.dumps({"state_dict": Payload(str(tmp_path / "PAYLOAD_RAN"))}))


@pytest.mark.parametrize(
    "how,problem",
    [
        ("truncated", "cannot be read"),
        ("empty", "cannot be read"),
        ("random bytes", "cannot be read"),
        ("bit flip in tensor data", "does not match the digest"),
        ("another run's", r"belongs to another run .*seed: 1 -> 0"),
        ("not written by fsnn", "no fsnn integrity record"),
        ("pickle payload", "cannot be read"),
    ],
)
def test_damaged_checkpoint_is_one_error_naming_the_file(tmp_path, how, problem):
    path = tmp_path / "last.ckpt"
    _checkpoint(path)
    _damage(path, how, tmp_path)
    with pytest.raises(CheckpointError, match=problem) as error:
        load_checkpoint(path, CONFIG)
    assert str(path) in str(error.value) and "\n" not in str(error.value)
    assert not (tmp_path / "PAYLOAD_RAN").exists()  # weights_only: no code runs


def test_weights_that_do_not_fit_the_model_built_now_are_one_error_naming_the_tensor(tmp_path):
    path = tmp_path / "best.ckpt"
    model = torch.nn.Sequential(torch.nn.Linear(3, 2))
    for state, problem in (
        (
            {"0.weight": torch.zeros(2, 5), "0.bias": torch.zeros(2)},
            r"its 0.weight has shape \[2, 5\] where the model built now has \[2, 3\]",
        ),
        ({"0.weight": torch.zeros(2, 3)}, "it lacks 0.bias"),
        ({**model.state_dict(), "1.weight": torch.zeros(1)}, "it holds 1.weight"),
    ):
        with pytest.raises(CheckpointError, match=problem) as error:
            check_fits(model, {"state_dict": state}, path)
        assert str(error.value).startswith(f"checkpoint {path}: ") and "force=true" in str(error.value)
    check_fits(model, {"state_dict": model.state_dict()}, path)
    # what Lightning resumes and tests from goes through the same check
    save_checkpoint({"state_dict": {"0.weight": torch.zeros(2, 5), "0.bias": torch.zeros(2)}}, path, CONFIG)
    with pytest.raises(CheckpointError, match="its 0.weight has shape"):
        RunCheckpointIO(CONFIG, model).load_checkpoint(path)


def test_evaluate_on_data_with_another_feature_count_is_one_error_naming_it(tmp_path, compose_cfg, data_root):
    """A run evaluated where its data changed shape since training (here its first layer saved for 1000 features,
    as the data once had): one error naming the tensor and both shapes, no load_state_dict traceback."""
    from fsnn.suite.evaluate import evaluate_run
    from fsnn.suite.tasks import build_task

    cfg = compose_cfg("dataset=cora", "backbone=sgcn", "logger=none", "dataset.T=2", f"paths.data_dir={data_root}")
    cfg = OmegaConf.create({k: v for k, v in cfg.items() if k != "hydra"})
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    OmegaConf.save(cfg, run / ".hydra" / "config.yaml")
    state = build_task(cfg).module.state_dict()
    first = next(k for k, v in state.items() if v.dim() == 2 and v.shape[1] == 1433)
    state[first] = torch.zeros(state[first].shape[0], 1000)
    save_checkpoint({"state_dict": state}, run / "checkpoints" / "best.ckpt", result_config(cfg))
    with pytest.raises(
        CheckpointError,
        match=rf"its {first} has shape \[\d+, 1000\] where the model built now has "
        r"\[\d+, 1433\]: the data or fsnn changed",
    ) as error:
        evaluate_run(run, data_dir=str(data_root))
    assert "\n" not in str(error.value) and not (run / "eval.json").exists()


def test_a_shared_run_folder_builds_nothing_outside_fsnn(tmp_path, compose_cfg):
    # `_target_: shutil.copyfile` in a run folder's .hydra/config.yaml once copied a file when evaluated
    cfg = OmegaConf.create({k: v for k, v in compose_cfg("logger=none").items() if k != "hydra"})
    marker = tmp_path / "COPIED"
    cfg.optimizer = {"_target_": "shutil.copyfile", "src": str(tmp_path / "a"), "dst": str(marker)}
    (tmp_path / "a").write_text("x")
    (tmp_path / "run" / ".hydra").mkdir(parents=True)
    OmegaConf.save(cfg, tmp_path / "run" / ".hydra" / "config.yaml")
    with pytest.raises(
        ConfigError,
        match=r"config.yaml: optimizer._target_: expected one of torch.optim.Adam, "
        r"torch.optim.AdamW, torch.optim.SGD, got 'shutil.copyfile'",
    ):
        open_run(tmp_path / "run")
    assert not marker.exists()


@pytest.mark.parametrize("payload", ["pickle", "target"])
def test_energy_study_runs_no_payload_from_a_run_folder(tmp_path, compose_cfg, payload):
    cfg = OmegaConf.create({k: v for k, v in compose_cfg("logger=none").items() if k != "hydra"})
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    marker = tmp_path / "PAYLOAD_RAN"
    if payload == "target":
        cfg.scheduler = {"_target_": "pathlib.Path.touch", "self": str(marker)}
    else:
        (run / "checkpoints" / "best.ckpt").write_bytes(pickle.dumps(Payload(str(marker))))
    (run / ".hydra").mkdir()
    OmegaConf.save(cfg, run / ".hydra" / "config.yaml")
    proc = run_app("evaluate.py", f"run_dir={run}", "study=energy", cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and not marker.exists(), proc.stderr[-2000:]
    assert proc.stderr.startswith("fsnn: error: ") and proc.stderr.count("\n") == 1
    assert ("best.ckpt" if payload == "pickle" else "scheduler._target_") in proc.stderr


# -- the training order, DDP shards ---------------------------------------------------------------------------------


def test_training_order_depends_only_on_seed_and_epoch():
    data = TensorDataset(torch.arange(20))

    def order(seed: int, epoch: int, warm_up: int = 0) -> list[int]:
        module = SplitDataModule(lambda: (data, data, data), batch_size=4, seed=seed)
        loader = module.train_dataloader()
        for e in range(warm_up):  # epochs iterated before, as an uninterrupted run does
            loader.sampler.set_epoch(e)
            list(loader)
        loader.sampler.set_epoch(epoch)  # what Lightning does at each epoch's start
        return torch.cat([b[0] for b in loader]).tolist()

    assert order(0, 2) == order(0, 2, warm_up=2)  # a resumed run sees the uninterrupted run's order
    assert sorted(order(0, 2)) == list(range(20)) and order(0, 2) != order(0, 1) and order(0, 2) != order(1, 2)
    val = SplitDataModule(lambda: (data, data, data), batch_size=4, seed=0).val_dataloader()
    assert torch.cat([b[0] for b in val]).tolist() == list(range(20))


def test_each_sample_is_evaluated_on_exactly_one_rank():
    for n, world in ((10, 3), (2, 4), (7, 1)):
        shards = [list(ShardSampler(n, world, rank)) for rank in range(world)]
        assert sorted(i for shard in shards for i in shard) == list(range(n))
        assert [len(ShardSampler(n, world, rank)) for rank in range(world)] == [len(s) for s in shards]


# -- the run folder: lock, file modes -------------------------------------------------------------------------------

HOLD = """
import sys, time
from pathlib import Path
from fsnn.suite.runfiles import run_lock
with run_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(600)
"""


def test_run_lock_names_its_holder_and_is_taken_over_when_the_holder_dies(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunLockedError, match=rf"run folder {tmp_path} is in use by pid {holder.pid} on "):
            with run_lock(tmp_path):
                pytest.fail("a second process got the lock")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with run_lock(tmp_path):  # the killed holder's lock is stale: taken over
        assert json.loads((tmp_path / ".lock").read_text())["pid"] == os.getpid()


def test_files_get_the_umask_s_mode(tmp_path):
    old = os.umask(0o002)
    try:
        write_json_atomic(tmp_path / "metrics.json", {"status": "complete"})
        _checkpoint(tmp_path / "last.ckpt")
        with run_lock(tmp_path):
            modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    finally:
        os.umask(old)
    assert modes == {"metrics.json": 0o664, "last.ckpt": 0o664, ".lock": 0o664}
    assert not (tmp_path / ".lock").exists()  # removed when the block ends


# -- end to end, through train.py / evaluate.py ---------------------------------------------------------------------


def _run_dir(cwd: Path, task: str = "train") -> Path:
    found = [p.parent for p in (cwd / "runs" / task).glob("*/metrics.json")]
    assert len(found) == 1, found
    return found[0]


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder): (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()}


def _umask(mask: int):
    return lambda: os.umask(mask)


def _train(cwd: Path, *args: str, data_root: Path, **kwargs) -> subprocess.CompletedProcess:
    return run_app("train.py", *TINY, f"paths.data_dir={data_root}", *args, cwd=cwd, **kwargs)


@pytest.mark.slow
def test_finished_run_is_not_redone(tmp_path, data_root):
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT)}
    first = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), *TINY, f"paths.data_dir={data_root}", "run_name=mine"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        preexec_fn=_umask(0o002),
    )
    assert first.returncode == 0, first.stderr[-3000:]
    run = _run_dir(tmp_path)
    m = json.loads((run / "metrics.json").read_text())
    assert m["status"] == "complete" and m["split_sizes"] == {"train": 1294, "val": 144, "test": 359}
    # created with the umask's mode (0664 under 002), never 0600
    assert {oct(p.stat().st_mode & 0o777) for p in run.rglob("*") if p.is_file()} == {"0o664"}
    before = _snapshot(run)
    again = _train(tmp_path, "run_name=mine", data_root=data_root)
    assert again.returncode == 0 and "is finished" in again.stdout and str(run / "metrics.json") in again.stdout
    assert _snapshot(run) == before  # nothing written, not even .hydra/ or the log
    # another config in the same folder: refused, nothing changed
    other = _train(tmp_path, "run_name=mine", "neuron.tau=3.0", data_root=data_root)
    assert other.returncode == 2 and other.stderr.count("\n") == 1, other.stderr[-2000:]
    assert "holds a finished run of another config (neuron.tau: 2.0 -> 3.0)" in other.stderr
    assert _snapshot(run) == before
    # a damaged checkpoint of a finished run is named; metrics.json is kept
    best = (run / "checkpoints" / "best.ckpt").read_bytes()
    (run / "checkpoints" / "best.ckpt").write_bytes(os.urandom(len(best)))
    damaged = _train(tmp_path, "run_name=mine", data_root=data_root)
    assert (
        damaged.returncode == 2 and f"checkpoint {run / 'checkpoints' / 'best.ckpt'}: cannot be read" in damaged.stderr
    )
    assert (
        "metrics.json is kept" in damaged.stderr
        and (run / "metrics.json").read_bytes() == before[Path("metrics.json")][1]
    )
    ev = run_app("evaluate.py", f"run_dir={run}", f"paths.data_dir={data_root}", cwd=tmp_path)
    assert ev.returncode == 2 and "best.ckpt: cannot be read" in ev.stderr and "checkpoint=last" in ev.stderr
    assert "Traceback" not in damaged.stderr + ev.stderr
    # force=true trains again, keeping every previous generation beside the new one, numbered
    (run / "checkpoints" / "best.ckpt").write_bytes(best)
    for generation in (1, 2):
        forced = _train(tmp_path, "run_name=mine", "force=true", data_root=data_root)
        assert forced.returncode == 0, forced.stderr[-3000:]
        assert f"is kept in {run / f'previous.{generation}'}" in forced.stderr + forced.stdout
        new = json.loads((run / "metrics.json").read_text())
        assert new["status"] == "complete" and new["test_acc"] == m["test_acc"]  # deterministic
    assert (run / "previous.1" / "metrics.json").read_bytes() == before[Path("metrics.json")][1]
    assert (run / "previous.1" / "checkpoints" / "last.ckpt").read_bytes() == before[Path("checkpoints/last.ckpt")][1]
    assert json.loads((run / "previous.2" / "metrics.json").read_text())["status"] == "complete"


@pytest.mark.slow
@pytest.mark.parametrize("when", ["mid-epoch", "between-epochs", "while-writing"])
def test_kill_minus_nine_then_rerun_is_bit_identical(tmp_path, data_root, when):
    # the Poisson input spikes of a graph run draw from the global RNG: its states must be resumed too
    args = [
        "experiment=graph_demo",
        "trainer.max_epochs=3",
        "logger=none",
        "trainer.enable_progress_bar=false",
        f"paths.data_dir={data_root}",
    ]
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT)}
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    straight.mkdir(), killed.mkdir()
    assert run_app("train.py", *args, cwd=straight).returncode == 0
    crash = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "interrupt.py"), when, *args],
        cwd=killed,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert crash.returncode == -signal.SIGKILL, crash.stderr[-3000:]
    run = _run_dir(killed, "graph_demo")
    interrupted = json.loads((run / "metrics.json").read_text())
    assert interrupted["status"] == "running"
    assert load_checkpoint(run / "checkpoints" / "last.ckpt")["epoch"] == 0  # the previous file, whole
    resumed = run_app("train.py", *args, cwd=killed)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert not [p.name for p in (run / "checkpoints").iterdir() if p.name not in ("last.ckpt", "best.ckpt")]
    a, b = (json.loads((_run_dir(c, "graph_demo") / "metrics.json").read_text()) for c in (straight, killed))
    assert b["resumed_from"] and b["epochs"] == a["epochs"] == 3
    for key in (
        "val_acc_best",
        "val_acc_last",
        "test_acc",
        "test_acc_last",
        "test_metrics",
        "firing_rates",
        "layer_order",
        "split_sizes",
        "alphas",
    ):
        assert a[key] == b[key], key
    for name in ("last.ckpt", "best.ckpt"):
        x, y = (load_checkpoint(_run_dir(c, "graph_demo") / "checkpoints" / name) for c in (straight, killed))
        assert x["epoch"] == y["epoch"]
        assert x["state_dict"].keys() == y["state_dict"].keys()
        assert all(torch.equal(x["state_dict"][k], y["state_dict"][k]) for k in x["state_dict"]), name
        moments = [
            (x["optimizer_states"][0]["state"][i][m], y["optimizer_states"][0]["state"][i][m])
            for i in x["optimizer_states"][0]["state"]
            for m in ("exp_avg", "exp_avg_sq")
        ]
        assert all(torch.equal(u, v) for u, v in moments), name


@pytest.mark.slow
def test_damaged_last_checkpoint_of_an_interrupted_run_is_named(tmp_path, data_root):
    args = [*TINY, f"paths.data_dir={data_root}"]
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [sys.executable, str(ROOT / "tests" / "interrupt.py"), "between-epochs", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=900,
    )
    run = _run_dir(tmp_path)
    last = run / "checkpoints" / "last.ckpt"
    good = last.read_bytes()
    for how in ("bit flip in tensor data", "truncated"):
        last.write_bytes(good)
        _damage(last, how, tmp_path)
        before = _snapshot(run / "checkpoints")
        proc = run_app("train.py", *args, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr[-3000:]
        assert proc.stderr.startswith(f"fsnn: error: checkpoint {last}: ") and "delete it and rerun" in proc.stderr
        assert _snapshot(run / "checkpoints") == before  # nothing deleted or rewritten
        record = json.loads((run / "metrics.json").read_text())
        assert record["status"] == "failed" and str(last) in record["error"] and record["config"]["seed"] == 0
    last.unlink()
    proc = run_app("train.py", *args, cwd=tmp_path)  # what the message says: resumes from best.ckpt
    assert proc.returncode == 0 and json.loads((run / "metrics.json").read_text())["status"] == "complete"


@pytest.mark.slow
def test_a_second_process_on_the_same_run_folder_is_refused(tmp_path, data_root):
    # the first run is long enough to be still training whatever the machine's load; it is killed afterwards
    args = [sys.executable, str(ROOT / "train.py"), *TINY, "trainer.max_epochs=100000", f"paths.data_dir={data_root}"]
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 600
        while time.time() < deadline and not list((tmp_path / "runs").rglob("checkpoints/last.ckpt")):
            assert first.poll() is None, first.stderr.read()[-3000:]
            time.sleep(0.2)
        second = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert first.poll() is None  # still training while the second was refused
    finally:
        first.kill()
        first.wait(timeout=60)
    assert second.returncode == 2 and second.stderr.count("\n") == 1, second.stderr[-3000:]
    assert f"is in use by pid {first.pid} on " in second.stderr
    run = _run_dir(tmp_path)
    assert json.loads((run / "metrics.json").read_text())["status"] == "running"  # the second changed nothing
    with run_lock(run):  # the killed holder's lock is taken over
        assert json.loads((run / ".lock").read_text())["pid"] == os.getpid()


@pytest.mark.slow
def test_ddp_two_cpu_ranks_write_one_metrics_json_of_the_whole_test_split(tmp_path, data_root):
    proc = run_app(
        "train.py",
        "trainer.max_epochs=1",
        "trainer.limit_train_batches=3",
        "trainer.accelerator=cpu",
        "trainer.strategy=ddp",
        "trainer.devices=2",
        "trainer.enable_progress_bar=false",
        "logger=none",
        f"paths.data_dir={data_root}",
        cwd=tmp_path,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = list((tmp_path / "runs").rglob("metrics.json"))
    assert len(runs) == 1
    m = json.loads(runs[0].read_text())
    assert m["status"] == "complete" and m["world_size"] == 2 and m["config"]["trainer"]["strategy"] == "ddp"
    assert m["split_sizes"]["test"] == 359
    ev = run_app(
        "evaluate.py",
        f"run_dir={runs[0].parent}",
        f"paths.data_dir={data_root}",
        "accelerator=cpu",
        cwd=tmp_path,
        timeout=600,
    )
    assert ev.returncode == 0, ev.stderr[-3000:]
    single = json.loads((runs[0].parent / "eval.json").read_text())
    # every test sample counted once: the 2-rank accuracy is the single-process accuracy of the same checkpoint
    assert m["test_acc"] == pytest.approx(single["test_acc"], abs=1e-6)
    assert m["test_metrics"]["test/loss"] == pytest.approx(single["test_metrics"]["test/loss"], rel=1e-5)


# -- the run lifecycle: folders that travel, generations, signals, the lock for tools, unwritable files -------------


def test_checkpoint_state_names_its_files_relative_to_its_folder(tmp_path):
    from fsnn.suite.checkpoint import RelativeModelCheckpoint

    old, new = tmp_path / "old" / "checkpoints", tmp_path / "new" / "checkpoints"
    writer = RelativeModelCheckpoint(dirpath=old, filename="best", monitor="val/acc", mode="max")
    writer.best_model_path = writer.kth_best_model_path = str(old / "best.ckpt")
    writer.best_k_models = {str(old / "best.ckpt"): torch.tensor(0.5)}
    writer.best_model_score = torch.tensor(0.5)
    state = writer.state_dict()
    assert str(tmp_path) not in repr(state) and state["best_model_path"] == "best.ckpt"
    # the state key is ModelCheckpoint's: checkpoints written before restore into it, and the other way round
    from lightning.pytorch.callbacks import ModelCheckpoint

    assert writer.state_key == ModelCheckpoint(dirpath=old, filename="best", monitor="val/acc", mode="max").state_key
    for stored in (
        state,
        {
            **state,
            "best_model_path": "/elsewhere/checkpoints/best.ckpt",  # written before: absolute
            "dirpath": "/elsewhere/checkpoints",
            "best_k_models": {"/elsewhere/checkpoints/best.ckpt": torch.tensor(0.5)},
        },
    ):
        reader = RelativeModelCheckpoint(dirpath=new, filename="best", monitor="val/acc", mode="max")
        reader.load_state_dict(stored)
        assert Path(reader.best_model_path) == Path(reader.dirpath) / "best.ckpt"
        assert list(reader.best_k_models) == [reader.best_model_path] and float(reader.best_model_score) == 0.5


def test_force_keeps_every_earlier_generation(tmp_path):
    from fsnn.suite.run import _set_aside

    run = tmp_path / "run"
    for generation in (1, 2, 3):
        write_json_atomic(run / "metrics.json", {"status": "complete", "generation": generation})
        _checkpoint(run / "checkpoints" / "best.ckpt", {**CONFIG, "seed": generation})
        write_json_atomic(run / "energy.json", {"generation": generation})
        _set_aside(run)
    for generation in (1, 2, 3):
        kept = run / f"previous.{generation}"
        assert json.loads((kept / "metrics.json").read_text())["generation"] == generation
        assert json.loads((kept / "energy.json").read_text())["generation"] == generation
        load_checkpoint(kept / "checkpoints" / "best.ckpt", {**CONFIG, "seed": generation})
    assert sorted(p.name for p in run.iterdir()) == ["previous.1", "previous.2", "previous.3"]
    from fsnn.report.collect import (
        scan_runs,  # an earlier generation is not a run of its own in the tables
    )

    write_json_atomic(run / "metrics.json", {"status": "complete", "generation": 4, "test_acc": 0.5})
    assert [r["generation"] for r in scan_runs(tmp_path).complete] == [4]


def test_sigterm_and_sigint_interrupt_once_and_handlers_are_restored():
    from fsnn.interrupts import Interrupted, interruptible

    # tests started as a background job inherit SIGINT ignored, which interruptible() keeps ignored (as it should):
    # start from Python's own handler, as in a foreground process
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
        for signum in (signal.SIGTERM, signal.SIGINT):
            with pytest.raises(Interrupted) as stopped:
                with interruptible():
                    try:
                        os.kill(os.getpid(), signum)
                        time.sleep(5)
                        pytest.fail("the signal did not interrupt")
                    finally:
                        os.kill(os.getpid(), signal.SIGTERM)  # a second signal while stopping: ignored
                        time.sleep(0.05)
            assert stopped.value.signum == signum and 128 + stopped.value.signum in (143, 130)
        assert {s: signal.getsignal(s) for s in before} == before
    finally:
        signal.signal(signal.SIGINT, inherited)


@pytest.mark.parametrize("what", ["checkpoint", "metrics.json", "torch's RuntimeError"])
def test_a_full_disk_is_one_error_naming_the_file_and_its_free_space(tmp_path, monkeypatch, what):
    import fsnn.atomic
    from fsnn.suite.run import USER_ERRORS

    path = tmp_path / ("last.ckpt" if what == "checkpoint" else "metrics.json")
    write = {
        "checkpoint": lambda: _checkpoint(path),
        "metrics.json": lambda: write_json_atomic(path, {"status": "running", "pad": "x" * 8000}),
        "torch's RuntimeError": lambda: fsnn.atomic.write_atomic(path, _torch_style_failure),
    }
    write[what]()
    before = path.read_bytes()
    monkeypatch.setattr(fsnn.atomic, "open", lambda p, mode="r": io.BufferedWriter(FillingUp(p, "wb")), raising=False)
    with pytest.raises(OSError) as error:
        write[what]()
    assert isinstance(error.value, USER_ERRORS)  # train.py and evaluate.py: this one line, exit status 2
    message = str(error.value)
    assert message.startswith(f"cannot write {path}: ") and "MiB free" in message and "\n" not in message
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no partial


def _torch_style_failure(handle):
    """torch's zip writer reports a failed write as a RuntimeError raised while handling the OSError."""
    try:
        handle.write(b"x" * 20000)  # more than the buffer: the disk is written now
    except OSError:
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos") from None


@pytest.mark.parametrize("script", ["train.py", "evaluate.py"])
def test_a_folder_in_place_of_metrics_json_is_one_line(tmp_path, compose_cfg, script):
    run = tmp_path / "runs" / "train" / "mine"
    if script == "evaluate.py":
        run = _fake_run_folder(tmp_path, compose_cfg)
    (run / "metrics.json").mkdir(parents=True)
    args = [*TINY, "run_name=mine"] if script == "train.py" else [f"run_dir={run}"]
    proc = run_app(script, *args, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr[-3000:]
    assert proc.stderr.startswith(
        f"fsnn: error: {run / 'metrics.json'}: expected the run's record, a file, got a folder"
    )


def _fake_run_folder(root: Path, compose_cfg) -> Path:
    cfg = OmegaConf.create({k: v for k, v in compose_cfg("logger=none").items() if k != "hydra"})
    run = root / "run"
    (run / ".hydra").mkdir(parents=True)
    OmegaConf.save(cfg, run / ".hydra" / "config.yaml")
    return run


@pytest.mark.parametrize("study", ["none", "energy"])
def test_evaluate_refuses_a_run_folder_in_training_naming_its_holder(tmp_path, compose_cfg, study):
    run = _fake_run_folder(tmp_path, compose_cfg)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        proc = run_app("evaluate.py", f"run_dir={run}", f"study={study}", cwd=tmp_path, timeout=300)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr[-3000:]
    assert proc.stderr.startswith(f"fsnn: error: run folder {run} is in use by pid {holder.pid} on ")
    assert "allow_unfinished=true" in proc.stderr
    assert sorted(p.name for p in run.iterdir()) == [".hydra", ".lock"]  # nothing written, not even eval/


def _interrupt(cwd: Path, when: str, *args: str, data_root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(ROOT / "tests" / "interrupt.py"), when, *TINY, *args, f"paths.data_dir={data_root}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.slow
def test_a_moved_run_folder_completes_from_its_own_checkpoints(tmp_path, data_root):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    assert _interrupt(old, "before-test", data_root=data_root).returncode == -signal.SIGKILL
    new.mkdir()
    os.replace(old / "runs", new / "runs")  # moved, and the original place gone
    old.rmdir()
    proc = _train(new, data_root=data_root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = _run_dir(new)
    m = json.loads((run / "metrics.json").read_text())
    assert m["status"] == "complete" and m["best_checkpoint"] == "checkpoints/best.ckpt"
    assert m["resumed_from"] == "checkpoints/last.ckpt"
    assert not (run / ".lock").exists()  # a finished run leaves no lock file
    for name in ("last.ckpt", "best.ckpt"):  # nothing in the folder names the place it ran in
        assert str(tmp_path) not in repr(load_checkpoint(run / "checkpoints" / name)["callbacks"])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_signal_marks_the_run_interrupted_exits_128_plus_its_number_and_the_rerun_resumes(tmp_path, data_root, name):
    proc = _interrupt(tmp_path, name.lower(), data_root=data_root)
    signum = getattr(signal, name)
    assert proc.returncode == 128 + signum, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and f"interrupted by {name}" in proc.stderr
    run = _run_dir(tmp_path)
    m = json.loads((run / "metrics.json").read_text())
    assert m["status"] == "interrupted" and name in m["error"]
    assert load_checkpoint(run / "checkpoints" / "last.ckpt")["epoch"] == 0  # what resume needs
    again = _train(tmp_path, data_root=data_root)
    assert again.returncode == 0, again.stderr[-3000:]
    m = json.loads((run / "metrics.json").read_text())
    assert m["status"] == "complete" and m["resumed_from"] == "checkpoints/last.ckpt" and m["epochs"] == 2


def test_an_ignored_signal_stays_ignored(monkeypatch):
    from fsnn.interrupts import interruptible

    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup starts a command
    try:
        with interruptible():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, previous)


def _other_command(cwd: Path, when: str, *args: str) -> subprocess.CompletedProcess:
    """``tests/interrupt.py <command>:<signal>``: the command sent the signal in the middle of its work."""
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(ROOT / "tests" / "interrupt.py"), when, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def _told(proc: subprocess.CompletedProcess, command: str, name: str) -> str:
    """The one line a command stopped by signal ``name`` ends with, checked: exit 128 + n, no traceback."""
    assert proc.returncode == 128 + getattr(signal, name), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("fsnn: ")]
    assert len(lines) == 1 and lines[0].startswith(f"fsnn: {command} interrupted by {name}: wrote "), lines
    return lines[0]


@pytest.mark.slow
def test_evaluate_and_its_studies_stopped_by_a_signal_exit_128_plus_n_saying_what_they_did_not_write(
    tmp_path, data_root
):
    assert _train(tmp_path, data_root=data_root).returncode == 0
    run = _run_dir(tmp_path)
    for name, study, missing in (
        ("SIGTERM", "study=none", "eval.json"),
        ("SIGINT", "study=energy", "energy.json"),
        ("SIGHUP", "robustness=events", "eval.json, robustness.json"),
    ):
        proc = _other_command(
            tmp_path, f"evaluate:{name}", f"run_dir={run}", study, f"paths.data_dir={data_root}", "limit_test_batches=1"
        )
        line = _told(proc, f"evaluate.py run_dir={run}", name)
        assert line.endswith(
            f"not written: {missing}; every other file is as it was (each file is written whole); "
            "rerunning the command writes the rest"
        )
        assert not [p.name for p in run.glob("*.json") if p.name != "metrics.json"]


@pytest.mark.slow
@pytest.mark.parametrize("command, name", [("make_tables", "SIGTERM"), ("report", "SIGINT")])
def test_make_tables_and_the_report_stopped_by_a_signal_exit_128_plus_n_naming_what_they_wrote(tmp_path, command, name):
    (tmp_path / "results").mkdir()
    proc = _other_command(tmp_path, f"{command}:{name}", "--results", "results", "--out", "out")
    line = _told(proc, {"make_tables": "fsnn-report tables", "report": "fsnn-report page"}[command], name)
    if command == "make_tables":  # stopped after its first table file
        (table,) = (tmp_path / "out").iterdir()
        assert line.startswith(f"fsnn: fsnn-report tables interrupted by SIGTERM: wrote out/{table.name}; every other")
    else:
        assert "wrote nothing in out; not written: index.html" in line and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_full_disk_while_training_is_one_line_and_leaves_the_checkpoints_whole(tmp_path, data_root):
    proc = _interrupt(tmp_path, "disk-full:last.ckpt", data_root=data_root)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("fsnn: error:")]
    assert proc.returncode == 2 and len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    run = _run_dir(tmp_path)
    assert errors[0].startswith(f"fsnn: error: cannot write {run / 'checkpoints' / 'last.ckpt'}: ")
    assert "MiB free" in errors[0]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["best.ckpt", "last.ckpt"]  # no partial file
    assert load_checkpoint(run / "checkpoints" / "last.ckpt")["epoch"] == 0
    assert json.loads((run / "metrics.json").read_text())["status"] == "failed"


@pytest.mark.slow
def test_evaluate_allow_unfinished_records_that_the_run_was_in_training(tmp_path, data_root):
    assert _train(tmp_path, "trainer.max_epochs=1", data_root=data_root).returncode == 0
    run = _run_dir(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        proc = run_app(
            "evaluate.py",
            f"run_dir={run}",
            "study=energy",
            "allow_unfinished=true",
            f"paths.data_dir={data_root}",
            cwd=tmp_path,
        )
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert proc.returncode == 0, proc.stderr[-3000:]
    energy = json.loads((run / "energy.json").read_text())
    assert energy["run_unfinished"] is True and energy["run_status"] == "running"
    assert energy["checkpoint"] == "checkpoints/best.ckpt" and energy["run"] == run.name
    proc = run_app("evaluate.py", f"run_dir={run}", f"paths.data_dir={data_root}", cwd=tmp_path)
    assert proc.returncode == 0 and json.loads((run / "eval.json").read_text())["run_unfinished"] is False


@pytest.mark.slow
def test_a_resumed_run_keeps_the_learned_values_of_its_earlier_epochs(tmp_path, data_root):
    # killed after epoch 1's last.ckpt, resumed: neurons_by_epoch holds every epoch, the ones before the kill included
    learned = [
        "dataset=delayed_cue",
        "backbone=seqmlp",
        "dataset.delay=4",
        "+neuron_variant=lif_learn_tau",
        "tau_lr_scale=50",
        "trainer.max_epochs=3",
    ]
    assert _interrupt(tmp_path, "between-epochs", *learned, data_root=data_root).returncode == -signal.SIGKILL
    proc = _train(tmp_path, *learned, data_root=data_root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = json.loads((_run_dir(tmp_path) / "metrics.json").read_text())
    assert m["resumed_from"] == "checkpoints/last.ckpt"
    epochs = m["neurons_by_epoch"]
    assert [e["epoch"] for e in epochs] == [0, 1, 2, 3] and epochs[0]["neurons"]["layers.1.neuron"]["tau_mean"] == 2.0


def test_records_with_the_run_folder_named_absolutely_are_made_relative(tmp_path):
    from fsnn.suite.runfiles import make_records_relative, relative_to_run

    run = tmp_path / "results" / "memory_horizon" / "+seed-0"
    run.mkdir(parents=True)
    record = {
        "status": "complete",
        "test_acc": 0.5,
        "config": {
            "logger": {"save_dir": "/elsewhere/results/memory_horizon/+seed-0"},  # written where it once ran
            "paths": {"data_dir": "/data/sets"},
            "files": ["/elsewhere/results/memory_horizon/+seed-0/logs/v0"],
        },
    }
    (run / "metrics.json").write_text(json.dumps(record))
    assert make_records_relative(tmp_path / "results") == [run / "metrics.json"]
    m = json.loads((run / "metrics.json").read_text())
    assert m["config"] == {"logger": {"save_dir": "."}, "paths": {"data_dir": "/data/sets"}, "files": ["logs/v0"]}
    assert m["test_acc"] == 0.5 and len(m["rewritten"]) == 1
    assert make_records_relative(tmp_path / "results") == []  # once is enough
    assert relative_to_run({"a": str(run / "x")}, run) == {"a": "x"}  # inside the folder where it is now


def test_every_committed_record_names_no_absolute_place():
    for path in (ROOT / "results").rglob("metrics.json"):
        text = json.loads(path.read_text())
        stack = [text.get("config")]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                stack += node.values()
            elif isinstance(node, list):
                stack += node
            else:
                assert not (isinstance(node, str) and node.startswith("/")), (path, node)
