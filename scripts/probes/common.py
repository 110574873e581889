"""What the probe's cases share: the tiny runs' overrides, the bad values tried, the healthy record the report cases
damage, the scripts run in a process of their own, and the helpers that build and damage runs and data."""

from __future__ import annotations

import contextlib
import hashlib
import json
import pickle
import re
import shutil
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parents[2]  # the checkout this script is part of
TINY = [
    "trainer.max_epochs=2",
    "trainer.limit_train_batches=3",
    "trainer.limit_val_batches=1",
    "trainer.limit_test_batches=1",
    "trainer.enable_progress_bar=false",
    "logger=none",
    "dataset.batch_size=16",
]
GESTURE = [
    "dataset=dvsgesture",
    "backbone=dvsnet",
    "backbone.channels=8",
    "dataset.size=32",
    "dataset.T=4",
    "dataset.batch_size=2",
    "dataset.num_workers=0",
    "trainer.max_epochs=1",
    "trainer.limit_train_batches=2",
    "trainer.limit_val_batches=1",
    "trainer.limit_test_batches=1",
    "trainer.enable_progress_bar=false",
    "logger=none",
]
GRAPH = [
    "dataset=cora",
    "backbone=sgcn",
    "dataset.T=5",
    "dataset.test_repeats=2",
    "trainer.max_epochs=1",
    "trainer.enable_progress_bar=false",
    "logger=none",
]
OUTCOMES = ("clear", "traceback", "unclear", "silent")
# a refusal's line: ``fsnn: error: ...``, or a command's own (``fsnn-fixtures: error: ...``, as argparse writes it)
ERROR_LINE = re.compile(r"fsnn(?:-[a-z]+)?: error:")

# (the override, a word the error must name)
BAD_VALUES = [
    *[(f"neuron.alpha={v}", "alpha") for v in ("0", "1.5", "-1", "nan", "abc", "inf")],
    ("neuron.tau=0", "tau"),
    ("neuron.tau=-1", "tau"),
    ("neuron.tau=abc", "tau"),
    ("neuron.memory=0", "memory"),
    ("neuron.memory=1.5", "memory"),
    ("neuron.method=xyz", "method"),
    ("neuron.threshold=-1", "threshold"),
    ("neuron.threshold=0", "threshold"),
    ("neuron.dt=0", "dt"),
    ("neuron.surrogate=foo", "surrogate"),
    ("neuron.surrogate_scale=0", "surrogate_scale"),
    ("neuron.reset=foo", "reset"),
    ("neuron.engine=foo", "engine"),
    *[(f"dataset.T={v}", "T") for v in ("0", "-3", "2.5", "abc")],
    ("dataset.size=0", "size"),
    ("dataset.size=-4", "size"),
    ("dataset.val_fraction=1.5", "val_fraction"),
    ("dataset.val_fraction=0", "val_fraction"),
    ("dataset.batch_size=0", "batch_size"),
    ("dataset.batch_size=-2", "batch_size"),
    ("dataset.num_workers=-1", "num_workers"),
    ("optimizer.lr=-1", "lr"),
    ("optimizer.lr=0", "lr"),
    ("optimizer.lr=abc", "lr"),
    ("optimizer.weight_decay=-1", "weight_decay"),
    ("seed=abc", "seed"),
    ("seed=-1", "seed"),
    ("seed=1.5", "seed"),
    ("trainer.max_epochs=abc", "max_epochs"),
    ("trainer.max_epochs=-1", "max_epochs"),
    ("trainer.max_epochs=0", "max_epochs"),
    ("trainer.devices=0", "devices"),
    ("trainer.precision=foo", "precision"),
    ("trainer.limit_train_batches=-1", "limit_train_batches"),
    ("trainer.gradient_clip_val=-1", "gradient_clip_val"),
    # accepted types whose dynamics are not finite: below f-LIF's stability bound, directly or through dt / tau
    ("neuron.tau=1e-09", "tau"),
    ("neuron.tau=0.5", "tau"),
    ("neuron.dt=100", "tau"),
    ("trainer.accelerator=meta", "accelerator"),
]
# the config surface: (train.py's overrides, the key its refusal names): keys no config of their group has, or a value
# outside a group's own domain, which would otherwise run with the key ignored or fail deep in a library
SCHEMA_VALUES = [
    ("+neuron.alfa=0.3", "alfa"),  # a typo of neuron.alpha, added
    ("neuron.alfa=0.3", "alfa"),  # the same, not added: Hydra's own refusal
    ("+trainer.max_epoch=3", "max_epoch"),  # a typo of trainer.max_epochs
    ("+dataset.hops=2", "hops"),  # a graph dataset's key on an event dataset
    ("+optimizer.momentum=0.9", "momentum"),  # SGD's key on Adam
    ("early_stopping=validation early_stopping.patience=-1", "patience"),
    ("+early_stopping.patience=5", "patience"),  # a key of an option that is not chosen (early_stopping: none)
    ("+alpha=0.3", "alpha"),  # meant: neuron.alpha=0.3; a new top-level key
    ("~dataset.T", "dataset.T"),  # a key the run reads, deleted
    ("dataset=karate backbone=msg task=link +backbone.r=5", "r"),  # the Fermi-Dirac decoder's, under the cosine one
    ("dataset=karate backbone=msg task=link backbone.decoder=minkowski backbone.manifold=sphere", "decoder"),
    ("-m launcher=submitit_local hydra.launcher.timeout_min=0", "timeout_min"),
    ("-m launcher=submitit_local hydra.launcher.cpus_per_task=0", "cpus_per_task"),
]
#: how many overrides a command may give and still start at once (the run folder's name is composed from them)
MANY_OVERRIDES = 300
# a Python user of the neurons: (case, code that must raise a ValueError naming the word, the word)
MODULE_VALUES = [
    (
        "FractionalLIF(tau=1e-9), forward and backward",
        "x = torch.randn(64, 2, 3, requires_grad=True); FractionalLIF(tau=1e-9)(x).sum().backward(); "
        "assert torch.isfinite(x.grad).all(), 'NaN input gradients'",
        "tau",
    ),
    ("FractionalLIF on meta tensors", "FractionalLIF()(torch.ones(4, 2, 3, device='meta'))", "meta"),
    ("FractionalLIF(engine='triton') on CPU tensors", "FractionalLIF(engine='triton')(torch.ones(4, 2, 3))", "triton"),
]

