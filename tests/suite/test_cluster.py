"""The cluster paths end to end on one machine: a Table 1 sweep through submitit (``launcher=submitit_local``, the
SLURM launcher's code) with one job preempted mid-epoch, requeued by submitit and ending as if uninterrupted; two DDP
ranks on a cold frame cache, which one of them builds once, training on their shares of each epoch."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import torch
from helpers import RESUMED_KEYS, ROOT, run_app, run_dir

from fsnn.data.fakes.scaled_fixtures import write_scaled_fixtures
from fsnn.data.frame_cache import MARKER
from fsnn.suite.checkpoint import load_checkpoint

# Table 1's sweep restricted to two jobs of one setting, four short epochs each (the smoke settings' tiny inputs)
TWO_JOBS = [
    "experiment=table1_neuromorphic_smoke",
    "setup=dvsgesture_cnn",
    "neuron=lif,flif",
    "trainer.max_epochs=4",
    "trainer.limit_train_batches=4",
]
#: what a resumed run must match its uninterrupted twin in (metrics.json)
SAME = (*RESUMED_KEYS, "epochs", "best_checkpoint")


def _wait(condition, what: str, timeout: float, proc: subprocess.Popen | None = None, every: float = 0.02):
    """Poll ``condition()`` until it is truthy (returned); fail naming ``what`` after ``timeout`` s or if ``proc``
    ends first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := condition():
            return found
        assert proc is None or proc.poll() is None, f"the sweep ended (status {proc.returncode}) before {what}"
        time.sleep(every)
    raise AssertionError(f"no {what} after {timeout} s")


def _parent(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))


def _command(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.slow
@pytest.mark.parametrize("preemption", ["submitit's signal", "SIGTERM"])
def test_a_job_preempted_under_submitit_is_requeued_and_ends_as_if_uninterrupted(tmp_path, preemption):
    """Submitit's own preemption and time-limit signal (SIGUSR2), or SLURM's plain preemption (SIGTERM), mid-epoch:
    the job is requeued and its run resumes."""
    data = tmp_path / "data"
    write_scaled_fixtures(data, 0.01, ["dvsgesture"])
    sweep, plain = tmp_path / "sweep", tmp_path / "plain"
    sweep.mkdir(), plain.mkdir()
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT)}
    with open(tmp_path / "sweep.out", "w") as out, open(tmp_path / "sweep.err", "w") as err:
        proc = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "train.py"),
                "-m",
                *TWO_JOBS,
                "launcher=submitit_local",
                f"paths.data_dir={data}",
            ],
            cwd=sweep,
            env=env,
            stdout=out,
            stderr=err,
            text=True,
        )
    try:
        # the first job to finish an epoch; the time its next epoch takes; a third of the way into the one after
        last = _wait(lambda: next(sweep.glob("runs/*/*/checkpoints/last.ckpt"), None), "last.ckpt", 600, proc)
        first = last.stat().st_mtime_ns
        first_seen = time.monotonic()
        _wait(lambda: last.stat().st_mtime_ns != first, "second last.ckpt", 300, proc)
        time.sleep((time.monotonic() - first_seen) / 3)
        run = last.parents[1]
        task = json.loads((run / ".lock").read_text())["pid"]  # the process training the run: submitit's task
        controller = _parent(task)
        assert "submitit.core._submit" in _command(task) and "submitit.local._local" in _command(controller)
        # the preemption (and time-limit) signal, as SLURM sends it to the job's processes under submitit
        from submitit.local.local import LocalJobEnvironment

        signum = signal.SIGTERM if preemption == "SIGTERM" else LocalJobEnvironment._usr_sig()
        os.kill(task, signum)
        _wait(lambda: not _alive(task), "end of the signalled task", 120)
        # stopped in its third epoch (the second's last.ckpt is the last whole one); it recorded why
        assert load_checkpoint(run / "checkpoints" / "last.ckpt")["epoch"] == 1
        stopped = json.loads((run / "metrics.json").read_text())
        why = "Interrupted: interrupted by SIGTERM" if signum == signal.SIGTERM else "SystemExit: 144"
        assert stopped["status"] == "interrupted" and stopped["error"] == why, stopped.get("error")
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, (tmp_path / "sweep.err").read_text()[-3000:]

    task_name = run.parent.name
    results = {p.parent: json.loads(p.read_text()) for p in run.parent.glob("*/metrics.json")}
    assert len(results) == 2 and all(r["status"] == "complete" for r in results.values())
    resumed = results[run]
    assert resumed["resumed_from"] == "checkpoints/last.ckpt" and resumed["epochs"] == 4
    # submitit requeued it (the job's log, under the sweep's .submitit/, appended by every start of the job)
    log = (run.parent / ".submitit" / str(controller) / f"{controller}_0_log.out").read_text()
    assert f"Caught signal {signal.Signals(signum).name}" in log and "this job is preempted" in log, log
    assert f"Requeued job {controller} (3 remaining timeouts)" in log  # preemption is not counted as a time limit
    assert log.count("Starting with JobEnvironment") == 2 and log.endswith("Exiting after successful completion\n")
    other = next(p for p in (run.parent / ".submitit").glob("*/*_0_log.out") if p.parent.name != str(controller))
    assert "Requeued" not in other.read_text() and other.read_text().count("Starting with JobEnvironment") == 1

    # the same job run once, uninterrupted, with the basic launcher
    neuron = resumed["choices"]["neuron"]
    straight = run_app(
        "train.py",
        *[f"neuron={neuron}" if arg.startswith("neuron=") else arg for arg in TWO_JOBS],
        f"paths.data_dir={data}",
        cwd=plain,
    )
    assert straight.returncode == 0, straight.stderr[-3000:]
    twin = run_dir(plain, task_name)
    assert twin.name == run.name
    expected = json.loads((twin / "metrics.json").read_text())
    assert expected["resumed_from"] is None
    for key in SAME:
        assert resumed[key] == expected[key], key
    for name in ("last.ckpt", "best.ckpt"):
        x, y = (load_checkpoint(folder / "checkpoints" / name) for folder in (run, twin))
        assert x["epoch"] == y["epoch"] and x["state_dict"].keys() == y["state_dict"].keys()
        assert all(torch.equal(x["state_dict"][k], y["state_dict"][k]) for k in x["state_dict"]), name


