"""Strings that become a file name, a folder or a link stay in their root (checked before any folder is made, or
made safe), a folder name too long for a file system becomes a readable start and a hash, and one configuration has
one folder whether it comes from a single run or a sweep."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import CONF, ROOT, TINY
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser

from fsnn.checks import ConfigError
from fsnn.runs.records import NAME_MAX, fitting_name
from fsnn.suite.config import check_config
from fsnn.suite.run_names import run_dir_name

# what a DVS run of the paper's settings is typed with: 18 overrides, 327 characters of folder name unshortened
DVS = [
    "dataset=dvsgesture",
    "backbone=dvsnet",
    "neuron=flif",
    "dataset.T=16",
    "dataset.size=128",
    "dataset.batch_size=16",
    "backbone.channels=128",
    "neuron.alpha=0.5",
    "neuron.tau=2.0",
    "neuron.memory=64",
    "neuron.learn_alpha=true",
    "neuron.learn_tau=true",
    "optimizer=adamw",
    "optimizer.lr=0.001",
    "optimizer.weight_decay=0.0001",
    "trainer.max_epochs=200",
    "scheduler=cosine",
    "seed=3",
]


def _sweep_jobs(*overrides: str) -> list[list[str]]:
    """The override lists Hydra's basic sweeper gives the jobs of ``-m <overrides>``."""
    parsed = OverridesParser.create().parse_overrides(list(overrides))
    return BasicSweeper.split_arguments(parsed, None)[0]


# -- one configuration, one folder --------------------------------------------------------------------------------
def test_a_single_run_and_a_sweep_of_one_configuration_render_one_folder():
    job = _sweep_jobs("neuron.learn_alpha=true,false", "optimizer.lr=1e-3")[0]
    assert job == ["neuron.learn_alpha=True", "optimizer.lr=0.001"]  # how the sweeper renders them
    single = run_dir_name(None, ["neuron.learn_alpha=true", "optimizer.lr=1e-3"])
    assert single == run_dir_name(None, job) == "neuron.learn_alpha-True+optimizer.lr-0.001"


def test_a_repeated_key_keeps_its_last_value_in_the_folder_name():
    assert (
        run_dir_name(None, ["trainer.limit_train_batches=2", "seed=1", "trainer.limit_train_batches=4"])
        == run_dir_name(None, ["seed=1", "trainer.limit_train_batches=4"])
        == "seed-1+trainer.limit_train_batches-4"
    )


def _committed_records() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "results"], capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / p for p in listed if p.endswith("/metrics.json") and "/previous." not in p]


def test_the_committed_runs_keep_their_folder_names():
    """A committed run is resumed, or found finished, by rerunning its command: its folder's name is what the
    rule renders from its recorded overrides (sweeps' True/False, 0.1, single runs' ints alike)."""
    records = _committed_records()
    assert len(records) > 100
    moved = []
    for path in records:
        record = json.loads(path.read_text())
        name = run_dir_name((record.get("config") or {}).get("run_name"), record.get("overrides"))
        if name != path.parent.name:
            moved.append((path.parent.name, name))
    assert not moved, moved[:3]


# -- names too long for a folder ----------------------------------------------------------------------------------
def test_a_name_too_long_for_a_folder_becomes_its_start_and_a_hash():
    whole = "+".join(DVS).replace("=", "-")
    assert len(whole) == 327 > NAME_MAX
    name = run_dir_name(None, DVS)
    assert len(name.encode()) == NAME_MAX and name.startswith("backbone.channels-128+backbone-dvsnet+dataset.T-16+")
    assert name == run_dir_name(None, list(reversed(DVS)))  # the same configuration, the same folder
    assert name != run_dir_name(None, [*DVS[:-1], "seed=4"])
    assert run_dir_name(None, DVS[:5]) == "+".join(sorted(DVS[:5])).replace("=", "-")  # a short name as it was
    long = "ü" * 200  # 400 bytes: cut at a whole character
    assert len(run_dir_name(long, []).encode()) <= NAME_MAX and run_dir_name(long, []).startswith("ü" * 100)
    assert fitting_name("a" * NAME_MAX) == "a" * NAME_MAX


