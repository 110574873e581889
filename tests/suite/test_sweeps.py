"""Multiruns: launcher configs, the Optuna alpha search, and a failed job that does not stop its sweep."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
import yaml
from helpers import CONF, run_app
from hydra.core.hydra_config import HydraConfig
from hydra.errors import CompactHydraException
from hydra.utils import get_class, instantiate

from fsnn.checks import ConfigError
from fsnn.suite.run import run_guarded

LAUNCHERS = {
    "basic": "hydra._internal.core_plugins.basic_launcher.BasicLauncher",
    "joblib": "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher",
    "slurm": "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher",
    "submitit_local": "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher",
}
OPTUNA = "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper"
# a tiny version of the default run, for sweeps of a few jobs
TINY = [
    "trainer.max_epochs=1",
    "trainer.limit_train_batches=2",
    "trainer.limit_val_batches=1",
    "trainer.limit_test_batches=1",
    "trainer.enable_progress_bar=false",
    "logger=none",
]
# the DVS128 Gesture fixture through a narrow DVSNet: the quickest event run
SMALL_GESTURE = [
    "dataset=dvsgesture",
    "backbone=dvsnet",
    "backbone.channels=8",
    "dataset.size=32",
    "dataset.T=4",
    "dataset.batch_size=2",
]


def _runs(results: Path, task: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((results / task).glob("*/metrics.json"))]


def test_every_launcher_config_has_a_test():
    assert sorted(p.stem for p in (CONF / "launcher").glob("*.yaml")) == sorted(LAUNCHERS)


@pytest.mark.parametrize("name", sorted(LAUNCHERS))
def test_launcher_config_composes(compose_cfg, name):
    cfg = compose_cfg(f"launcher={name}", "setup=dvsgesture_cnn")
    assert cfg.hydra.runtime.choices.launcher == name
    assert cfg.hydra.launcher._target_ == LAUNCHERS[name]
    get_class(cfg.hydra.launcher._target_)  # the plugin is installed
    assert cfg.dataset.name == "dvsgesture"


def test_basic_launcher_is_the_default(compose_cfg):
    assert compose_cfg().hydra.launcher._target_ == LAUNCHERS["basic"]


def test_joblib_launcher_runs_without_dataloader_workers(compose_cfg):
    # dvsgesture_cnn asks for DataLoader workers; they crash inside joblib's worker processes
    assert compose_cfg("setup=dvsgesture_cnn").dataset.num_workers > 0
    cfg = compose_cfg("launcher=joblib", "setup=dvsgesture_cnn")
    assert cfg.dataset.num_workers == 0 and cfg.hydra.launcher.n_jobs == 2
    assert compose_cfg("launcher=joblib", "hydra.launcher.n_jobs=4").hydra.launcher.n_jobs == 4


def test_slurm_launcher_defaults_and_partition_from_environment(compose_cfg, monkeypatch):
    monkeypatch.delenv("FSNN_SLURM_PARTITION", raising=False)
    launcher = compose_cfg("launcher=slurm").hydra.launcher
    assert launcher.partition is None
    assert launcher.gpus_per_node == 1 and launcher.timeout_min > 0 and launcher.cpus_per_task and launcher.mem_gb
    monkeypatch.setenv("FSNN_SLURM_PARTITION", "gpu")
    assert compose_cfg("launcher=slurm").hydra.launcher.partition == "gpu"


def test_submitit_local_launcher_requeues_as_the_slurm_launcher_does(compose_cfg):
    # the plugin's local config has no max_num_timeout: submitit's local executor's own default is slurm.yaml's
    import inspect

    from submitit.local.local import LocalExecutor

    local, slurm = (compose_cfg(f"launcher={name}").hydra.launcher for name in ("submitit_local", "slurm"))
    assert local.timeout_min == slurm.timeout_min and local.submitit_folder == slurm.submitit_folder
    assert inspect.signature(LocalExecutor).parameters["max_num_timeout"].default == slurm.max_num_timeout


@pytest.mark.parametrize("experiment", ["optuna_alpha", "optuna_alpha_smoke"])
def test_optuna_experiments_compose(compose_cfg, experiment):
    cfg = compose_cfg(f"experiment={experiment}")
    sweeper = cfg.hydra.sweeper
    assert cfg.hydra.mode.name == "MULTIRUN"
    assert sweeper._target_ == OPTUNA and sweeper.direction == "maximize"
    assert sweeper.storage is None  # in memory unless asked for
    assert dict(sweeper.params) == {"neuron.alpha": "interval(0.1, 1.0)"}
    assert type(instantiate(sweeper.sampler)).__name__ == "TPESampler"
    assert cfg.neuron.name == "flif" and not cfg.neuron.learn_alpha
    # another paper setting and any launcher combine with the search
    cfg = compose_cfg(f"experiment={experiment}", "setup=nmnist_cnn", "launcher=joblib")
    assert cfg.dataset.name == "nmnist" and cfg.hydra.launcher._target_ == LAUNCHERS["joblib"]


def test_optuna_smoke_is_small(compose_cfg):
    cfg = compose_cfg("experiment=optuna_alpha_smoke")
    assert cfg.hydra.sweeper.n_trials <= 3 and cfg.trainer.max_epochs == 1 and not cfg.logger
    assert cfg.dataset.num_workers == 0


def test_optuna_sqlite_storage_works(tmp_path):
    # optuna 2's RDB storage needs SQLAlchemy < 2 (pinned in pyproject.toml)
    import optuna

    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(storage=url, study_name="s", direction="maximize")
    study.optimize(lambda trial: trial.suggest_float("alpha", 0.1, 1.0), n_trials=2)
    assert len(optuna.load_study(study_name="s", storage=url).trials) == 2


def _fail(cfg):
    raise ConfigError("no such pairing")


@pytest.fixture
def hydra_config():
    """``hydra_config(cfg)`` installs a composed config as the running job's Hydra config."""
    yield HydraConfig.instance().set_config
    HydraConfig.instance().cfg = None