# a process holding a run folder's lock, as a run in training does
HOLD = """
import sys, time
from pathlib import Path
from fsnn.suite.runfiles import run_lock
with run_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(600)
"""

# a complete run of Table 2 on Cora: the healthy record each report case damages a copy of
REPORT_TASK = "table2_node_classification"
HEALTHY = {
    "status": "complete",
    "task": REPORT_TASK,
    "run": "healthy",
    "metric": "acc",
    "metric_unit": "fraction",
    "test_acc": 0.8,
    "val_acc_best": 0.8,
    "recipe": "matched",
    "seed": 0,
    "device": "cpu",
    "overrides": ["dataset=cora"],
    "versions": {"fsnn_commit": "0" * 40},
    "config": {
        "dataset": {"name": "cora"},
        "backbone": {"name": "sgcn"},
        "neuron": {"name": "flif"},
        "trainer": {"max_epochs": 1},
        "paths": {"results_dir": "results"},
    },
}

# fsnn-report of --root with its atomic writer on a disk that fills up after 4 KiB, or on a read-only file system:
# python -c FAILING_DISK <full|read-only> <fsnn-report arguments...>
FAILING_DISK = """
import errno, io, os, runpy, sys
sys.path.insert(0, {tests!r})
from interrupt import FillingUp
import fsnn.atomic as files
how, *args = sys.argv[1:]
def failing_open(path, mode="r", *rest, **options):
    if ".tmp-" not in os.path.basename(str(path)):
        return open(path, mode, *rest, **options)
    if how == "read-only":
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
    return io.BufferedWriter(FillingUp(path, "wb"))
files.open = failing_open
sys.argv[:] = ["fsnn-report", *args]
runpy.run_module("fsnn.report", run_name="__main__")
"""

# the commands run as modules: their names as a user types them
MODULES = {"fsnn-report": "fsnn.report", "fsnn-fixtures": "fsnn.data.fakes.make_fixtures"}