# -- config values that become folders ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "override, key",
    [
        ("task_name=../../outside", "task_name"),
        ("task_name=..", "task_name"),
        ("task_name=a/b", "task_name"),
        ("task_name=" + "t" * 256, "task_name"),
        ("run_name=..", "run_name"),
        ("run_name=.", "run_name"),
        ("logger.name=../../outside", "logger.name"),
        ("+logger.version=../v", "logger.version"),
    ],
)
def test_a_name_that_would_leave_its_folder_is_refused_naming_its_key(compose_cfg, tmp_path, override, key):
    cfg = compose_cfg(override, f"paths.results_dir={tmp_path / 'results'}")
    with pytest.raises(ConfigError, match=rf"^{key}: expected (null or )?a folder name"):
        check_config(cfg)


def test_a_run_name_with_a_slash_stays_one_folder():
    assert run_dir_name("a/../../b", []) == "a_.._.._b"


def test_the_run_name_and_task_name_through_train_py_are_refused_before_any_folder(tmp_path):
    for override, key in (("task_name=../../outside", "task_name"), ("run_name=..", "run_name")):
        proc = subprocess.run(
            [sys.executable, str(ROOT / "train.py"), override],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert proc.returncode == 2 and proc.stderr.startswith(f"fsnn: error: {key}: expected"), proc.stderr[-2000:]
        assert len(proc.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == [] and not (tmp_path.parent / "outside").exists()


# -- paths stored in files a run reads -------------------------------------------------------------------------------
def test_a_checkpoints_stored_paths_name_files_of_its_own_folder(tmp_path):
    from fsnn.suite.checkpoint import RelativeModelCheckpoint

    folder = tmp_path / "run" / "checkpoints"
    callback = RelativeModelCheckpoint(dirpath=folder, filename="best", monitor="val/acc", mode="max")
    # a crafted checkpoint: Lightning deletes the replaced best file when a better epoch comes
    callback.load_state_dict(
        {
            "dirpath": ".",
            "best_model_score": 0.5,
            "best_model_path": "../../../victim",
            "kth_best_model_path": "/etc/passwd",
            "kth_value": 0.5,
            "last_model_path": "..",
            "best_k_models": {"../../victim": 0.5, "best.ckpt": 0.4},
            "current_score": 0.5,
            "monitor": "val/acc",
        }
    )
    paths = [callback.best_model_path, callback.kth_best_model_path, *callback.best_k_models]
    assert all(Path(p).parent == folder for p in paths), paths
    assert callback.last_model_path == ""


def test_a_sweep_jobs_file_from_the_environment_is_used_only_in_its_sweep(compose_cfg, tmp_path, monkeypatch):
    from fsnn.suite import sweeps

    victim = tmp_path / "victim"
    monkeypatch.setenv(sweeps.SWEEP_JOBS, str(victim))
    HydraConfig.instance().set_config(compose_cfg(f"paths.results_dir={tmp_path}"))
    assert sweeps.sweep_jobs_file() is None  # a single run: no sweep to list it in
    sweep = compose_cfg(f"paths.results_dir={tmp_path}")
    sweep.hydra.mode = "MULTIRUN"
    HydraConfig.instance().set_config(sweep)
    assert sweeps.sweep_jobs_file() is None  # a multirun, but not its sweep's file
    listed = (tmp_path / "train" / ".sweep-123").resolve()
    monkeypatch.setenv(sweeps.SWEEP_JOBS, str(listed))
    assert sweeps.sweep_jobs_file() == listed


def test_a_robustness_figure_is_named_inside_its_folder(tmp_path):
    from fsnn.report.figures import run_figures

    outside = tmp_path / "outside"
    run = tmp_path / "results" / "table2_node_classification" / "run"
    run.mkdir(parents=True)
    config = {"dataset": {"name": "../../../outside/x"}, "backbone": {"name": "dvsnet"}, "neuron": {"name": "flif"}}
    (run / "metrics.json").write_text(
        json.dumps(
            {
                "status": "complete",
                "metric": "acc",
                "metric_unit": "fraction",
                "test_acc": 0.5,
                "val_acc_best": 0.5,
                "recipe": "matched",
                "seed": 0,
                "epochs": 1,
                "task": "table2_node_classification",
                "config": config,
            }
        )
    )
    (run / "robustness.json").write_text(
        json.dumps(
            {
                "robustness": "events",
                "metric": "acc",
                "metric_unit": "fraction",
                "clean": 0.5,
                "config": config,
                "corruptions": {"event_drop": {"levels": [0.1, 0.2], "acc": [0.4, 0.3], "score": 70.0}},
            }
        )
    )
    out = tmp_path / "figures"
    paths = run_figures(tmp_path / "results", out, echo=lambda *a: None)
    assert not outside.exists()
    assert all(Path(p).resolve().parent == out.resolve() for p in paths), paths


# -- evaluate.py's run_dir ------------------------------------------------------------------------------------------
def test_a_path_the_shell_split_or_hydra_cannot_parse_is_named_with_how_to_quote_it(capsys):
    from fsnn.suite.overrides import check_command_line

    for argv, value in ((["run_dir=/my", "runs/x"], "/my runs/x"), (["run_dir=/my runs (1)"], "/my runs (1)")):
        with pytest.raises(SystemExit) as stopped:
            check_command_line(CONF, "eval", argv)
        err = capsys.readouterr().err
        assert stopped.value.code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"fsnn: error: run_dir: expected a value Hydra can parse, got {value!r}; quote it")
        assert f"'run_dir=\"{value}\"'" in err


def test_evaluate_on_a_read_only_run_folder_is_one_line_before_any_folder(compose_cfg, tmp_path, monkeypatch):
    from fsnn.suite.evaluate import check_eval_config

    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("seed: 0\n")

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "TemporaryFile", read_only)  # root writes into a chmod-ed folder: a mount's error
    cfg = compose_cfg(f"run_dir={run}", config_name="eval")
    with pytest.raises(ConfigError, match=r"^run_dir: expected a writable folder, got .*Read-only file system"):
        check_eval_config(cfg)
    assert sorted(p.name for p in run.iterdir()) == [".hydra"]