def test_user_error_in_a_single_run_exits_2(compose_cfg, hydra_config, capsys):
    hydra_config(compose_cfg())
    with pytest.raises(SystemExit) as exit_:
        run_guarded(_fail, None)
    assert exit_.value.code == 2
    assert capsys.readouterr().err == "fsnn: error: no such pairing\n"


def test_user_error_in_a_multirun_is_the_jobs_failure(compose_cfg, hydra_config, capsys):
    hydra_config(compose_cfg("hydra.mode=MULTIRUN"))
    with pytest.raises(CompactHydraException, match="fsnn: error: no such pairing") as raised:
        run_guarded(_fail, None)
    assert capsys.readouterr().err == "fsnn: error: no such pairing\n"
    # joblib and submitit bring a job's failure back to the sweep process pickled
    assert str(pickle.loads(pickle.dumps(raised.value))) == "fsnn: error: no such pairing"


def test_a_sweep_may_replace_the_dataset_its_base_config_does_not_fit(compose_cfg, capsys):
    # experiment=table_link_prediction sweeps its datasets: the base config keeps the default (event) dataset
    from fsnn.suite.run import CheckConfig

    base = compose_cfg("backbone=msg", "task=link")
    CheckConfig().on_multirun_start(base)  # each job is checked when it starts, with its own dataset
    with pytest.raises(SystemExit) as exit_:
        CheckConfig().on_run_start(base)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith("fsnn: error: backbone 'msg' takes ['graph'] data")