# Records, in every Python process of a command (sitecustomize.py on PYTHONPATH, so DDP's second rank too), each
# FrameCache.ensure call, each sample file written, and each epoch's training indices a DistributedSampler gives.
RECORDER = """
import json, os, time
from pathlib import Path

import fsnn.data.frame_cache as frame_cache
from torch.utils.data import DistributedSampler

OUT = Path(os.environ["FSNN_TEST_RECORD"])


def note(kind, **entry):
    with open(OUT / f"{kind}-{os.getpid()}.jsonl", "a") as handle:
        handle.write(json.dumps({"pid": os.getpid(), **entry}) + "\\n")


ensure, write_sample, sampled = frame_cache.FrameCache.ensure, frame_cache.FrameCache.write_sample, DistributedSampler.__iter__


def ensure_noted(self, *args, **kwargs):
    start = time.time()
    manifest = ensure(self, *args, **kwargs)
    note("ensure", dir=str(self.dir), start=start, end=time.time())
    return manifest


def write_noted(self, i):
    note("write", path=str(self.sample_path(i)))
    return write_sample(self, i)


def sampled_noted(self):
    indices = list(sampled(self))
    note("sampler", rank=self.rank, world=self.num_replicas, epoch=self.epoch, n=len(self.dataset), indices=indices)
    return iter(indices)


frame_cache.FrameCache.ensure, frame_cache.FrameCache.write_sample = ensure_noted, write_noted
DistributedSampler.__iter__ = sampled_noted
"""


def _records(folder: Path, kind: str) -> list[dict]:
    return [
        json.loads(line) for path in sorted(folder.glob(f"{kind}-*.jsonl")) for line in path.read_text().splitlines()
    ]


