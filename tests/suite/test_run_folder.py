"""The run folder's life: the lock and its holder, file modes, folders that travel, generations kept by force,
signals, a full disk, records that name places relative to their folder."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import (
    ROOT,
    TINY,
    interrupt_command,
    interrupt_run,
    run_app,
    run_dir,
    train_tiny,
)
from omegaconf import OmegaConf

from fsnn.suite.checkpoint import (
    load_checkpoint,
)
from fsnn.suite.runfiles import RunLockedError, run_lock

HOLD = """
import sys, time
from pathlib import Path
from fsnn.suite.runfiles import run_lock
with run_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(600)
"""


@contextlib.contextmanager
def lock_held_elsewhere(folder: Path):
    """Another process holding ``folder``'s run lock until the block ends (then killed, its lock left stale)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()


def test_run_lock_names_its_holder_and_is_taken_over_when_the_holder_dies(tmp_path):
    with lock_held_elsewhere(tmp_path) as holder:
        with pytest.raises(RunLockedError, match=rf"run folder {tmp_path} is in use by pid {holder.pid} on "):
            with run_lock(tmp_path):
                pytest.fail("a second process got the lock")
    with run_lock(tmp_path):  # the killed holder's lock is stale: taken over
        assert json.loads((tmp_path / ".lock").read_text())["pid"] == os.getpid()


def test_sigterm_and_sigint_interrupt_once_and_handlers_are_restored():
    from fsnn.runs.interrupts import Interrupted, interruptible

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


