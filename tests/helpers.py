"""What the tests share: the checkout's places, running its commands as a user would, skip markers for what a
machine may lack (a GPU, a compiled extension, chromium, the larger real graphs), and fake run records."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def needs_built(extension, what: str):
    """Skip unless ``extension`` (a :class:`fsnn.compiled.CompiledExtension`) builds and loads here."""
    reason = extension.unavailable_reason()
    return pytest.mark.skipif(reason is not None, reason=f"{what} cannot be built here: {reason}")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not found on PATH (Debian: apt-get install chromium; .ci/run installs it)"
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

# -- the larger real graphs: ../shared/data/graphs beside the checkout (CI has it; a user's clone does not) ------------
SHARED_GRAPHS = ROOT.parent / "shared" / "data" / "graphs"
SHARED_SUMS = (
    dict(
        (name, digest)
        for digest, name in re.findall(
            r"^([0-9a-f]{64})  graphs/(\S+)$", (SHARED_GRAPHS.parent / "README.md").read_text(), re.M
        )
    )
    if (SHARED_GRAPHS.parent / "README.md").is_file()
    else {}
)
needs_shared = pytest.mark.skipif(
    not SHARED_GRAPHS.is_dir(),
    reason=f"the larger real graphs are not here "
    f"({SHARED_GRAPHS}: the project's shared/ folder beside the checkout holds them)",
)


def robustness_levels(study: str) -> dict[str, list[float]]:
    """``{corruption: levels}`` of ``conf/robustness/<study>.yaml``, the one place the levels are set."""
    corruptions = OmegaConf.load(CONF / "robustness" / f"{study}.yaml").corruptions
    return {name: list(entry.levels) for name, entry in corruptions.items()}


def run_app(script: str, *overrides: str, cwd: Path, env: dict | None = None, timeout: int = 600):
    """Run ``train.py``/``evaluate.py`` (or a ``scripts/`` file, or ``fsnn-report``) of this checkout as a user
    would, from ``cwd``; returns the CompletedProcess."""
    full_env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT), **(env or {})}
    command = ["-m", "fsnn.report"] if script == "fsnn-report" else [str(ROOT / script)]
    return subprocess.run(
        [sys.executable, *command, *overrides], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )


def registries() -> dict:
    """Every registry of fsnn, by what it holds (``Registry.what``)."""
    from fsnn.data.corruptions import CORRUPTIONS
    from fsnn.data.registry import DATASETS
    from fsnn.models.registry import BACKBONES
    from fsnn.neurons.registry import NEURONS
    from fsnn.suite.studies import STUDIES
    from fsnn.suite.tasks import TASKS

    return {r.what: r for r in (NEURONS, BACKBONES, DATASETS, TASKS, CORRUPTIONS, STUDIES)}


T2 = "table2_node_classification"


def wall_time(run: str) -> float:
    """A hand-made run's wall time, fixed by its name: two runs never take the same time, copies of one do (what
    tells a copied run folder from another run, :func:`fsnn.report.collect.content_key`)."""
    return 10.0 + zlib.crc32(run.encode(errors="surrogateescape")) % 10_000


def run_record(task, run, dataset, backbone, neuron, seed, acc, recipe="matched", status="complete", epochs=100):
    """A ``metrics.json`` record as a run writes it, with what the reports read and absolute paths of another
    machine (the reports must not show them)."""
    record = {
        "status": status,
        "task": task,
        "run": run,
        "seed": seed,
        "recipe": recipe,
        "metric": "acc",
        "overrides": [
            f"neuron={neuron}",
            f"seed={seed}",
            "paths.data_dir=/home/someone/fsnn/data",
            "paths.results_dir=/home/someone/fsnn/results",
            "+extra=/mnt/scratch/cache",
        ],
        "device": "cpu (x86_64, 1 threads)",
        "wall_time_s": wall_time(run),
        "versions": {"fsnn_commit": "0123456789abcdef0123"},
        "config": {
            "dataset": {"name": dataset},
            "backbone": {"name": backbone},
            "neuron": {"name": neuron},
            "trainer": {"max_epochs": epochs},
            "paths": {"results_dir": "/home/someone/fsnn/results"},
        },
    }
    if status == "complete":
        record["test_acc"] = acc
    else:
        record["error"] = "RuntimeError: boom in /home/someone/fsnn/fsnn/suite/run.py"
    return record


# -- runs through train.py, small and interrupted ------------------------------------------------------------------

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


def run_dir(cwd: Path, task: str = "train") -> Path:
    """The one run folder of ``task`` that a command run from ``cwd`` wrote (under ``runs/``)."""
    found = [p.parent for p in (cwd / "runs" / task).glob("*/metrics.json")]
    assert len(found) == 1, found
    return found[0]


def snapshot(folder: Path) -> dict:
    """``{file: (mtime, bytes)}`` of every file under ``folder``: what a rerun that does no work leaves unchanged."""
    return {p.relative_to(folder): (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()}


def umask(mask: int):
    """A ``preexec_fn`` that sets the child's umask."""
    return lambda: os.umask(mask)


