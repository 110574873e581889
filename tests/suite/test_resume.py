"""End to end through train.py: a finished run is not redone, a killed one resumes bit for bit (an early-stopped one
too), a damaged last checkpoint is named, a second process on the folder is refused, two DDP ranks write one
record."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from helpers import (
    RESUMED_KEYS,
    ROOT,
    TINY,
    interrupt_command,
    run_app,
    run_dir,
    snapshot,
    train_tiny,
    umask,
)

from fsnn.suite.checkpoint import (
    load_checkpoint,
)
from fsnn.suite.runfiles import run_lock


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
        preexec_fn=umask(0o002),
    )
    assert first.returncode == 0, first.stderr[-3000:]
    run = run_dir(tmp_path)
    m = json.loads((run / "metrics.json").read_text())
    assert m["status"] == "complete" and m["split_sizes"] == {"train": 1294, "val": 144, "test": 359}
    # created with the umask's mode (0664 under 002), never 0600
    assert {oct(p.stat().st_mode & 0o777) for p in run.rglob("*") if p.is_file()} == {"0o664"}
    before = snapshot(run)
    again = train_tiny(tmp_path, "run_name=mine", data_root=data_root)
    assert again.returncode == 0 and "is finished" in again.stdout and str(run / "metrics.json") in again.stdout
    assert snapshot(run) == before  # nothing written, not even .hydra/ or the log
    # another config in the same folder: refused, nothing changed
    other = train_tiny(tmp_path, "run_name=mine", "neuron.tau=3.0", data_root=data_root)
    assert other.returncode == 2 and other.stderr.count("\n") == 1, other.stderr[-2000:]
    assert "holds a finished run of another config (neuron.tau: 2.0 -> 3.0)" in other.stderr
    assert snapshot(run) == before
    # a damaged checkpoint of a finished run is named; metrics.json is kept
    best = (run / "checkpoints" / "best.ckpt").read_bytes()
    (run / "checkpoints" / "best.ckpt").write_bytes(os.urandom(len(best)))
    damaged = train_tiny(tmp_path, "run_name=mine", data_root=data_root)
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
        forced = train_tiny(tmp_path, "run_name=mine", "force=true", data_root=data_root)
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
    run = run_dir(killed, "graph_demo")
    interrupted = json.loads((run / "metrics.json").read_text())
    assert interrupted["status"] == "running"
    assert load_checkpoint(run / "checkpoints" / "last.ckpt")["epoch"] == 0  # the previous file, whole
    resumed = run_app("train.py", *args, cwd=killed)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert not [p.name for p in (run / "checkpoints").iterdir() if p.name not in ("last.ckpt", "best.ckpt")]
    a, b = (json.loads((run_dir(c, "graph_demo") / "metrics.json").read_text()) for c in (straight, killed))
    assert b["resumed_from"] and b["epochs"] == a["epochs"] == 3
    for key in RESUMED_KEYS:
        assert a[key] == b[key], key
    for name in ("last.ckpt", "best.ckpt"):
        x, y = (load_checkpoint(run_dir(c, "graph_demo") / "checkpoints" / name) for c in (straight, killed))
        assert x["epoch"] == y["epoch"]
        assert x["state_dict"].keys() == y["state_dict"].keys()
        assert all(torch.equal(x["state_dict"][k], y["state_dict"][k]) for k in x["state_dict"]), name
        moments = [
            (x["optimizer_states"][0]["state"][i][m], y["optimizer_states"][0]["state"][i][m])
            for i in x["optimizer_states"][0]["state"]
            for m in ("exp_avg", "exp_avg_sq")
        ]
        assert all(torch.equal(u, v) for u, v in moments), name


#: a GAE link run on the faked Computers graph that stops early: its validation AUC peaks within the first epochs
EARLY_STOPPED = [
    "dataset=computers",
    "backbone=gae",
    "task=link",
    "early_stopping=validation",
    "early_stopping.patience=3",
    "trainer.max_epochs=200",
    "logger=none",
    "trainer.enable_progress_bar=false",
]


@pytest.fixture(scope="module")
def early_stopped(tmp_path_factory, data_root) -> dict:
    """The ``metrics.json`` of :data:`EARLY_STOPPED`, trained without interruption."""
    cwd = tmp_path_factory.mktemp("straight")
    proc = run_app("train.py", *EARLY_STOPPED, f"paths.data_dir={data_root}", cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((run_dir(cwd) / "metrics.json").read_text())


@pytest.mark.slow
def test_early_stopping_ends_training_patience_epochs_after_the_best_validation(early_stopped):
    m = early_stopped
    assert m["stop_reason"] == "patience_exhausted" and m["epochs"] < 200
    # the stop watches what the best checkpoint is selected on: its best epoch is the checkpoint's
    assert m["best_epoch"] == m["epochs"] - 3
    stopping = m["early_stopping"]
    assert (stopping["monitor"], stopping["patience"], stopping["reason"]) == ("val/auc", 3, "patience_exhausted")
    assert stopping["best"] == m["val_auc_best"]


@pytest.mark.slow
@pytest.mark.parametrize("when", ["between-epochs", "before-test"])
def test_an_early_stopped_run_killed_then_rerun_stops_where_it_did(tmp_path, data_root, early_stopped, when):
    # before-test: killed after it stopped; resumed from that epoch's last.ckpt, it trains no further epoch
    args = [*EARLY_STOPPED, f"paths.data_dir={data_root}"]
    crash = interrupt_command(tmp_path, when, *args)
    assert crash.returncode == -signal.SIGKILL, crash.stderr[-3000:]
    resumed = run_app("train.py", *args, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    m = json.loads((run_dir(tmp_path) / "metrics.json").read_text())
    assert m["resumed_from"] == "checkpoints/last.ckpt"
    for key in ("epochs", "best_epoch", "stop_reason", "early_stopping", "val_auc_best", "val_auc_last", "test_auc"):
        assert m[key] == early_stopped[key], key
    again = run_app("train.py", *args, cwd=tmp_path)
    assert again.returncode == 0 and "is finished" in again.stdout


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
    run = run_dir(tmp_path)
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