@pytest.mark.slow
def test_two_ddp_ranks_on_a_cold_cache_build_it_once_and_train_on_their_shares(tmp_path):
    data, hook, record, cwd = (tmp_path / name for name in ("data", "hook", "record", "run"))
    write_scaled_fixtures(data, 0.05, ["dvsgesture"])
    assert not (data / "fsnn_cache").exists()
    for folder in (hook, record, cwd):
        folder.mkdir()
    (hook / "sitecustomize.py").write_text(RECORDER)
    epochs = 2
    proc = run_app(
        "train.py",
        "dataset=dvsgesture",
        "backbone=dvsnet_small",
        "dataset.size=32",
        "dataset.T=4",
        "dataset.batch_size=4",
        "dataset.num_workers=0",
        "neuron.threshold=0.1",  # spikes reach the output: the test loss is not that of a silent network
        f"trainer.max_epochs={epochs}",
        "trainer.limit_train_batches=3",
        "trainer.limit_val_batches=2",
        "trainer.accelerator=cpu",
        "trainer.strategy=ddp",
        "trainer.devices=2",
        "trainer.enable_progress_bar=false",
        "logger=none",
        f"paths.data_dir={data}",
        cwd=cwd,
        env={"PYTHONPATH": os.pathsep.join((str(hook), str(ROOT))), "FSNN_TEST_RECORD": str(record)},
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = run_dir(cwd)
    m = json.loads((run / "metrics.json").read_text())
    assert m["status"] == "complete" and m["world_size"] == 2

    # both ranks needed each split's cache; one process integrated it, every sample file once, the other waited
    cache = data / "fsnn_cache" / "dvsgesture" / "T4_s32"
    splits = {cache / "train": 55, cache / "test": 11}  # scale 0.05 of 1,077 / 264 (train also holds val)
    ensured = _records(record, "ensure")
    ranks = {r["pid"] for r in _records(record, "sampler")}
    assert len(ranks) == 2 and {(r["pid"], r["dir"]) for r in ensured} == {(p, str(d)) for p in ranks for d in splits}
    writes = _records(record, "write")
    assert writes and max(Counter(w["path"] for w in writes).values()) == 1  # no sample file written twice
    for folder, n in splits.items():
        files = {str(f) for f in folder.iterdir() if f.name != MARKER}
        written = [w for w in writes if Path(w["path"]).parent == folder]
        assert len(files) == n and {w["path"] for w in written} == files  # every sample file, no temporary left
        assert len({w["pid"] for w in written}) == 1
        marked = (folder / MARKER).stat().st_mtime_ns
        assert max(Path(f).stat().st_mtime_ns for f in files) <= marked
        # the other rank had the cache once it was complete: asked while it was being built, it waited; on a busy
        # machine it can start after the build and find it whole (neither writes twice: checked above)
        (waited,) = [r for r in ensured if r["dir"] == str(folder) and r["pid"] != written[0]["pid"]]
        assert marked / 1e9 <= waited["end"], (waited, marked)
    output = proc.stdout + proc.stderr
    assert output.count("fsnn: integrating ") == 2 and "rebuilding" not in output

    # each epoch: a new permutation of the training split, each rank its own half of it; DistributedSampler pads an
    # odd split with its first sample, which both ranks then hold
    n = m["split_sizes"]["train"]
    assert n == 49
    shards = {(r["epoch"], r["rank"]): r for r in _records(record, "sampler")}
    assert sorted(shards) == [(e, r) for e in range(epochs) for r in (0, 1)]
    assert all(r["world"] == 2 and r["n"] == n for r in shards.values())
    assert [len({shards[e, rank]["pid"] for e in range(epochs)}) for rank in (0, 1)] == [1, 1]  # a process each
    for e in range(epochs):
        a, b = (shards[e, rank]["indices"] for rank in (0, 1))
        assert len(a) == len(b) == math.ceil(n / 2)
        assert set(a) | set(b) == set(range(n)) and len(set(a) & set(b)) == 2 * math.ceil(n / 2) - n
    assert shards[0, 0]["indices"] != shards[1, 0]["indices"]

    # the 2-rank test metrics are those of one process evaluating the same checkpoint on the whole test split
    ev = run_app("evaluate.py", f"run_dir={run}", f"paths.data_dir={data}", "accelerator=cpu", cwd=cwd, timeout=600)
    assert ev.returncode == 0, ev.stderr[-3000:]
    single = json.loads((run / "eval.json").read_text())
    assert m["test_acc"] == pytest.approx(single["test_acc"], abs=1e-6)
    loss = m["test_metrics"]["test/loss"]
    assert loss == pytest.approx(single["test_metrics"]["test/loss"], rel=1e-5)
    assert abs(loss - math.log(11)) > 1e-3  # not the uniform output of a network whose last layer never fires