# -- end to end ------------------------------------------------------------------------------------------------------
def _train(cwd: Path, data_root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "train.py"), *args, *TINY, f"paths.data_dir={data_root}"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT), **(env or {})},
    )


@pytest.mark.slow
def test_a_long_run_name_trains_in_a_shortened_folder_and_its_rerun_finds_it(tmp_path, data_root):
    victim = tmp_path / "victim"
    victim.write_text("kept\n")
    name = "a-long-name-" + "x" * 300
    first = _train(tmp_path, data_root, f"run_name={name}", env={"FSNN_SWEEP_JOBS": str(victim)})
    assert first.returncode == 0, first.stderr[-3000:]
    (run,) = (tmp_path / "runs" / "train").iterdir()
    assert run.name == fitting_name(name) and len(run.name.encode()) == NAME_MAX
    record = json.loads((run / "metrics.json").read_text())
    assert record["status"] == "complete" and record["run_whole_name"] == name and record["run"] == run.name
    again = _train(tmp_path, data_root, f"run_name={name}")
    assert again.returncode == 0 and "is finished" in again.stdout, again.stderr[-3000:]
    assert victim.read_text() == "kept\n"  # a stray FSNN_SWEEP_JOBS: no line appended to another file


@pytest.mark.slow
def test_a_sweep_and_a_single_run_of_one_configuration_share_its_folder(tmp_path, data_root):
    swept = _train(tmp_path, data_root, "-m", "neuron.learn_alpha=true")
    assert swept.returncode == 0, swept.stderr[-3000:]
    (run,) = (tmp_path / "runs" / "train").glob("*/metrics.json")
    # typed, with a key given twice (the last value is what Hydra applies)
    single = _train(tmp_path, data_root, "neuron.learn_alpha=false", "neuron.learn_alpha=true")
    assert single.returncode == 0 and f"{run.parent} is finished" in single.stdout, single.stderr[-3000:]
    assert [p.parent for p in (tmp_path / "runs" / "train").glob("*/metrics.json")] == [run.parent]
