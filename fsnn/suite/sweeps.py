"""A multirun (``fsnn-train -m``, an ``experiment=`` sweep) as a whole: its data checked once before the first
job, one table of its jobs when it ends, and, for launchers that run jobs in processes of their own (joblib), those
processes stopped when the sweep is stopped."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import sys
import time
from pathlib import Path

from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from fsnn.atomic import RunFileError
from fsnn.checks import ConfigError
from fsnn.data import dataset_info
from fsnn.runs.formatting import format_percent
from fsnn.runs.interrupts import INTERRUPTING, Interrupted
from fsnn.runs.records import read_run_record
from fsnn.suite.overrides import distinct_jobs

#: what a missing dataset's message adds: how to point a run at data, or make fake data for a smoke run
DATA_HINT = (
    "paths.data_dir=DIR reads the datasets from DIR; for a smoke run on fake data, `fsnn-fixtures DIR` "
    "writes them first"
)


def check_sweep_data(config: DictConfig) -> None:
    """Before a multirun's first job: the folder of every dataset its jobs read from ``paths.data_dir`` (what a
    library downloads or the user copies there, :attr:`fsnn.data.DatasetInfo.directory`) exists, else one
    :class:`ConfigError` for the sweep, instead of each job failing (or downloading) on its own. A single run
    tries its library's download itself. Each distinct choice of groups is composed once (Hydra's loader)."""
    missing: dict[Path, dict[str, str]] = {}
    for job in distinct_jobs(config, ("dataset", "paths")) or []:
        try:
            values = GlobalHydra.instance().config_loader().load_sweep_config(config, job)
            info, data_dir = dataset_info(values.dataset.name), Path(values.paths.data_dir).absolute()
        except (HydraException, KeyError):  # a job that does not compose, or an unknown dataset: its own to report
            continue
        if info.directory and not info.library.startswith("fsnn") and not (data_dir / info.directory).is_dir():
            missing.setdefault(data_dir, {})[info.name] = info.directory
    for data_dir, datasets in missing.items():
        lacking = ", ".join(f"{name} ({folder}/)" for name, folder in datasets.items())
        raise ConfigError(
            f"paths.data_dir: expected a folder holding the sweep's datasets, got {str(data_dir)!r}, "
            f"which lacks {lacking}. A sweep starts once its data is on disk, rather than failing in "
            f"every job: get each dataset with a single run (its library downloads what it can), or "
            f"{DATA_HINT}, e.g. fsnn-fixtures fake_data, then paths.data_dir=fake_data"
        )


SWEEP_JOBS = "FSNN_SWEEP_JOBS"  # the file a sweep's jobs add their run folders to (set by SweepSummary)


SWEEP_FILE = re.compile(r"\.sweep-\d+")  # its name, in the sweep's folder


class SweepSummary(Callback):
    """Hydra callback: when a sweep ends, finished or not (an ``atexit`` hook as well, since a failed job makes the
    sweeper raise before ``on_multirun_end``), one short table of its jobs: each run folder, its status, its test and
    best validation metric, its epochs and minutes. The jobs list their folders in ``<sweep dir>/.sweep-<pid>`` (its
    path in the environment, :data:`SWEEP_JOBS`, so launchers' worker processes see it too), removed afterwards."""

    def __init__(self):
        self.jobs: Path | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        folder = Path(config.hydra.sweep.dir)
        folder.mkdir(parents=True, exist_ok=True)
        self.jobs = folder / f".sweep-{os.getpid()}"
        self.jobs.write_text("")
        os.environ[SWEEP_JOBS] = str(self.jobs.resolve())
        atexit.register(self.report)

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        self.report()

    def report(self) -> None:
        if self.jobs is None or not self.jobs.is_file():
            return
        folders = list(dict.fromkeys(line for line in self.jobs.read_text().splitlines() if line))
        self.jobs.unlink()
        os.environ.pop(SWEEP_JOBS, None)
        if folders:
            print(sweep_table([Path(folder) for folder in folders]), flush=True)


#: how long a stopped sweep waits for its jobs to record that they were interrupted before it kills them
JOB_GRACE_S = 20


#: the process id of a joblib sweep, in its workers' environment: a job stopped by a signal ends its worker
SWEEP_PARENT = "FSNN_SWEEP_PARENT"


class StopJobs(Callback):
    """Hydra callback: a sweep whose launcher runs its jobs in processes of its own (joblib's loky workers, which
    outlive their parent) stops them when it is stopped. On a signal of :data:`fsnn.runs.interrupts.INTERRUPTING` it sends
    SIGTERM to each worker (its job records ``interrupted`` and the worker ends, :data:`SWEEP_PARENT`), kills what
    is left of them after :data:`JOB_GRACE_S` seconds (a worker would take the next job), says so in one line and
    exits with 128 + the signal's number. The basic launcher's jobs run in this process and stop as a single run does."""

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        if "joblib" in str(OmegaConf.select(config, "hydra.launcher._target_") or ""):
            os.environ[SWEEP_PARENT] = str(os.getpid())  # before the workers start: they inherit it
            for signum in INTERRUPTING:
                if signal.getsignal(signum) is not signal.SIG_IGN:  # nohup's SIGHUP stays ignored
                    signal.signal(signum, self.stop)

    def stop(self, signum, frame) -> None:
        for other in INTERRUPTING:  # once: a second signal does not cut the stopping short
            signal.signal(other, signal.SIG_IGN)
        workers = _job_processes()
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + JOB_GRACE_S
        while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
            time.sleep(0.2)
        killed = [pid for pid in workers if _alive(pid)]
        for pid in [descendant for worker in killed for descendant in _descendants(worker)] + killed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        print(
            f"fsnn: sweep {Interrupted(signum)}: sent SIGTERM to its {len(workers)} job processes"
            + (f" and killed {len(killed)} of them after {JOB_GRACE_S} s" if killed else "")
            + "; a job in training recorded interrupted in its metrics.json, no job runs on; rerunning the "
            "command resumes the unfinished jobs and leaves the finished ones",
            file=sys.stderr,
            flush=True,
        )
        raise SystemExit(128 + signum)


def _job_processes() -> list[int]:
    """The process ids of joblib's loky workers, which run a joblib sweep's jobs (not loky's resource tracker)."""
    from joblib.externals.loky import reusable_executor

    return list(getattr(reusable_executor._executor, "_processes", None) or {})


def _descendants(pid: int) -> list[int]:
    """The process ids of ``pid``'s children and theirs (a killed job's DataLoader workers), from Linux's ``/proc``."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                children.append(int(stat.parent.name))
    return children + [d for child in children for d in _descendants(child)]


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def sweep_jobs_file() -> Path | None:
    """The file :class:`SweepSummary` lists this sweep's jobs in: :data:`SWEEP_JOBS` of the environment, only in a
    multirun and only as ``<its sweep dir>/.sweep-<pid>`` (a variable left in a shell, or set on purpose, does not
    make a run append to some other file)."""
    jobs, hydra_cfg = os.environ.get(SWEEP_JOBS), HydraConfig.get()
    if not jobs or hydra_cfg.mode != RunMode.MULTIRUN:
        return None
    path = Path(jobs)
    return path if path.parent == Path(hydra_cfg.sweep.dir).resolve() and SWEEP_FILE.fullmatch(path.name) else None


def sweep_table(folders: list[Path]) -> str:
    """The Markdown table :class:`SweepSummary` prints: one row per run folder, from its ``metrics.json``."""
    lines = [
        "",
        f"sweep of {len(folders)} runs:",
        "| run | status | test | best val | epochs | minutes |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for folder in folders:
        try:
            record = read_run_record(folder)
        except RunFileError:
            record = None
        if record is None:
            lines.append(f"| {folder.name} | no readable metrics.json | | | | |")
            continue
        metric = record.get("metric", "acc")
        minutes = record.get("wall_time_s")
        lines.append(
            f"| {folder.name} | {record.get('status', '?')} | {format_percent(record.get(f'test_{metric}'))} | "
            f"{format_percent(record.get(f'val_{metric}_best'))} | {record.get('epochs', '')} | "
            f"{'' if minutes is None else f'{minutes / 60:.1f}'} |"
        )
    return "\n".join(lines)