def train_tiny(cwd: Path, *args: str, data_root: Path, **kwargs) -> subprocess.CompletedProcess:
    """``train.py`` with :data:`TINY` on the faked data, from ``cwd``."""
    return run_app("train.py", *TINY, f"paths.data_dir={data_root}", *args, cwd=cwd, **kwargs)


def interrupt_run(cwd: Path, when: str, *args: str, data_root: Path) -> subprocess.CompletedProcess:
    """``tests/interrupt.py <when>``: a :data:`TINY` training run killed or signalled at ``when``."""
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(ROOT / "tests" / "interrupt.py"), when, *TINY, *args, f"paths.data_dir={data_root}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def interrupt_command(cwd: Path, when: str, *args: str) -> subprocess.CompletedProcess:
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


def table_record(task, run, dataset, backbone, neuron, seed, acc, status="complete", metric="acc", **extra):
    """A ``metrics.json`` record with what the paper tables match on (choices, the neuron's alpha, the width)."""
    config = {
        "task_name": task,
        "task": "link" if metric == "auc" else None,
        "seed": seed,
        "dataset": {"name": dataset},
        "backbone": {"name": backbone, "channels": 128},
        "neuron": {"name": neuron, **({"alpha": 0.5, "learn_alpha": False} if neuron == "flif" else {})},
        "paths": {"output_dir": f"/somewhere/{run}"},
    }
    record = {
        "status": status,
        "task": task,
        "run": run,
        "seed": seed,
        "config": config,
        "choices": {"dataset": dataset, "backbone": backbone, "neuron": neuron},
        "overrides": [],
    }
    if status == "complete":
        record.update(
            {
                "metric": metric,
                f"test_{metric}": acc,
                f"test_{metric}_last": acc,
                f"val_{metric}_best": acc,
                "test_metrics": {f"test/{metric}": acc},
                "wall_time_s": wall_time(run),
            }
        )
    elif status == "failed":
        record["error"] = "RuntimeError: boom"
    record.update(extra)
    return record


def write_record(root: Path, record: dict) -> Path:
    """``record`` as ``<root>/<task>/<run>/metrics.json``; its path."""
    path = root / record["task"] / record["run"] / "metrics.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return path


def paper_spec(table_id):
    """The transcribed paper table ``table_id`` (``paper_tables.yaml``)."""
    from fsnn.report import tables

    return next(s for s in tables.load_spec() if s["id"] == table_id)


def table_cell(table, row_label, column):
    """The cell of a built table at a row label and a column."""
    row = next(r for r in table["rows"] if r["label"] == row_label)
    return row["cells"][table["columns"].index(column)]


#: what a resumed run's metrics.json must match its uninterrupted twin's in
RESUMED_KEYS = (
    "val_acc_best",
    "val_acc_last",
    "test_acc",
    "test_acc_last",
    "test_metrics",
    "firing_rates",
    "layer_order",
    "split_sizes",
    "alphas",
)


def one_run_cells(table: str) -> int:
    """How many cells of a Markdown table hold one run: ``(n=1)``, or ``(n=1, 1 on fake data)`` for a smoke run's."""
    return len(re.findall(r"\(n=1[,)]", table))