def test_failed_job_does_not_stop_the_sweep(tmp_path, data_root):
    # the failing job (an invalid task) runs first; the second still runs, then the sweep exits 1
    proc = run_app(
        "train.py",
        "-m",
        "task=nonsense,null",
        *SMALL_GESTURE,
        "dataset.num_workers=0",
        *TINY,
        f"paths.data_dir={data_root}",
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    runs = {r["config"]["task"]: r for r in _runs(tmp_path / "runs", "train")}
    assert runs[None]["status"] == "complete"
    assert runs["nonsense"]["status"] == "failed"
    assert runs["nonsense"]["error"].startswith(
        "ConfigError: task: expected null or one of link, node, sequence, vision"
    )
    assert "Error executing job with overrides: ['task=nonsense'" in proc.stderr
    assert proc.stderr.count("fsnn: error: task: expected") == 2  # when it failed, and in the final report
    assert "Traceback" not in proc.stderr
    # the sweep ends with a table of its two jobs, though one failed (then the sweeper raises before its end)
    table = proc.stdout[proc.stdout.index("sweep of 2 runs:") :].splitlines()
    rows = [line for line in table if line.startswith("| ") and "seed-0" in line]  # every folder names its seed
    assert len(rows) == 2 and {row.split(" | ")[1] for row in rows} == {"failed", "complete"}
    assert not list((tmp_path / "runs" / "train").glob(".sweep-*"))  # its job list is removed
    # rerunning the sweep runs only what is missing or failed: the finished job is left as it is
    # task=null is the default: its folder is the one without the key, as the single run's would be
    done = next(p for p in (tmp_path / "runs" / "train").glob("*/metrics.json") if "task-" not in p.parent.name)
    files = {f: f.stat().st_mtime_ns for f in done.parent.rglob("*") if f.is_file()}
    again = run_app(
        "train.py",
        "-m",
        "task=nonsense,null",
        *SMALL_GESTURE,
        "dataset.num_workers=0",
        *TINY,
        f"paths.data_dir={data_root}",
        cwd=tmp_path,
        timeout=300,
    )
    assert again.returncode == 1 and f"{done.parent} is finished" in again.stdout
    assert {f: f.stat().st_mtime_ns for f in done.parent.rglob("*") if f.is_file()} == files


@pytest.mark.slow
def test_optuna_smoke_search(tmp_path, data_root):
    proc = run_app(
        "train.py", "experiment=optuna_alpha_smoke", f"paths.data_dir={data_root}", cwd=tmp_path, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    sweep = tmp_path / "runs" / "optuna_alpha_smoke"
    runs = _runs(tmp_path / "runs", "optuna_alpha_smoke")
    assert len(runs) == 3 and all(r["status"] == "complete" for r in runs)
    alphas = [r["config"]["neuron"]["alpha"] for r in runs]
    assert len(set(alphas)) == 3 and all(0.1 <= a <= 1.0 for a in alphas)
    best = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    assert best["name"] == "optuna" and best["best_params"]["neuron.alpha"] in alphas
    assert best["best_value"] == max(r["val_acc_best"] for r in runs)  # validation, never test


@pytest.mark.slow
def test_joblib_launcher_runs_two_jobs(tmp_path, data_root):
    proc = run_app(
        "train.py",
        "-m",
        "launcher=joblib",
        "neuron=flif,lif",
        *SMALL_GESTURE,
        *TINY,
        f"paths.data_dir={data_root}",
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Joblib.Parallel(n_jobs=2" in proc.stdout
    runs = _runs(tmp_path / "runs", "train")
    assert sorted(r["choices"]["neuron"] for r in runs) == ["flif", "lif"]
    # dvsgesture asks for DataLoader workers; launcher=joblib turned them off
    assert all(r["status"] == "complete" and r["config"]["dataset"]["num_workers"] == 0 for r in runs)


@pytest.mark.slow
def test_a_joblib_sweep_stopped_by_sigterm_stops_its_workers(tmp_path, data_root):
    """Its loky workers outlive it: they are stopped with it, each job records interrupted, none trains on."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from helpers import ROOT

    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "train.py"),
            "-m",
            "launcher=joblib",
            "seed=0,1",
            *TINY,
            "trainer.max_epochs=50",
            "trainer.limit_train_batches=3",
            "dataset.batch_size=16",
            f"paths.data_dir={data_root}",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 600
    while len(list(tmp_path.rglob("last.ckpt"))) < 2 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 143, err[-3000:]
    stopped = [line for line in err.splitlines() if line.startswith("fsnn: sweep interrupted by SIGTERM")]
    assert len(stopped) == 1 and "sent SIGTERM to its 2 job processes;" in stopped[0], err[-3000:]
    assert "Traceback" not in err
    checkpoints = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("last.ckpt")}
    time.sleep(15)  # a worker left running would write its next epoch's last.ckpt by now
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("last.ckpt")} == checkpoints
    assert [r["status"] for r in _runs(tmp_path / "runs", "train")] == ["interrupted", "interrupted"]