@pytest.mark.parametrize(
    "damage, says",
    [
        ("model: [unclosed", "could not be read as YAML (ParserError"),
        ("- just\n- a list\n", "holds no config"),
        ("", "holds no config"),
    ],
)
def test_evaluate_on_a_damaged_saved_config_is_one_line_naming_it(tmp_path, compose_cfg, damage, says):
    run = _fake_run_folder(tmp_path, compose_cfg)
    (saved := run / ".hydra" / "config.yaml").write_text(damage)
    proc = run_app("evaluate.py", f"run_dir={run}", cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr[-3000:]
    assert proc.stderr.startswith("fsnn: error: ") and f"{saved}" in proc.stderr and says in proc.stderr


@pytest.mark.parametrize("status", ["running", "interrupted", "failed"])
def test_evaluate_refuses_a_run_that_never_finished(tmp_path, compose_cfg, status):
    """A record saying "running" with no process holding the folder is a killed run: its checkpoint is not its
    result, as for a run that was interrupted or failed."""
    run = _fake_run_folder(tmp_path, compose_cfg)
    (run / "metrics.json").write_text(json.dumps({"status": status}))
    proc = run_app("evaluate.py", f"run_dir={run}", "study=energy", cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr[-3000:]
    assert proc.stderr.startswith(f"fsnn: error: run_dir: the run in {run} did not finish (its metrics.json says")
    assert ("it was killed before it finished" in proc.stderr) == (status == "running")
    assert "allow_unfinished=true" in proc.stderr and not (run / "eval").exists()


@pytest.mark.parametrize("study", ["none", "energy"])
def test_evaluate_refuses_a_run_folder_in_training_naming_its_holder(tmp_path, compose_cfg, study):
    run = _fake_run_folder(tmp_path, compose_cfg)
    with lock_held_elsewhere(run) as holder:
        proc = run_app("evaluate.py", f"run_dir={run}", f"study={study}", cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr[-3000:]
    assert proc.stderr.startswith(f"fsnn: error: run folder {run} is in use by pid {holder.pid} on ")
    assert "allow_unfinished=true" in proc.stderr
    assert sorted(p.name for p in run.iterdir()) == [".hydra", ".lock"]  # nothing written, not even eval/


@pytest.mark.slow
def test_a_moved_run_folder_completes_from_its_own_checkpoints(tmp_path, data_root):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    assert interrupt_run(old, "before-test", data_root=data_root).returncode == -signal.SIGKILL
    new.mkdir()
    os.replace(old / "runs", new / "runs")  # moved, and the original place gone
    old.rmdir()
    proc = train_tiny(new, data_root=data_root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = run_dir(new)
    m = json.loads((run / "metrics.json").read_text())
    assert m["status"] == "complete" and m["best_checkpoint"] == "checkpoints/best.ckpt"
    assert m["resumed_from"] == "checkpoints/last.ckpt"
    assert not (run / ".lock").exists()  # a finished run leaves no lock file
    for name in ("last.ckpt", "best.ckpt"):  # nothing in the folder names the place it ran in
        assert str(tmp_path) not in repr(load_checkpoint(run / "checkpoints" / name)["callbacks"])


def test_a_schedulers_warning_signal_stops_a_command_unless_another_handler_takes_it():
    """SIGUSR1 and SIGUSR2 (SLURM's ``--signal``) would end the process without a word: they interrupt as SIGTERM
    does, except where a handler is already set (submitit's, which checkpoints and requeues), which stays."""
    from fsnn.runs.interrupts import Interrupted, interruptible

    for signum in (signal.SIGUSR1, signal.SIGUSR2):
        with pytest.raises(Interrupted) as stopped:
            with interruptible():
                os.kill(os.getpid(), signum)
                time.sleep(5)
                pytest.fail("the signal did not interrupt")
        assert stopped.value.signum == signum and signal.getsignal(signum) is signal.SIG_DFL
    seen = []
    previous = signal.signal(signal.SIGUSR2, lambda signum, frame: seen.append(signum))  # as submitit's
    try:
        with interruptible():
            os.kill(os.getpid(), signal.SIGUSR2)
            time.sleep(0.05)
        assert seen == [signal.SIGUSR2]
    finally:
        signal.signal(signal.SIGUSR2, previous)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT", "SIGUSR2"])
def test_a_signal_marks_the_run_interrupted_exits_128_plus_its_number_and_the_rerun_resumes(tmp_path, data_root, name):
    proc = interrupt_run(tmp_path, name.lower(), data_root=data_root)
    signum = getattr(signal, name)
    assert proc.returncode == 128 + signum, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and f"interrupted by {name}" in proc.stderr
    run = run_dir(tmp_path)
    m = json.loads((run / "metrics.json").read_text())
    assert m["status"] == "interrupted" and name in m["error"]
    assert load_checkpoint(run / "checkpoints" / "last.ckpt")["epoch"] == 0  # what resume needs
    again = train_tiny(tmp_path, data_root=data_root)
    assert again.returncode == 0, again.stderr[-3000:]
    m = json.loads((run / "metrics.json").read_text())
    assert m["status"] == "complete" and m["resumed_from"] == "checkpoints/last.ckpt" and m["epochs"] == 2


@pytest.mark.slow
def test_a_refused_resume_leaves_the_interrupted_runs_record_as_it_was(tmp_path, data_root):
    """Rerunning an interrupted run's folder with another result config is refused (its checkpoint is another
    config's), and the record still says interrupted: the original command resumes it."""
    assert interrupt_run(tmp_path, "sigterm", "run_name=mine", data_root=data_root).returncode == 143
    run = run_dir(tmp_path)
    before = (run / "metrics.json").read_bytes()
    refused = train_tiny(tmp_path, "run_name=mine", "trainer.max_epochs=3", data_root=data_root)
    assert refused.returncode == 2 and "checkpoint" in refused.stderr, refused.stderr[-3000:]
    assert (run / "metrics.json").read_bytes() == before and json.loads(before)["status"] == "interrupted"
    again = train_tiny(tmp_path, "run_name=mine", data_root=data_root)
    assert again.returncode == 0 and json.loads((run / "metrics.json").read_text())["status"] == "complete"


def test_an_ignored_signal_stays_ignored(monkeypatch):
    from fsnn.runs.interrupts import interruptible

    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup starts a command
    try:
        with interruptible():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, previous)


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
    assert train_tiny(tmp_path, data_root=data_root).returncode == 0
    run = run_dir(tmp_path)
    for name, study, missing in (
        ("SIGTERM", "study=none", "eval.json"),
        ("SIGINT", "study=energy", "energy.json"),
        ("SIGHUP", "robustness=events", "eval.json, robustness.json"),
    ):
        proc = interrupt_command(
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
    proc = interrupt_command(tmp_path, f"{command}:{name}", "--results", "results", "--out", "out")
    line = _told(proc, {"make_tables": "fsnn-report tables", "report": "fsnn-report page"}[command], name)
    if command == "make_tables":  # stopped after its first table file
        (table,) = (tmp_path / "out").iterdir()
        assert line.startswith(f"fsnn: fsnn-report tables interrupted by SIGTERM: wrote out/{table.name}; every other")
    else:
        assert "wrote nothing in out; not written: index.html" in line and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_full_disk_while_training_is_one_line_and_leaves_the_checkpoints_whole(tmp_path, data_root):
    proc = interrupt_run(tmp_path, "disk-full:last.ckpt", data_root=data_root)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("fsnn: error:")]
    assert proc.returncode == 2 and len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    run = run_dir(tmp_path)
    assert errors[0].startswith(f"fsnn: error: cannot write {run / 'checkpoints' / 'last.ckpt'}: ")
    assert "MiB free" in errors[0]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["best.ckpt", "last.ckpt"]  # no partial file
    assert load_checkpoint(run / "checkpoints" / "last.ckpt")["epoch"] == 0
    assert json.loads((run / "metrics.json").read_text())["status"] == "failed"


@pytest.mark.slow
def test_evaluate_allow_unfinished_records_that_the_run_was_in_training(tmp_path, data_root):
    assert train_tiny(tmp_path, "trainer.max_epochs=1", data_root=data_root).returncode == 0
    run = run_dir(tmp_path)
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
    assert interrupt_run(tmp_path, "between-epochs", *learned, data_root=data_root).returncode == -signal.SIGKILL
    proc = train_tiny(tmp_path, *learned, data_root=data_root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = json.loads((run_dir(tmp_path) / "metrics.json").read_text())
    assert m["resumed_from"] == "checkpoints/last.ckpt"
    epochs = m["neurons_by_epoch"]
    assert [e["epoch"] for e in epochs] == [0, 1, 2, 3] and epochs[0]["neurons"]["layers.1.neuron"]["tau_mean"] == 2.0


def test_records_with_the_run_folder_named_absolutely_are_made_relative(tmp_path):
    """``scripts/make_records_relative.py``, the migration of records written with the run folder's absolute path:
    that path made relative, every other value kept, a note left, and nothing to do a second time."""
    from fsnn.suite.runfiles import relative_to_run

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
        "overrides": ["paths.data_dir=/data/sets", "seed=0"],
    }
    (run / "metrics.json").write_text(json.dumps(record))
    proc = run_app("scripts/make_records_relative.py", "results", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["rewrote", str(Path("results") / "memory_horizon" / "+seed-0" / "metrics.json")]
    m = json.loads((run / "metrics.json").read_text())
    assert m["config"] == {"logger": {"save_dir": "."}, "paths": {"data_dir": "/data/sets"}, "files": ["logs/v0"]}
    assert m["test_acc"] == 0.5 and len(m["rewritten"]) == 1
    proc = run_app("scripts/make_records_relative.py", "results", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == ""  # once is enough
    assert relative_to_run({"a": str(run / "x")}, run) == {"a": "x"}  # inside the folder where it is now
    # a data folder given absolutely on the command line: recorded as the checkout-relative one, with a note
    proc = run_app("scripts/make_records_relative.py", "results", "--path", "data_dir=data", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = json.loads((run / "metrics.json").read_text())
    assert m["config"]["paths"] == {"data_dir": "data"} and m["overrides"] == ["paths.data_dir=data", "seed=0"]
    assert "/data/sets" not in json.dumps(m) and m["rewritten"][-1].startswith("paths.data_dir, given as an absolute")
    proc = run_app("scripts/make_records_relative.py", "results", "--path", "data_dir=data", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == ""


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