# a link on the report page whose value starts with a scheme; data: (the icon, the figures) and the datasets' web
# addresses are the page's own
SCHEME_LINK = re.compile(r"""(?:href|src)\s*=\s*["']\s*(?!data:|https?:)[a-zA-Z][a-zA-Z0-9+.-]*:""")

# a run folder made by the checkout's own functions: conf dir, run dir, "same"/"other" shape, overrides
FABRICATE = """
import sys, torch
from pathlib import Path
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from fsnn.runs.configs import register_resolvers
from fsnn.suite.checkpoint import result_config, save_checkpoint
from fsnn.suite.tasks import build_task
conf, run, shape = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
register_resolvers()
with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
    cfg = compose("config", overrides=sys.argv[4:])
(run / ".hydra").mkdir(parents=True)
OmegaConf.save(cfg, run / ".hydra" / "config.yaml")
state = build_task(cfg).module.state_dict()
if shape == "other":
    key = next(k for k, v in state.items() if v.dim() == 2)
    state[key] = torch.zeros(state[key].shape[0], state[key].shape[1] + 7)
save_checkpoint({"state_dict": state}, run / "checkpoints" / "best.ckpt", result_config(cfg))
"""


def cell_runs(results: Path, n: int, neuron: str = "flif") -> list[Path]:
    """``n`` distinct runs (seeds 0, 1, ..., each its own accuracy and wall time) of ``neuron`` in :data:`HEALTHY`'s
    Table 2 cell (Cora, SGCN), written by :func:`report_record`: their ``metrics.json`` files."""

    def run(seed: int):
        def change(record: dict) -> None:
            record.update(seed=seed, run=f"{neuron}-{seed}", test_acc=0.8 + 0.004 * seed, wall_time_s=100.0 + seed)
            record["config"]["neuron"]["name"] = neuron
            if neuron != "flif":
                record["test_acc"] -= 0.05

        return change

    return [report_record(results, f"{neuron}-{seed}", run(seed)) for seed in range(n)]


def _with(text: str, **keys) -> str:
    """The JSON record ``text`` with ``keys`` set."""
    return json.dumps({**json.loads(text), **keys})


def tree_hashes(folder: Path) -> dict[str, str]:
    """``{path in folder: SHA-256 of its content}`` of every file under ``folder`` (none where it is absent)."""
    return {
        path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (a run's data loader workers), from ``/proc``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def remove_deep(top: Path) -> None:
    """Remove a tree of folders too deep for ``shutil.rmtree`` (which recurses), bottom up; nothing if absent."""
    folders = []
    while top.is_dir() and not top.is_symlink():
        folders.append(top)
        inner = [p for p in top.iterdir() if p.is_dir() and not p.is_symlink()]
        top = inner[0] if inner else top / "none"
    for folder in reversed(folders):
        shutil.rmtree(folder)


def report_record(results: Path, name: str, change: Callable[[dict], None] | None = None) -> Path:
    """A copy of :data:`HEALTHY` (``change`` applied) as ``<results>/<REPORT_TASK>/<name>/metrics.json``."""
    run = json.loads(json.dumps(HEALTHY))
    if change is not None:
        change(run)
    path = results / REPORT_TASK / name / "metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(run))
    return path


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def names_sampler(record: dict | None, out: str) -> str:
    """``clear`` when a record names the samplers of its Poisson encoders."""
    if "Traceback" in out:
        return "traceback"
    encoders = (record or {}).get("encoders") or {}
    return "clear" if encoders and all(e.get("samplers") for e in encoders.values()) else "silent"


def edit_pickle(path: Path, edit) -> None:
    obj = pickle.loads(path.read_bytes(), encoding="latin1")
    path.write_bytes(pickle.dumps(edit(obj), protocol=2))


def with_nan(x):
    x = x.tolil()
    x[3, 5] = float("nan")
    return x.tocsr()


def edge_beyond(raw: Path) -> None:
    def edit(graph):
        graph[0].append(99_999)
        return graph

    edit_pickle(raw / "ind.cora.graph", edit)


def truncation(name: str):
    def damage(raw: Path) -> None:
        path = raw / name
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])

    return damage


class Payload:
    """A pickle that creates a file when it is loaded."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))
