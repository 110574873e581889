#!/usr/bin/env python
"""Try, as a new user would, bad values and damaged files (a typo, a truncated checkpoint, a rotten cache) against
a checkout of fsnn, and count what happens:
``python scripts/probe_runs.py [--root CHECKOUT] [--out DIR] [--only CATEGORY ...]``.

Every case runs ``train.py`` / ``evaluate.py`` (with ``study=energy``) of ``--root`` (default: this checkout) in a
fresh folder on tiny fixture data, and gets one outcome:

- ``clear``: one ``fsnn: error:`` line (a command's own: ``fsnn-fixtures: error:``) that names the key or file, no
  traceback (or, for a damaged cache, a message naming the file and a correct result; for a behaviour such as the
  run-folder lock, the safe behaviour);
- ``traceback``: a Python traceback on the console;
- ``unclear``: an error without traceback that does not name the key or file;
- ``silent``: a bad value accepted, damage not noticed, a payload run, work redone or differing.

``lost`` counts the cases where a complete ``metrics.json`` written before, or a user's real dataset, was overwritten
or removed, ``security``
those where a file outside the folder it belongs in was written, replaced, removed or read (a string of a config or
a record that became a path). Further categories: ``confined`` (strings that become paths), ``folders`` (one
configuration, one folder), ``signals`` (every command on a signal), ``library`` (learned parameters, engines'
autograd, impossible metrics), ``report`` (``fsnn-report`` on a damaged or hostile results tree, a full disk, a
read-only or linked-out output folder), ``environment`` (variables set to nothing), ``mismatch`` (data that no
longer matches a run, corrupt graph files), ``inputs`` (caches and inputs that lie: processed caches holding pickles, foreign or
stale ones, NaN features, a truncated compiled extension, the Poisson sampler in a run's record), ``cache keys`` (a
raw recording changed after its frames were cached, a cache marker edited), ``labels`` (class folders missing or not
the release's), ``decisions`` (copied runs in a table cell, runs of several commits, claims on samples that cannot
carry a decision), ``handlers`` (SIGUSR1 / SIGUSR2 to a run and its loader workers, a refused resume), ``reads``
(damaged saved configs, records of runs that never finished, unwritable fixture folders, a linked frame cache, events
outside the sensor), ``writers`` (``fsnn-fixtures`` over real data or another fake, on a full disk; the fakes' runs
recorded as fake), ``schema`` (keys no config of their group has), ``parameters``
(the neuron's parameters set outside their domain), ``autograd`` (second derivatives and compilation: a correct
result or a clear refusal) and ``registries`` (names that become paths, entries of the wrong kind); these last three
are Python snippets (:data:`SNIPPETS`), whose fast ones ``tests/suite/test_probe_snippets.py`` runs. ``--fast`` keeps, in
those of :data:`FAST`, the cases that train nothing: what the test suite runs. Prints one table per category and
the totals, and writes them to ``<out>/probe.json`` and ``<out>/probe.md``. This is a probe,
not a test: it records what a checkout does, including the failures.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import os
import pickle
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Callable

import numpy as np
import torch

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "tests"))
from zipdata import flip_tensor_byte, member_span  # noqa: E402 - the tests' helper, to damage files the same way

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

# a Python user of the library: {category: [(case, code, the word a clear refusal names, fast)]}. The code runs with
# torch, math, FractionalLIF and FractionalIF imported; it ends normally on a correct result, raises an
# AssertionError when it got a wrong one or a bad value was accepted (silent), and a clear refusal is a ValueError,
# TypeError, RuntimeError or FileNotFoundError (the data loaders' DatasetMissingError) whose message names the word
# (run_snippets)
_LOAD_ALPHA = (
    "m = FractionalLIF(alpha=0.3)\n"
    "m.load_state_dict({{'alpha_value': torch.tensor({value}, dtype=torch.float64)}})\n"
    "raise AssertionError(f'alpha {{float(m.alpha)!r}} loaded')"
)
_NAN_RAW = (
    "m = FractionalLIF(learn_alpha=True, learn_tau=True)\n"
    "with torch.no_grad():\n    m.{name}.fill_(float('nan'))\n"
    "s, v = m(torch.rand(20, 2, 3) * 2, return_state=True)\n"
    "raise AssertionError(f'{{int(s.sum())}} spikes, membrane finite: {{bool(torch.isfinite(v).all())}}')"
)
_CAST = (
    "m = FractionalLIF(alpha=0.3).{cast}()\nassert float(m.alpha) == 0.3, f'alpha {{float(m.alpha)!r}} after .{cast}()'"
)
# the second derivative of a loss of the membrane and the spikes, against finite differences of the first
_SECOND = (
    "m = FractionalLIF(alpha=0.6, tau=1.7, {options}).double()\n"
    "x = torch.rand(8, 1, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 0.5 + 0.6\n"
    "def loss(x):\n    s, v = m(x, return_state=True)\n    return (v ** 2).sum() + s.sum()\n"
    "def first(x):\n    x = x.detach().clone().requires_grad_()\n"
    "    return torch.autograd.grad(loss(x), x)[0]\n"
    "x.requires_grad_()\n(g,) = torch.autograd.grad(loss(x), x, create_graph=True)\n"
    "(h,) = torch.autograd.grad(g[0, 0, 0], x)\n"
    "e = torch.zeros_like(x)\ne[0] = 1e-6\n"
    "fd = float((first(x + e) - first(x - e))[0, 0, 0] / 2e-6)\n"
    "assert abs(float(h[0, 0, 0]) - fd) < 1e-4 * max(1.0, abs(fd)), "
    "f'second derivative {{float(h[0, 0, 0]):.4g}}, finite differences {{fd:.4g}}'"
)
# a fresh dynamo: what an earlier compilation cached must not decide the case
_NET = (
    "torch._dynamo.reset()\ntorch._dynamo.utils.counters.clear()\n"
    "net = torch.nn.Sequential(torch.nn.Linear(3, 4), FractionalLIF(), torch.nn.Linear(4, 2))\n"
    "x = torch.rand(5, 2, 3)\n"
)
_REGISTER = (
    "from fsnn.neurons import register_neuron\n"
    "register_neuron({name!r})(torch.nn.Identity)\n"
    "raise AssertionError('registered the neuron name ' + repr({name!r}))"
)
SNIPPETS = {
    "parameters": [
        *[
            (f"load_state_dict with alpha {v}", _LOAD_ALPHA.format(value=v), "alpha must be", True)
            for v in ("1.5", "0.0", "float('nan')")
        ],
        (
            "learned threshold pushed to 0, neuron at rest",
            "m = FractionalLIF(learn_threshold=True)\nwith torch.no_grad():\n    m.theta_raw.fill_(-200.0)\n"
            "s = m(torch.zeros(20, 2, 3))\n"
            "assert not s.any(), f'fires at {float(s.mean()):.0%} of the steps at rest, threshold "
            "{float(m.threshold.detach())!r}'",
            "threshold",
            True,
        ),
        *[
            (f"NaN {name}, forward", _NAN_RAW.format(name=name), f"{name} must be", True)
            for name in ("alpha_raw", "tau_raw")
        ],
        *[(f".{cast}() keeps alpha 0.3", _CAST.format(cast=cast), "alpha", True) for cast in ("half", "bfloat16")],
        (
            "state dict of a .half() copy keeps alpha 0.3",
            "n = FractionalLIF(alpha=0.3)\nn.load_state_dict(FractionalLIF(alpha=0.3).half().state_dict())\n"
            "assert float(n.alpha) == 0.3, f'alpha {float(n.alpha)!r} after the round trip'",
            "alpha",
            True,
        ),
        (
            "FractionalLIF(memory=10**12)",
            "FractionalLIF(memory=10**12)\nraise AssertionError('memory=10**12 accepted')",
            "memory must be",
            True,
        ),
        (
            "assigned tau below the stability bound",
            "m = FractionalLIF(alpha=0.5)\nm.tau_value = 0.1\n_, v = m(torch.rand(200, 2, 3), return_state=True)\n"
            "raise AssertionError(f'tau 0.1 assigned; membrane finite: {bool(torch.isfinite(v).all())}')",
            "tau must be",
            True,
        ),
    ],
    "autograd": [
        *[
            (
                f"second derivative, engine={engine}",
                _SECOND.format(options=f"engine={engine!r}"),
                "differentiable once",
                True,
            )
            for engine in ("cpp", "direct", "soe")
        ],
        (
            "second derivative, convention=spikede (gradgradcheck)",
            "m = FractionalLIF(alpha=0.6, tau=1.7, surrogate_scale=2.0, convention='spikede').double()\n"
            "x = torch.rand(6, 2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3)) * 1.6 + 0.4\n"
            "assert torch.autograd.gradgradcheck(lambda x: [*m(x.requires_grad_(), return_state=True)], (x,), "
            "eps=1e-6, atol=1e-5)",
            "differentiable once",
            True,
        ),
        (
            "second derivative, compiled Poisson sampler",
            "from fsnn.models.poisson import poisson_encode\nw = torch.randn(3, 16, requires_grad=True)\n"
            "p = torch.rand(9, 16, generator=torch.Generator().manual_seed(2)) * 0.8 + 0.1\n"
            "spikes = poisson_encode(p, 4, generator=torch.Generator().manual_seed(1))\n"
            "currents = spikes.linear(w, None)\n"
            "assert spikes.sampler == 'compiled', 'the compiled sampler is not built here'\n"
            "(g,) = torch.autograd.grad(currents.square().sum(), w, create_graph=True)\n"
            "(h,) = torch.autograd.grad(g.square().sum(), w)\nassert h.abs().sum() > 0, 'a zero second derivative'",
            "differentiable once",
            True,
        ),
        (
            "torch.compile: graph breaks only at the engines",
            _NET + "from torch._dynamo.utils import counters\n"
            "y = torch.compile(net, backend='eager')(x)\n"
            "assert torch.equal(y, net(x)), 'different outputs'\n"
            "others = [r.splitlines()[0] for r in counters['graph_break'] if 'torch.compiler.disable' not in r]\n"
            "assert not others, f'{len(others)} graph breaks besides the engines: {others[:3]}'",
            "graph",
            True,
        ),
        (
            "torch.compile(fullgraph=True)",
            _NET + "torch.compile(net, backend='eager', fullgraph=True)(x)\nraise AssertionError('compiled')",
            "engines run outside the graph",
            True,
        ),
        (
            "torch.export",
            _NET + "torch.export.export(net, (x,))\nraise AssertionError('exported')",
            "engines run outside the graph",
            True,
        ),
    ],
    "registries": [
        *[
            (f"register_neuron({name!r})", _REGISTER.format(name=name), "must be an identifier", True)
            for name in ("../evil", "a b", "")
        ],
        (
            "register_neuron('not_callable')(3)",
            "from fsnn.neurons import register_neuron\n"
            "register_neuron('not_callable')(3)\nraise AssertionError('3 registered as a neuron')",
            "must be callable",
            True,
        ),
        (
            "every registry with the name '../evil'",
            "from fsnn.data.registry import DATASETS\nfrom fsnn.models.registry import BACKBONES\n"
            "from fsnn.neurons.registry import NEURONS\nfrom fsnn.data.corruptions import CORRUPTIONS\n"
            "from fsnn.suite.studies import STUDIES\nfrom fsnn.suite.tasks import TASKS\naccepted = []\n"
            "for registry in (NEURONS, BACKBONES, DATASETS, TASKS, CORRUPTIONS, STUDIES):\n"
            "    try:\n        registry.register('../evil', DATASETS['cora'] if registry is DATASETS else "
            "TASKS['node'] if registry is TASKS else print)\n        accepted.append(registry.what)\n"
            "    except ValueError as error:\n        assert 'identifier' in str(error), str(error)\n"
            "assert not accepted, f'accepted by {accepted}'",
            "identifier",
            True,
        ),
    ],
}
_DRIVER = """
import json, math, sys
import torch
from fsnn import FractionalIF, FractionalLIF
for code, word in json.loads(sys.argv[1]):
    try:
        exec(compile(code, "<snippet>", "exec"), {"torch": torch, "math": math, "FractionalLIF": FractionalLIF,
                                                  "FractionalIF": FractionalIF, "__name__": "__snippet__"})
    except AssertionError as error:
        outcome = ["silent", str(error)]
    except (ValueError, TypeError, RuntimeError, FileNotFoundError) as error:
        text = str(error).strip()
        outcome = ["clear" if word in text else "unclear", text.splitlines()[0] if text else type(error).__name__]
    except Exception as error:  # an error no refusal raises: a traceback for a user
        outcome = ["traceback", f"{type(error).__name__}: {error}".splitlines()[0]]
    else:
        outcome = ["clear", "a correct result"]
    print(json.dumps(outcome), flush=True)
"""

# a Python user of the event datasets (Probe.cache_keys, labels, reads): serve(name, data, cache) builds the dataset
# ``name`` of the fixture copy ``data`` (its frames cached under ``cache``, default ``<data>/fsnn_cache``) and returns
# its splits; ``frames(split, i)`` the counts it serves for a sample
_SERVE = """
import json, logging, os, shutil
from pathlib import Path
import numpy as np
from fsnn.data.registry import build_dataset
def serve(name, data, cache=None):
    return build_dataset(name, data, T=2, size=8, download=False, verify=False, num_workers=0, cache_dir=cache)
def frames(split, i=0):
    return split[i][0].numpy()
def labels(splits):
    return {key: label for split in splits for key, label in zip(split.keys, split.targets)}
"""
# the raw recording of the first N-MNIST training sample changed after its frames were cached (``{change}``: code
# given ``raw``, ``other`` (a recording of another size) and ``stat`` (the raw file's stat before)): the frames served
# next are those of a fresh cache of the changed file
_RAW_CHANGED = """
train = serve("nmnist", data)[0]
old = frames(train)
raw = data / "NMNIST" / train.keys[0]
stat = raw.stat()
other = next(p for p in sorted(raw.parent.parent.rglob("*.bin")) if p.stat().st_size != stat.st_size)
{change}
new = frames(serve("nmnist", data)[0])
fresh = frames(serve("nmnist", data, data / "fresh-cache")[0])
assert not np.array_equal(fresh, old), "the change does not change the frames: nothing to tell"
assert np.array_equal(new, fresh), f"the frames cached from the old {{raw.name}} served"
"""
# a cache marker of the N-MNIST training split edited (``{edit}``: code changing ``marker``, its content, given the
# dataset ``train``), then the dataset served three times, each a fresh build reading its first sample
_MARKER_EDITED = """
said = []
handler = logging.Handler()
handler.emit = lambda record: said.append(record.getMessage())
logging.getLogger("fsnn").addHandler(handler)
train = serve("nmnist", data)[0]
path = train.cache.dir / "_COMPLETE.json"
marker = json.loads(path.read_text())
{edit}
path.write_text(json.dumps(marker))
said.clear()
served = [serve("nmnist", data)[0] for _ in range(3)]
reads = [frames(split) for split in served]
fresh = serve("nmnist", data, data / "fresh-cache")[0]
assert all(split.targets == fresh.targets for split in served), "the marker's labels served, not the source's"
assert all(np.array_equal(r, frames(fresh)) for r in reads), "other frames than a fresh cache's"
assert len(said) <= 1, f"{{len(said)}} warnings over three reads: {{said[-1][:90]}}"
"""
# N-Caltech101 with a class folder changed (``{change}``: code given ``copy``, a second fixture copy): the labels of
# the samples both copies hold are the same
_NCALTECH_LABELS = """
shutil.copytree(data, copy := data.parent / "copy")
{change}
full, changed = labels(serve("ncaltech101", data)), labels(serve("ncaltech101", copy))
moved = {{key.split("/")[-2]: (full[key], label) for key, label in changed.items() if full.get(key) != label}}
assert not moved, f"labels moved (class: (with all folders, without)): {{moved}}"
"""
# N-Caltech101, DVS-Lip or MINI-HARDVS (``{name}``) with a class folder changed (``{change}``: code given ``copy``, a
# second fixture copy): the samples both copies hold have the same labels in both
_LABELS = """
shutil.copytree(data, copy := data.parent / "copy")
{change}
full, changed = labels(serve({name!r}, data)), labels(serve({name!r}, copy))
moved = {{key.split("/")[-2]: (full[key], label) for key, label in changed.items() if full.get(key) != label}}
assert not moved, f"labels moved (class: (with every folder, without)): {{moved}}"
"""
# an event dataset with a damaged raw file: its build must refuse it
_ACCEPTED = """
serve({name!r}, data)
raise AssertionError("built: the damaged raw file accepted")
"""
# a claims decision that the runs cannot carry: ``decide(a, b, claim)`` must say it is not decided
_DECIDE = """
from fsnn.report.claims import decide
d = decide({a}, {b}, {claim})
assert d.verdict == "not decided", f"{{d.verdict}}: {{d.reason}}"
"""


def run_snippets(
    root: Path, cases: list[tuple[str, str]], timeout: int = 600, env: dict | None = None
) -> list[tuple[str, str]]:
    """``(outcome, note)`` of each :data:`SNIPPETS` case ``(code, word)``, run in turn in one fresh process against
    the checkout ``root`` (``env``: the variables to run it with, default this process's); a case that kills the
    process, and those after it, is a ``traceback``."""
    env = {**(os.environ if env is None else env), "PYTHONPATH": str(root), "WANDB_MODE": "disabled"}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _DRIVER, json.dumps(cases)],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        out, err = proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as expired:
        out, err = expired.stdout or "", f"still running after {timeout} s"
        out = out.decode(errors="replace") if isinstance(out, bytes) else out
    results = []
    for line in out.strip().splitlines():
        try:
            outcome, note = json.loads(line)
        except ValueError:  # something the library printed
            continue
        results.append((outcome, note[:200]))
    tail = ((err or "").strip().splitlines() or ["the process died"])[-1][:200]
    return results + [("traceback", tail)] * (len(cases) - len(results))


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
MODULES = {"fsnn-report": "fsnn.report", "fsnn-fixtures": "fsnn.data.make_fixtures"}

# a link on the report page whose value starts with a scheme; data: (the icon, the figures) and the datasets' web
# addresses are the page's own
SCHEME_LINK = re.compile(r"""(?:href|src)\s*=\s*["']\s*(?!data:|https?:)[a-zA-Z][a-zA-Z0-9+.-]*:""")


class Probe:
    def __init__(
        self,
        root: Path,
        work: Path,
        data: Path,
        values: list[tuple[str, str]] = BAD_VALUES,
        journal: Path | None = None,
        fast: bool = False,
    ):
        self.root, self.work, self.data, self.values, self.journal = root, work, data, values, journal
        self.fast = fast  # only the cases that train nothing (FAST)
        self.rows: list[dict] = []
        self.count = 0

    # -- running things ---------------------------------------------------------------------------------------------
    def env(self, **extra) -> dict:
        return {
            **os.environ,
            "PYTHONPATH": str(self.root),
            "WANDB_MODE": "disabled",
            "FSNN_DATA_VERIFY": "0",
            "FSNN_DATA_DOWNLOAD": "0",
            "HYDRA_FULL_ERROR": "0",
            **extra,
        }

    def folder(self, name: str) -> Path:
        self.count += 1
        # only characters a Hydra override value takes unquoted (the path goes into run_dir=... and paths.*=...)
        path = self.work / f"{self.count:03d}-{re.sub(r'[^A-Za-z0-9._+-]', '_', name)[:60]}"
        path.mkdir(parents=True)
        return path

    def run(
        self,
        script: str,
        *args: str,
        cwd: Path,
        timeout: int = 300,
        env: dict | None = None,
        umask: int | None = None,
        file_size: int | None = None,
        read_only: Path | None = None,
    ) -> tuple[int | None, str]:
        """``(exit status or None on timeout, stdout + stderr)`` of ``script`` (a file of the checkout, or one of
        :data:`MODULES`) under ``umask``, with files limited to ``file_size`` bytes (a disk that fills up: a write
        past it fails with EFBIG), or with the folder ``read_only`` mounted read-only (in a mount namespace of its
        own: root passes every permission check)."""
        command = [
            sys.executable,
            *(["-m", MODULES[script]] if script in MODULES else [str(self.root / script)]),
            *args,
        ]
        if read_only is not None:
            remount = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"'
            command = ["unshare", "-rm", "sh", "-c", remount, str(read_only), *command]

        def limits() -> None:
            if umask is not None:
                os.umask(umask)
            if file_size is not None:
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing
                resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

        try:
            proc = subprocess.run(
                command,
                cwd=cwd,
                env=self.env(**(env or {})),
                capture_output=True,
                text=True,
                timeout=timeout,
                preexec_fn=limits,
            )
        except subprocess.TimeoutExpired as expired:
            out = (expired.stdout or b"") + (expired.stderr or b"")
            return None, out.decode(errors="replace") if isinstance(out, bytes) else out
        return proc.returncode, proc.stdout + proc.stderr

    def train(self, cwd: Path, *args: str, **kwargs):
        return self.run("train.py", *args, f"paths.data_dir={self.data}", cwd=cwd, **kwargs)

    @staticmethod
    def classify_error(rc: int | None, out: str, name: str) -> str:
        """The outcome of a command that should have refused its input with one line naming ``name``."""
        if "Traceback (most recent call last)" in out or '\n  File "' in out:
            return "traceback"
        if rc == 0 or rc is None:
            return "silent"
        lines = [line for line in out.splitlines() if ERROR_LINE.match(line)]
        return "clear" if lines and all(name in line for line in lines[:1]) else "unclear"

    def record(
        self, category: str, case: str, outcome: str, lost: bool = False, note: str = "", security: bool = False
    ) -> None:
        """``security``: a file written, replaced or removed outside the folder it belongs in."""
        assert outcome in OUTCOMES, outcome
        row = {"category": category, "case": case, "outcome": outcome, "lost": lost, "note": note, "security": security}
        self.rows.append(row)
        if self.journal is not None:  # a probe stopped part-way keeps what it recorded
            with self.journal.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
        print(
            f"  {category:12s} {case:58s} {outcome:9s}{' LOST' if lost else ''}{' SECURITY' if security else ''} "
            f"{note}",
            flush=True,
        )

    def snippets(self, category: str, cases: list[tuple[str, str, str]]) -> None:
        """Record each case ``(case, code, word)``: Python code run by :func:`run_snippets` in a fresh process of its
        own (nothing carries over), with the probe's environment."""
        for case, code, word in cases:
            ((outcome, note),) = run_snippets(self.root, [(code, word)], env=self.env())
            self.record(category, case, outcome, note=note[:90])

    @staticmethod
    def run_dir(cwd: Path, task: str = "train") -> Path:
        found = sorted((cwd / "runs" / task).glob("*/metrics.json"))
        if len(found) != 1:
            raise RuntimeError(f"expected one run under {cwd}, found {found}")
        return found[0].parent

    @staticmethod
    def metrics(run: Path) -> dict | None:
        return _read_json(run / "metrics.json")

    def complete_run(self, name: str, *args: str) -> Path:
        """A finished tiny run to damage, trained once and copied for each case."""
        cwd = self.folder(name)
        rc, out = self.train(cwd, *TINY, *args)
        if rc != 0:
            raise RuntimeError(f"the reference run {args} failed:\n{out[-3000:]}")
        return self.run_dir(cwd)

    def copy_run(self, run: Path, name: str) -> tuple[Path, Path]:
        cwd = self.folder(name)
        target = cwd / run.relative_to(run.parents[2])
        shutil.copytree(run, target)
        return cwd, target

    # -- the cases --------------------------------------------------------------------------------------------------
    def bad_values(self) -> None:
        for override, name in self.values:
            cwd = self.folder(override)
            # one epoch that ends on its own, so an accepted value finishes (trainer.max_epochs=-1 would not)
            rc, out = self.train(cwd, *TINY, override, timeout=240)
            self.record(
                "bad value",
                override,
                self.classify_error(rc, out, name),
                note="timed out after 240 s" if rc is None else "",
            )
        cwd = self.folder("data_dir-file")
        (cwd / "a_file").write_text("not a folder")
        rc, out = self.run("train.py", *TINY, f"paths.data_dir={cwd / 'a_file'}", cwd=cwd)
        self.record("bad value", "paths.data_dir=<a file>", self.classify_error(rc, out, "data_dir"))
        for label, target in (
            ("paths.results_dir=<under a file>", "a_file/results"),
            ("paths.results_dir=/proc/<unwritable>", "/proc/fsnn_results"),
        ):
            cwd = self.folder(label)
            (cwd / "a_file").write_text("not a folder")
            rc, out = self.train(cwd, *TINY, f"paths.results_dir={cwd / target if target[0] != '/' else target}")
            self.record("bad value", label, self.classify_error(rc, out, "results_dir"))
        if not torch.cuda.is_available():
            cwd = self.folder("accelerator-gpu")
            rc, out = self.train(cwd, *TINY, "trainer.accelerator=gpu")
            self.record("bad value", "trainer.accelerator=gpu (no GPU)", self.classify_error(rc, out, "accelerator"))
            cwd = self.folder("engine-triton")
            rc, out = self.train(cwd, *TINY, "neuron.engine=triton", env={"TRITON_INTERPRET": "0"})
            made = (cwd / "runs").exists()
            self.record(
                "bad value",
                "neuron.engine=triton (no GPU)",
                "unclear" if made and rc == 2 else self.classify_error(rc, out, "engine"),
                note="a run folder was made" if made else "",
            )

    def multirun(self) -> None:
        cwd = self.folder("multirun")
        rc, out = self.train(cwd, "-m", *TINY, "neuron.alpha=0.5,abc", timeout=600)
        outcome = self.classify_error(rc, out, "alpha")
        self.record("multirun", "-m neuron.alpha=0.5,abc (one bad job)", outcome)

    def checkpoints(self) -> None:
        ref = self.complete_run("ref")
        other = self.complete_run("other-model", "backbone.channels=16")

        def truncate(path):
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])

        def empty(path):
            path.write_bytes(b"")

        def random_bytes(path):
            path.write_bytes(os.urandom(path.stat().st_size))

        def another(path):
            shutil.copy(other / "checkpoints" / path.name, path)

        def bit_flip(path):
            flip_tensor_byte(path)

        damages = {
            "truncated": truncate,
            "empty": empty,
            "random bytes": random_bytes,
            "another model's": another,
            "bit flip in tensor data": bit_flip,
        }
        for ckpt, script in (("last.ckpt", "train.py"), ("best.ckpt", "evaluate.py")):
            for label, damage in damages.items():
                cwd, run = self.copy_run(ref, f"{ckpt}-{label}")
                before = (run / "metrics.json").read_text()
                damage(run / "checkpoints" / ckpt)
                if script == "train.py":
                    rc, out = self.train(cwd, *TINY)
                else:
                    rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={self.data}", cwd=cwd)
                after = (run / "metrics.json").read_text() if (run / "metrics.json").exists() else None
                lost = after != before and (after is None or json.loads(after).get("status") != "complete")
                self.record(
                    "checkpoint", f"{label} {ckpt}, then {script}", self.classify_error(rc, out, ckpt), lost=lost
                )

    def caches(self) -> None:
        # graph feature cache: same-size corruption of the propagated features
        cwd = self.folder("graph-cache")
        rc, out = self.train(cwd, *GRAPH)
        caches = sorted((self.data / "fsnn_cache" / "graphs" / "cora").glob("propagate-*.pt"))
        if rc != 0 or not caches:
            raise RuntimeError(f"graph reference run failed or wrote no cache:\n{out[-3000:]}")
        for cache in caches:
            data = bytearray(cache.read_bytes())
            start, _ = member_span(cache)
            data[start : start + 4 * 500] = b"\xff" * (4 * 500)  # 500 NaN features, same size
            cache.write_bytes(bytes(data))
        rc, out = self.train(cwd, *GRAPH, "seed=1")
        m = self.metrics(self.run_dir_matching(cwd, "seed-1"))
        finite = m is not None and m.get("status") == "complete" and m["test_acc"] == m["test_acc"]
        named = any(str(c) in out or c.name in out for c in caches)
        outcome = "clear" if named and finite else "traceback" if "Traceback" in out else "silent"
        self.record(
            "cache",
            "graph feature cache, same-size corruption",
            outcome,
            note=f"test acc {m.get('test_acc') if m else None}",
        )

        # event-frame cache: bit rot inside a compressed sample
        cwd = frame_run = self.folder("frame-cache")
        rc, out = self.train(cwd, *GESTURE)
        frames = sorted((self.data / "fsnn_cache" / "dvsgesture").rglob("*.npz"))
        if rc != 0 or not frames:
            raise RuntimeError(f"gesture reference run failed or wrote no cache:\n{out[-3000:]}")
        for sample in frames:  # every sample, so that the run reads a damaged one
            start, size = member_span(sample, "frames.npy")
            data = bytearray(sample.read_bytes())
            for offset in range(start + size // 4, start + size - 4, max(size // 12, 1)):
                data[offset] ^= 0x5A  # inside the deflate stream: zlib cannot decode it
            sample.write_bytes(bytes(data))
        rc, out = self.train(cwd, *GESTURE, "seed=1")
        named = any(s.name in out for s in frames)
        outcome = (
            "traceback" if "Traceback" in out else "clear" if rc == 0 and named else ("unclear" if rc else "silent")
        )
        self.record("cache", "event-frame .npz, bit rot", outcome)

        # a partial DVS128 Gesture copy (110 of 1,077 training files) with verification on
        cwd = self.folder("gesture-verify")
        rc, out = self.train(cwd, *GESTURE, env={"FSNN_DATA_VERIFY": "1"})
        outcome = "silent" if rc == 0 else self.classify_error(rc, out, "1,077")
        self.record("cache", "DVS128 Gesture with 110 of 1,077 files, verify on", outcome)
        m = self.metrics(self.run_dir_matching(frame_run, "dataset"))
        has = m is not None and isinstance(m.get("split_sizes"), dict)
        self.record("cache", "metrics.json records split sizes", "clear" if has else "silent")

    @staticmethod
    def run_dir_matching(cwd: Path, text: str, task: str = "train") -> Path:
        """The first run folder under ``cwd`` whose name contains ``text``."""
        found = [p.parent for p in sorted((cwd / "runs" / task).glob("*/metrics.json")) if text in p.parent.name]
        return found[0] if found else cwd / "missing"

    def security(self) -> None:
        ref = self.complete_run("security-ref")

        def pickle_payload(run: Path, marker: Path) -> None:
            (run / "checkpoints" / "best.ckpt").write_bytes(pickle.dumps(Payload(str(marker))))

        def target_payload(run: Path, marker: Path) -> None:
            config = run / ".hydra" / "config.yaml"
            text = config.read_text()
            start = text.index("optimizer:")
            end = text.index("\n", text.index("weight_decay", start))
            config.write_text(
                text[:start] + f"optimizer:\n  _target_: shutil.copyfile\n  src: {config}\n  dst: {marker}" + text[end:]
            )

        cases = {
            "pickle payload in best.ckpt": (pickle_payload, "best.ckpt"),
            "_target_: shutil.copyfile in .hydra/config.yaml": (target_payload, "_target_"),
        }
        for label, (plant, name) in cases.items():
            for study in ("none", "energy"):
                cwd, run = self.copy_run(ref, f"{name}-{study}")
                marker = cwd / "PAYLOAD_RAN"
                plant(run, marker)
                rc, out = self.run(
                    "evaluate.py", f"run_dir={run}", f"paths.data_dir={self.data}", f"study={study}", cwd=cwd
                )
                outcome = "silent" if marker.exists() else self.classify_error(rc, out, name)
                self.record(
                    "security",
                    f"{label}, evaluate.py study={study}",
                    outcome,
                    note="payload ran" if marker.exists() else "",
                )

    def values(self) -> None:
        # the neurons called from Python: one ValueError naming the argument, not a deep error or NaN
        for case, code, word in MODULE_VALUES:
            cwd = self.folder(case)
            script = (
                "import torch, sys\nfrom fsnn import FractionalLIF\ntry:\n    " + code + "\n"
                "except ValueError as error:\n    print(f'fsnn: error: {error}'); sys.exit(2)\n"
                "except AssertionError as error:\n    print(f'accepted: {error}')\n"
            )  # silent
            proc = subprocess.run(
                [sys.executable, "-c", script],
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=300,
                env=self.env(TRITON_INTERPRET="0"),
            )
            outcome = (
                "silent"
                if proc.returncode == 0
                else "traceback"
                if "Traceback" in proc.stderr
                else self.classify_error(proc.returncode, proc.stdout, word)
            )
            self.record(
                "values",
                case,
                outcome,
                note=(proc.stdout + proc.stderr).strip().splitlines()[-1][:80] if proc.stdout + proc.stderr else "",
            )
        # the precision Lightning ran is what metrics.json records (16-mixed runs as bf16-mixed on a CPU)
        cwd = self.folder("precision")
        rc, out = self.train(cwd, *TINY, "trainer.precision=16-mixed")
        run = self.run_dir_matching(cwd, "precision")
        m = self.metrics(run) or {}
        ran = "16-mixed" if torch.cuda.is_available() else "bf16-mixed"
        self.record(
            "values",
            "trainer.precision=16-mixed: metrics.json says what ran",
            "traceback" if "Traceback" in out else "clear" if m.get("precision") == ran else "silent",
            note=f"recorded {m.get('precision')!r}, ran {ran}",
        )
        # a complete run whose test accuracy is NaN: make_tables warns, names it and does not count it
        if m.get("status") == "complete":
            m["test_acc"] = float("nan")
            (run / "metrics.json").write_text(json.dumps(m))
            rc, out = self.run(
                "fsnn-report", "tables", "--results", str(cwd / "runs"), "--out", str(cwd / "tables"), cwd=cwd
            )
            counted = "1 complete" in out
            outcome = (
                "traceback"
                if "Traceback" in out
                else "clear"
                if str(run / "metrics.json") in out and not counted
                else "silent"
            )
            self.record(
                "values",
                "make_tables with a NaN test_acc",
                outcome,
                note="counted among the complete runs" if counted else "",
            )
        # a truncated PyG processed cache (Cora/processed/data.pt): named, and rebuilt from the raw files
        cwd = self.folder("pyg-processed")
        data = cwd / "data"
        shutil.copytree(self.data / "Cora" / "raw", data / "Cora" / "raw")
        graph = [*GRAPH, f"paths.data_dir={data}"]
        rc, out = self.run("train.py", *graph, cwd=cwd)
        cache = data / "Cora" / "processed" / "data.pt"
        if rc != 0 or not cache.exists():
            raise RuntimeError(f"graph reference run failed or wrote no processed cache:\n{out[-3000:]}")
        cache.write_bytes(cache.read_bytes()[: cache.stat().st_size // 2])
        rc, out = self.run("train.py", *graph, "seed=1", cwd=cwd)
        named = str(cache) in out
        outcome = "traceback" if "Traceback" in out else "clear" if named and rc == 0 else "unclear" if rc else "silent"
        self.record(
            "values",
            "truncated Cora/processed/data.pt",
            outcome,
            note="" if named else "the processed cache is not named",
        )

    def runs(self) -> None:
        # rerunning a finished run
        ref = self.complete_run("idempotent-ref")
        cwd, run = self.copy_run(ref, "rerun-complete")
        stamp = {p: p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file() and p.suffix in (".json", ".ckpt")}
        start = time.perf_counter()
        rc, out = self.train(cwd, *TINY)
        took = time.perf_counter() - start
        touched = [p.name for p, t in stamp.items() if p.stat().st_mtime_ns != t]
        self.record(
            "runs",
            "rerun a finished run",
            "clear" if rc == 0 and not touched else "silent",
            note=f"{took:.0f} s; rewritten: {sorted(set(touched))}",
        )
        # a sweep rerun: one complete job, one failed job
        cwd = self.folder("sweep-rerun")
        self.train(cwd, "-m", *TINY, "task=nonsense,null", timeout=600)
        done = self.run_dir_matching(cwd, "task-null")
        mtime = (done / "metrics.json").stat().st_mtime_ns
        self.train(cwd, "-m", *TINY, "task=nonsense,null", timeout=600)
        redone = (done / "metrics.json").stat().st_mtime_ns != mtime
        self.record(
            "runs",
            "rerun a sweep with one complete job",
            "silent" if redone else "clear",
            note="complete job retrained" if redone else "",
        )
        # kill -9 after the first epoch, then rerun: same result as an uninterrupted run?
        args = ["experiment=graph_demo", "trainer.max_epochs=3", "logger=none", "trainer.enable_progress_bar=false"]
        straight = self.folder("uninterrupted")
        self.train(straight, *args)
        killed = self.folder("killed")
        proc = subprocess.Popen(
            [sys.executable, str(self.root / "train.py"), *args, f"paths.data_dir={self.data}"],
            cwd=killed,
            env=self.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None:
            if list((killed / "runs").rglob("last.ckpt")):
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.train(killed, *args)
        a, b = (self.run_dir(c, "graph_demo") for c in (straight, killed))
        ma, mb = self.metrics(a), self.metrics(b)
        wa, wb = (
            torch.load(r / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)["state_dict"]
            for r in (a, b)
        )
        same = (
            ma["test_acc"] == mb["test_acc"]
            and ma["val_acc_best"] == mb["val_acc_best"]
            and all(torch.equal(wa[k], wb[k]) for k in wa)
        )
        diff = max(float((wa[k].float() - wb[k].float()).abs().max()) for k in wa)
        self.record(
            "runs",
            "kill -9 after epoch 0 + rerun = uninterrupted",
            "clear" if same else "silent",
            note=f"test acc {ma['test_acc']:.4f} vs {mb['test_acc']:.4f}, max weight diff {diff:.2g}",
        )
        # two identical commands at once
        cwd = self.folder("two-at-once")
        cmd = [sys.executable, str(self.root / "train.py"), *TINY, f"paths.data_dir={self.data}"]
        procs = [
            subprocess.Popen(cmd, cwd=cwd, env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for _ in range(2)
        ]
        outs = [(p.wait(timeout=600), p.stdout.read()) for p in procs]
        refused = [out for rc, out in outs if rc != 0]
        outcome = (
            "silent"
            if not refused
            else "clear"
            if len(refused) == 1 and "pid" in refused[0] and "Traceback" not in refused[0]
            else self.classify_error(1, refused[0], "pid")
        )
        self.record("runs", "two identical commands at once", outcome, note=f"exit codes {[rc for rc, _ in outs]}")
        # files under a group-writable umask
        cwd = self.folder("umask")
        self.train(cwd, *TINY, umask=0o002)
        run = self.run_dir(cwd)
        modes = {p.name: oct(p.stat().st_mode & 0o777) for p in run.rglob("*") if p.is_file()}
        private = sorted(name for name, mode in modes.items() if mode != "0o664")
        self.record(
            "runs",
            "files under umask 002 are 0664",
            "silent" if private else "clear",
            note=f"not 0664: {private}" if private else "",
        )

    def lifecycle(self) -> None:
        """A run's life beyond one process: a moved folder, ``force=true`` twice, SIGTERM and SIGINT, tools on a
        folder in training, a folder or a full disk where a run writes a file."""
        # interrupted before its test phase, moved, the original place gone: completes from its own files?
        old = self.folder("travel-old")
        self.patched(old, "before-test", *TINY)
        new = self.folder("travel-new")
        os.replace(old / "runs", new / "runs")
        rc, out = self.train(new, *TINY)
        m = self.metrics(self.run_dir(new))
        done = rc == 0 and m is not None and m.get("status") == "complete"
        self.record(
            "lifecycle",
            "interrupted before its test, moved, rerun",
            "clear" if done else self.behaviour(rc, out),
            note="" if done else self.first_error(out),
        )
        # force=true twice: is the first finished result still somewhere in the folder?
        cwd = self.folder("force-twice")
        self.train(cwd, *TINY)
        run = self.run_dir(cwd)
        first = (run / "metrics.json").read_bytes()
        rcs = [self.train(cwd, *TINY, "force=true")[0] for _ in range(2)]
        kept = [p.relative_to(run).as_posix() for p in run.rglob("*.json") if p.read_bytes() == first]
        self.record(
            "lifecycle",
            "force=true twice keeps the first result",
            "clear" if kept and rcs == [0, 0] else "silent",
            lost=not kept,
            note=f"kept as {kept}" if kept else "the first result is gone",
        )
        for name in ("SIGTERM", "SIGINT"):
            self.stopped_and_resumed("lifecycle", f"{name} after the first epoch, then rerun", name)
        # tools on a folder whose run holds the lock
        ref = self.complete_run("lock-ref")
        for label, args in (
            ("evaluate.py", ["study=none"]),
            ("evaluate.py study=energy", ["study=energy"]),
            ("evaluate.py allow_unfinished=true", ["study=energy", "allow_unfinished=true"]),
        ):
            cwd, run = self.copy_run(ref, label)
            holder = subprocess.Popen(
                [sys.executable, "-c", HOLD, str(run)], stdout=subprocess.PIPE, text=True, env=self.env()
            )
            try:
                holder.stdout.readline()
                rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={self.data}", *args, cwd=cwd)
            finally:
                holder.kill()
                holder.wait()
            written = [name for name in ("eval.json", "energy.json") if (run / name).exists()]
            if "allow_unfinished=true" in args:  # evaluated, and its output says the run was unfinished?
                unfinished = rc == 0 and written and json.loads((run / written[0]).read_text()).get("run_unfinished")
                outcome = "clear" if unfinished else self.behaviour(rc, out)
            else:
                outcome = "silent" if rc == 0 or written else self.classify_error(rc, out, f"pid {holder.pid}")
            self.record(
                "lifecycle", f"{label} on a folder in training", outcome, note=f"wrote {written}" if written else ""
            )
        # a folder where metrics.json belongs
        cwd, run = self.copy_run(ref, "metrics-folder")
        (run / "metrics.json").unlink()
        (run / "metrics.json").mkdir()
        rc, out = self.train(cwd, *TINY)
        self.record(
            "lifecycle", "metrics.json is a folder, then train.py", self.classify_error(rc, out, "metrics.json")
        )
        # the disk fills up while a checkpoint or the final metrics.json is written
        for name in ("last.ckpt", "metrics.json"):
            cwd = self.folder(f"disk-full-{name}")
            rc, out = self.patched(cwd, f"disk-full:{name}", *TINY)
            partial = [p.name for p in (cwd / "runs").rglob(".*.tmp-*")]
            outcome = self.classify_error(rc, out, name)
            outcome = "unclear" if outcome == "clear" and "free" not in self.first_error(out) else outcome
            self.record(
                "lifecycle",
                f"disk full while writing {name}",
                "silent" if partial else outcome,
                note=f"partial files left: {partial}" if partial else "",
            )

    def patched(self, cwd: Path, when: str, *args: str) -> tuple[int | None, str]:
        """``train.py`` of ``--root`` interrupted by the tests' ``interrupt.py`` at ``when`` (e.g. ``before-test``,
        ``disk-full:last.ckpt``), which patches fsnn's and Lightning's functions that every checkout has."""
        command = [sys.executable, str(HERE / "tests" / "interrupt.py"), when, *args, f"paths.data_dir={self.data}"]
        proc = subprocess.run(command, cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=600)
        return proc.returncode, proc.stdout + proc.stderr

    def stopped_and_resumed(self, category: str, case: str, name: str, *args: str, to: str = "run") -> None:
        """A signal after the first epoch (:meth:`signalled`): the run is interrupted (not failed), exits 128 + n,
        and its rerun resumes it to the end."""
        cwd = self.folder(case)
        rc, out = self.signalled(cwd, getattr(signal, name), *TINY, "trainer.max_epochs=3", *args, to=to)
        m = self.metrics(self.run_dir(cwd)) or {}
        again, _ = self.train(cwd, *TINY, "trainer.max_epochs=3", *args)
        resumed = (self.metrics(self.run_dir(cwd)) or {}).get("status") == "complete"
        told = rc == 128 + getattr(signal, name) and m.get("status") == "interrupted"
        self.record(
            category,
            case,
            "clear" if told and resumed else self.behaviour(rc, out),
            note=f"exit {rc}, status {m.get('status')}, rerun exit {again}",
        )

    def signalled(self, cwd: Path, signum: int, *args: str, to: str = "run") -> tuple[int | None, str]:
        """``train.py`` sent ``signum`` once its first ``last.ckpt`` is written: ``to`` the ``run``'s process, its data
        loader ``workers`` (its child processes), or ``all`` of them, workers first (as a scheduler's ``--signal``
        reaches every process of a job)."""
        proc = subprocess.Popen(
            [sys.executable, str(self.root / "train.py"), *args, f"paths.data_dir={self.data}"],
            cwd=cwd,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None and not list((cwd / "runs").rglob("last.ckpt")):
            time.sleep(0.05)
        workers = _children(proc.pid) if to in ("workers", "all") else []
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
        if to in ("run", "all"):
            proc.send_signal(signum)
        out = proc.communicate(timeout=600)[0]
        if to != "run" and not workers:
            out += "\n(probe: no data loader worker was alive to signal)"
        return proc.returncode, out

    @staticmethod
    def behaviour(rc: int | None, out: str) -> str:
        """The outcome of a command that should have done the safe thing and did not."""
        return "traceback" if "Traceback (most recent call last)" in out else "silent" if rc == 0 else "unclear"

    @staticmethod
    def first_error(out: str) -> str:
        return next((line for line in out.splitlines() if ERROR_LINE.match(line)), "")

    # -- strings that become paths, signals, one folder per configuration, the library's guarded cases -------------
    def confined(self) -> None:
        """A string from a config, an override, the environment or a run record that becomes a path stays in its
        root: refused in one line before any folder, or made safe."""
        for override, key in (
            ("task_name=../../outside", "task_name"),
            ("run_name=..", "run_name"),
            ("logger.name=../../outside", "logger.name"),
        ):
            cwd = self.folder(override)
            (cwd / "a" / "b").mkdir(parents=True)
            rc, out = self.train(cwd / "a" / "b", *TINY, "logger=csv", override)  # TINY has no logger
            escaped = (cwd / "outside").exists() or (cwd / "a" / "outside").exists()
            self.record(
                "confined",
                override,
                self.classify_error(rc, out, key),
                security=escaped,
                note="a folder was made outside" if escaped else "",
            )
        # a name too long for a folder (many overrides, a long run_name), and a stray FSNN_SWEEP_JOBS
        long = [
            *TINY,
            "neuron.alpha=0.5",
            "neuron.tau=2.0",
            "neuron.threshold=1.0",
            "neuron.memory=64",
            "optimizer.weight_decay=0.0",
            "dataset.val_fraction=0.1",
            "seed=0",
            "tau_lr_scale=1.0",
            "neuron.surrogate_scale=4.0",
            "dataset.T=8",
            "neuron.learn_alpha=false",
        ]
        for label, args in (
            ("18 overrides, a folder name over 255 bytes", long),
            ("run_name of 300 characters", [*TINY, "run_name=" + "r" * 300]),
        ):
            cwd = self.folder(label)
            victim = cwd / "victim"
            victim.write_text("kept")
            rc, out = self.train(cwd, *args, env={"FSNN_SWEEP_JOBS": str(victim)})
            again, out2 = self.train(cwd, *args)
            runs = list((cwd / "runs" / "train").glob("*/metrics.json")) if rc == 0 else []
            whole = (self.metrics(runs[0].parent) or {}).get("run_whole_name") if len(runs) == 1 else None
            ok = rc == 0 and whole and again == 0 and "is finished" in out2
            self.record(
                "confined",
                label,
                "clear" if ok else self.behaviour(rc, out),
                security=victim.read_text() != "kept",
                note=f"folder {len(runs[0].parent.name.encode())} bytes, rerun finds it"
                if ok
                else self.first_error(out) or out.strip().splitlines()[-1][:100]
                if out.strip()
                else "",
            )
        # evaluate.py's run_dir split by the shell at a space
        cwd = self.folder("run_dir-split")
        rc, out = self.run("evaluate.py", f"run_dir={cwd}/my", "run", cwd=cwd)
        outcome = self.classify_error(rc, out, "run_dir")
        self.record(
            "confined",
            "evaluate.py run_dir=<path with a space, unquoted>",
            "unclear" if outcome == "clear" and "quote" not in out else outcome,
        )
        # run records whose strings name files: a recipe (a table's file), a dataset (a figure's file)
        cwd = self.folder("record-paths")
        results, out_dir = cwd / "results", cwd / "a" / "b" / "tables"
        run = results / "table2_node_classification" / "run"
        run.mkdir(parents=True)
        config = {
            "dataset": {"name": "../../../../victim_figure"},
            "backbone": {"name": "sgcn"},
            "neuron": {"name": "flif"},
        }
        record = {
            "status": "complete",
            "metric": "acc",
            "metric_unit": "fraction",
            "test_acc": 0.5,
            "val_acc_best": 0.5,
            "recipe": "../../../victim",
            "seed": 0,
            "epochs": 1,
            "task": "table2_node_classification",
            "config": config,
        }
        (run / "metrics.json").write_text(json.dumps(record))
        rc, out = self.run("fsnn-report", "tables", "--results", str(results), "--out", str(out_dir), cwd=cwd)
        escaped = [p.name for p in cwd.rglob("victim*")]
        self.record(
            "confined",
            "make_tables: a record's recipe ../../../victim",
            "traceback" if "Traceback" in out else "clear" if "recipe" in out and not escaped else "silent",
            security=bool(escaped),
            note=f"wrote {escaped}" if escaped else "",
        )
        record["recipe"] = "matched"
        (run / "metrics.json").write_text(json.dumps(record))
        (run / "robustness.json").write_text(
            json.dumps(
                {
                    "robustness": "graph",
                    "metric": "acc",
                    "metric_unit": "fraction",
                    "clean": 0.5,
                    "config": config,
                    "corruptions": {"feature_mask": {"levels": [0.1, 0.2], "acc": [0.4, 0.3], "score": 70.0}},
                }
            )
        )
        rc, out = self.run(
            "fsnn-report",
            "figures",
            "--results",
            str(results),
            "--out",
            str(cwd / "a" / "figures"),
            cwd=cwd,
            timeout=900,
        )
        escaped = [str(p.relative_to(cwd)) for p in cwd.rglob("*victim_figure*") if p.parent != cwd / "a" / "figures"]
        self.record(
            "confined",
            "figures.py: a record's dataset name ../../../../x",
            "traceback" if "Traceback" in out else "clear" if rc == 0 else self.behaviour(rc, out),
            security=bool(escaped),
            note=f"wrote {escaped}" if escaped else "",
        )
        # a crafted checkpoint's stored paths (Lightning deletes the replaced best file when a better epoch comes)
        ref = self.complete_run("crafted-paths-ref", "trainer.max_epochs=1")
        cwd, run = self.copy_run(ref, "crafted-paths")
        victim = cwd / "victim.ckpt"
        victim.write_text("kept")
        code = (
            "import sys, torch; from pathlib import Path; from fsnn.suite.checkpoint import save_checkpoint\n"
            "run, victim = Path(sys.argv[1]), sys.argv[2]\npath = run / 'checkpoints' / 'last.ckpt'\n"
            "state = torch.load(path, weights_only=True)\nconfig = state.pop('fsnn')['config']\n"
            "for key, value in state['callbacks'].items():\n    if 'best_model_path' in value:\n"
            "        value['best_k_models'] = {victim: -1.0}\n"
            "        value['kth_best_model_path'] = victim; value['best_model_path'] = victim\n"
            "        value['best_model_score'] = value['kth_value'] = torch.tensor(-1.0)\n"
            "save_checkpoint(state, path, config)\n"
        )
        crafted = subprocess.run(
            [sys.executable, "-c", code, str(run), os.path.relpath(victim, run / "checkpoints")],
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        (run / "metrics.json").unlink()  # so that the rerun resumes from the crafted last.ckpt
        rc, out = (
            self.train(cwd, *TINY, "trainer.max_epochs=1", "trainer.max_epochs=2")
            if crafted.returncode == 0
            else (None, crafted.stderr)
        )
        touched = not victim.exists() or "victim" in out  # deleted, or read as the run's checkpoint
        self.record(
            "confined",
            "a checkpoint's best_model_path ../../victim, resumed",
            "traceback" if "Traceback" in out else "clear" if rc == 0 else self.behaviour(rc, out),
            security=touched,
            note="the victim file was deleted or read" if touched else "",
        )

    def folders(self) -> None:
        """One configuration, one folder: a sweep and a single run of it, a key given twice or at its default value,
        and the command of a committed run, which must find it finished."""
        self.committed_rerun()
        if self.fast:
            return
        cwd = self.folder("sweep-then-single")
        self.train(cwd, "-m", *TINY, "neuron.learn_alpha=true", timeout=600)
        for label, args in (
            ("-m neuron.learn_alpha=true, then neuron.learn_alpha=true", ["neuron.learn_alpha=true"]),
            (
                "then neuron.learn_alpha=false neuron.learn_alpha=true",
                ["neuron.learn_alpha=false", "neuron.learn_alpha=true"],
            ),
        ):
            rc, out = self.train(cwd, *TINY, *args)
            self.one_folder(cwd, label, out)
        # a smoke config sets its sweep's seed: the sweep's job is given seed=0, the single run is not
        cwd = self.folder("smoke-sweep-then-single")
        self.train(cwd, "-m", "+smoke=vision", timeout=600)
        rc, out = self.train(cwd, "+smoke=vision")
        self.one_folder(cwd, "-m +smoke=vision, then +smoke=vision", out)
        cwd = self.folder("defaults-given")
        self.train(cwd, *TINY)
        rc, out = self.train(cwd, *TINY, "seed=0", "neuron=flif")
        self.one_folder(cwd, "train.py, then seed=0 neuron=flif (the defaults)", out)

    def one_folder(self, cwd: Path, label: str, out: str) -> None:
        folders = list((cwd / "runs" / "train").glob("*/metrics.json"))
        self.record(
            "folders",
            label,
            "traceback" if "Traceback" in out else "clear" if len(folders) == 1 and "is finished" in out else "silent",
            note=f"{len(folders)} folders for one configuration",
        )

    def committed_rerun(self) -> None:
        """The recorded command of a committed run (its overrides, the data where this checkout has it) in a copy of
        its folder, run as the README adds runs to the evidence (``FSNN_RESULTS=results``): finished, nothing
        trained."""
        committed = HERE / "results" / "table2_node_classification" / "backbone-sgcn+dataset-cora+neuron-flif+seed-0"
        cwd = self.folder("committed-rerun")
        run = cwd / "results" / committed.parent.name / committed.name
        shutil.copytree(committed, run)
        overrides = [
            o
            for o in json.loads((committed / "metrics.json").read_text())["overrides"]
            if not o.startswith("paths.data_dir=")
        ]
        rc, out = self.run(
            "train.py",
            *overrides,
            f"paths.data_dir={HERE / 'tests' / 'data' / 'planetoid'}",
            cwd=cwd,
            env={"FSNN_RESULTS": "results"},
        )
        found = sorted(p.parent.name for p in (cwd / "results").rglob("metrics.json"))
        self.record(
            "folders",
            "a committed run's own command (backbone-sgcn+...+seed-0)",
            "traceback"
            if "Traceback" in out
            else "clear"
            if rc == 0 and "is finished" in out and found == [committed.name]
            else "silent",
            note=f"folders {found}",
        )

    def signals(self) -> None:
        """Every command stopped by a signal exits 128 + n with one line saying what it wrote."""
        ref = self.complete_run("signal-ref")
        for name, study in (("SIGTERM", "study=none"), ("SIGINT", "study=energy"), ("SIGTERM", "robustness=events")):
            self.evaluate_signalled("signals", ref, name, study)
        for command, name in (("make_tables", "SIGTERM"), ("report", "SIGINT")):
            self.report_signalled("signals", command, name)
        # a joblib sweep: its loky workers outlive it unless it stops them
        cwd = self.folder("joblib-sigterm")
        log = cwd / "console.txt"  # not a pipe: workers left running would hold it open
        with log.open("w") as console:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    str(self.root / "train.py"),
                    "-m",
                    "launcher=joblib",
                    "seed=0,1",
                    *TINY,
                    "trainer.max_epochs=50",
                    f"paths.data_dir={self.data}",
                ],
                cwd=cwd,
                env=self.env(),
                stdout=console,
                stderr=subprocess.STDOUT,
            )
            deadline = time.time() + 600
            while time.time() < deadline and proc.poll() is None and len(list(cwd.rglob("last.ckpt"))) < 2:
                time.sleep(0.2)
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=300)
        stamps = {p: p.stat().st_mtime_ns for p in cwd.rglob("last.ckpt")}
        time.sleep(20)
        out = log.read_text()
        trained_on = [p.parent.parent.name for p in cwd.rglob("last.ckpt") if p.stat().st_mtime_ns != stamps.get(p)]
        for link in Path("/proc").glob("[0-9]*/cwd"):  # workers a checkout left running: the processes in this case
            with contextlib.suppress(OSError):
                if Path(os.readlink(link)) == cwd:
                    os.kill(int(link.parent.name), signal.SIGKILL)
        told = proc.returncode == 143 and "fsnn: sweep interrupted by SIGTERM" in out
        self.record(
            "signals",
            "launcher=joblib sweep on SIGTERM",
            "silent" if trained_on else "clear" if told else self.behaviour(proc.returncode, out),
            note=f"exit {proc.returncode}; workers trained on: {len(trained_on)}",
        )

    def evaluate_signalled(self, category: str, ref: Path, name: str, study: str) -> None:
        """``evaluate.py`` ``study`` on a copy of the run ``ref``, sent the signal ``name`` mid-work."""
        cwd, run = self.copy_run(ref, f"evaluate-{name}-{study}")
        rc, out = self.interrupted(cwd, f"evaluate:{name}", f"run_dir={run}", study, f"paths.data_dir={self.data}")
        self.record(category, f"evaluate.py {study} on {name}", self.told(rc, out, name))

    def report_signalled(self, category: str, command: str, name: str) -> None:
        """``fsnn-report`` ``command`` (``make_tables``, ``report``) on an empty results tree, sent ``name``."""
        cwd = self.folder(f"{command}-{name}")
        (cwd / "results").mkdir()
        rc, out = self.interrupted(cwd, f"{command}:{name}", "--results", "results", "--out", "out")
        self.record(category, f"{command} on {name}", self.told(rc, out, name))

    def interrupted(self, cwd: Path, when: str, *args: str) -> tuple[int | None, str]:
        """A command of ``--root`` sent a signal mid-work by the tests' ``interrupt.py`` (``evaluate:SIGTERM``...)."""
        proc = subprocess.run(
            [sys.executable, str(HERE / "tests" / "interrupt.py"), when, *args],
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=900,
        )
        return proc.returncode, proc.stdout + proc.stderr

    @staticmethod
    def told(rc: int | None, out: str, name: str) -> str:
        """The outcome of a command stopped by the signal ``name``: exit 128 + n with one line saying what it
        wrote (``clear``), a success (``silent``) or a traceback."""
        if "Traceback (most recent call last)" in out:
            return "traceback"
        if rc != 128 + getattr(signal, name):
            return "silent" if rc in (0, None) else "unclear"
        return "clear" if any(line.startswith("fsnn: ") and "wrote" in line for line in out.splitlines()) else "unclear"

    def library(self) -> None:
        """The library's and training's guarded cases: learned parameters, engines' autograd,
        records read with impossible metrics."""
        for label, args in (
            (
                "neuron.learn_tau=true neuron.tau=0.9 tau_lr_scale=1000",
                ["neuron.learn_tau=true", "neuron.tau=0.9", "tau_lr_scale=1000"],
            ),
            (
                "neuron.engine=soe neuron.learn_alpha=true dataset.T=4",
                ["neuron.engine=soe", "neuron.learn_alpha=true", "dataset.T=4"],
            ),
        ):
            cwd = self.folder(label)
            rc, out = self.train(cwd, *TINY, *args)
            self.record(
                "library",
                label,
                "clear" if rc == 0 else self.behaviour(rc, out) if rc != 2 else "clear",
                note=self.first_error(out),
            )
        for label, code, word in (
            (
                "checkpoint(FractionalLIF(), x, use_reentrant=False)",
                "from torch.utils.checkpoint import checkpoint\nx = torch.randn(16, 2, 3, requires_grad=True)\n"
                "checkpoint(FractionalLIF(learn_alpha=True), x, use_reentrant=False).sum().backward()\n"
                "assert x.grad is not None",
                "checkpoint",
            ),
            ("torch.vmap(FractionalLIF())", "torch.vmap(FractionalLIF())(torch.randn(3, 16, 2, 4))", "vmap"),
            ("torch.jit.script(FractionalLIF())", "torch.jit.script(FractionalLIF())", "jit"),
        ):
            cwd = self.folder(label)
            script = (
                "import sys, torch\nfrom fsnn import FractionalLIF\ntry:\n"
                + "".join(f"    {line}\n" for line in code.splitlines())
                + "except (ValueError, RuntimeError, TypeError) as error:\n"
                "    print(f'fsnn: error: {error}'.splitlines()[0]); sys.exit(2)\n"
            )
            proc = subprocess.run(
                [sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=300, env=self.env()
            )
            out = proc.stdout + proc.stderr
            outcome = (
                "clear"
                if proc.returncode == 0
                else "traceback"
                if "Traceback" in out
                else self.classify_error(proc.returncode, out, word)
            )
            self.record("library", label, outcome, note=self.first_error(out)[:90])
        cwd = self.folder("impossible-metric")
        run = cwd / "results" / "table2_node_classification" / "run"
        run.mkdir(parents=True)
        (run / "metrics.json").write_text(
            json.dumps(
                {
                    "status": "complete",
                    "metric": "acc",
                    "metric_unit": "fraction",
                    "test_acc": 1e300,
                    "val_acc_best": -5,
                    "recipe": "matched",
                    "seed": 0,
                    "epochs": 1,
                    "task": "table2_node_classification",
                    "config": {"dataset": {"name": "cora"}, "backbone": {"name": "sgcn"}, "neuron": {"name": "flif"}},
                }
            )
        )
        rc, out = self.run("fsnn-report", "tables", "--results", str(cwd / "results"), "--out", str(cwd / "t"), cwd=cwd)
        counted = "1 complete" in out
        self.record(
            "library",
            "make_tables: test_acc 1e300, val_acc_best -5",
            "traceback"
            if "Traceback" in out
            else "silent"
            if counted
            else "clear"
            if str(run / "metrics.json") in out and "test_acc" in out
            else "unclear",
        )

    # -- fsnn-report on a damaged or hostile results tree ---------------------------------------------------------
    def report(self) -> None:
        """``fsnn-report`` on a results tree with one hostile part (a link loop, a record that cannot be one, a
        value of the wrong type, a folder name that is not UTF-8, a scheme-like folder name), writing to a full disk, a
        read-only or linked-out output folder, or told by a manifest to follow a path: every bad record is skipped
        and named, a write that cannot happen is one ``fsnn: error:`` line naming the folder with no partial file
        left, and nothing outside the results tree is read into the page, written or removed. ``--fast``: only the
        cases that run ``fsnn-report tables`` and take no minute (what the test suite runs)."""
        self.report_reads()
        self.report_scheme_link()
        self.report_writes()
        self.report_links()

    def report_tree(self, name: str) -> tuple[Path, Path]:
        """``(folder, results)``: a fresh folder for a report case and its results tree holding one healthy run."""
        cwd = self.folder(f"report-{name}")
        report_record(cwd / "results", "healthy")
        return cwd, cwd / "results"

    def report_reads(self) -> None:
        """Each record or folder that cannot be a run's, among healthy ones: skipped and named, the rest reported."""

        def nested(results: Path) -> Path:
            path = results / REPORT_TASK / "nested" / "metrics.json"
            path.parent.mkdir(parents=True)
            path.write_text("[" * 100_000 + "]" * 100_000)
            return path

        def fifo(results: Path) -> Path:
            path = results / REPORT_TASK / "fifo" / "metrics.json"
            path.parent.mkdir(parents=True)
            os.mkfifo(path)
            return path

        def loop(results: Path) -> Path:
            (results / REPORT_TASK / "loop").symlink_to("..")
            return results / REPORT_TASK / "loop"

        def deep_tree(results: Path) -> str:
            folder = results / "deep"
            for _ in range(1100):  # one by one: os.makedirs recurses as deep as the tree
                folder.mkdir()
                folder = folder / "d"
            return "1 complete"  # the healthy run: the walk ends and reports it

        def not_utf8(results: Path) -> str:
            report_record(results, os.fsdecode(b"run-\xff"))
            return "run-\\xff"  # as the reports print a byte that is not UTF-8

        def wrong(key: str, value):
            def change(run: dict) -> None:
                *parents, last = key.split(".")
                node = run
                for part in parents:
                    node = node[part]
                node[last] = value

            return lambda results: report_record(results, f"bad-{key.replace('.', '-')}", change)

        # (case, what damages the tree, the commands that read it, fast)
        reads = [
            ("a symlink loop under the results folder", loop, ("tables", "page"), True),
            ("a folder tree 1,100 levels deep", deep_tree, ("tables",), True),
            ("metrics.json of 100,000 nested arrays", nested, ("tables",), True),
            ("metrics.json is a fifo", fifo, ("tables",), False),
            ("a run folder whose name is not UTF-8", not_utf8, ("tables", "page"), False),
            ("a record whose config is a string", wrong("config", "x"), ("tables", "page"), False),
            ("a record whose config.paths is a string", wrong("config.paths", "x"), ("page",), False),
            ("a record whose config.trainer is a string", wrong("config.trainer", "x"), ("tables",), True),
            ("a record whose versions is a string", wrong("versions", "x"), ("page",), False),
            ("a record whose status is a number", wrong("status", 3), ("tables", "page"), False),
        ]
        for label, damage, commands, quick in reads:
            for command in commands:
                if self.fast and not (quick and command == "tables"):
                    continue
                cwd, results = self.report_tree(f"{command}-{label}")
                named = damage(results)
                rc, out = self.run("fsnn-report", command, "--results", str(results), cwd=cwd, timeout=240)
                page = results / "report" / "index.html"
                said = page.read_text(errors="replace") if command == "page" and page.is_file() else out
                if command == "page" and isinstance(named, Path):
                    named = os.path.relpath(named, results)  # the page lists paths in the results folder
                outcome = (
                    "traceback"
                    if "Traceback (most recent call last)" in out
                    else "silent"
                    if rc is None
                    else "unclear"
                    if rc != 0
                    else "clear"
                    if str(named) in said
                    else "silent"
                )
                self.record(
                    "report",
                    f"{command}: {label}",
                    outcome,
                    note="timed out after 240 s" if rc is None else self.first_error(out)[:90],
                )
                remove_deep(results / "deep")

    def report_scheme_link(self) -> None:
        """A run folder named like a script link right under the page's own folder, where the page's relative link
        to its record would start with the folder's name: the link must not be a scheme."""
        if self.fast:
            return
        cwd, results = self.report_tree("javascript-folder")
        run = results / "report" / "javascript:document.title='x'"
        run.mkdir(parents=True)
        (run / "metrics.json").write_text(json.dumps(HEALTHY))
        rc, out = self.run("fsnn-report", "page", "--results", str(results), cwd=cwd, timeout=240)
        page = results / "report" / "index.html"
        links = SCHEME_LINK.findall(page.read_text()) if page.is_file() else []
        self.record(
            "report",
            "page: a run folder named javascript:document.title='x'",
            "traceback" if "Traceback" in out else "silent" if rc != 0 or links else "clear",
            security=bool(links),
            note=f"links with a scheme: {links}" if links else "",
        )

    def report_writes(self) -> None:
        """Writes that cannot happen: one line naming the folder, no partial file left."""
        failing = [
            ("tables", "full", "disk full"),
            ("tables", "read-only", "read-only --out"),
            ("page", "full", "disk full"),
            ("page", "read-only", "read-only --out"),
        ]
        for command, how, label in failing:
            if self.fast and command != "tables":
                continue
            cwd, results = self.report_tree(f"{command}-{how}")
            (out_dir := cwd / "out").mkdir()
            proc = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    FAILING_DISK.format(tests=str(HERE / "tests")),
                    how,
                    command,
                    "--results",
                    str(results),
                    "--out",
                    str(out_dir),
                ],
                cwd=cwd,
                env=self.env(),
                capture_output=True,
                text=True,
                timeout=240,
            )
            partial = [p.name for p in out_dir.iterdir() if ".tmp-" in p.name]
            outcome = self.classify_error(proc.returncode, proc.stdout + proc.stderr, str(out_dir))
            self.record(
                "report",
                f"{command}: {label}",
                "silent" if partial else outcome,
                note=f"partial files left: {partial}" if partial else self.first_error(proc.stderr)[:90],
            )
        cwd, results = self.report_tree("out-unmakeable")
        rc, out = self.run(
            "fsnn-report", "tables", "--results", str(results), "--out", "/proc/fsnn-probe/tables", cwd=cwd
        )
        self.record(
            "report",
            "tables: an --out that cannot be made (/proc/...)",
            self.classify_error(rc, out, "/proc/fsnn-probe/tables"),
            note=self.first_error(out)[:90],
        )

    def report_links(self) -> None:
        """Output folders that a link leads out of the results tree, and manifests that name a path: refused or
        ignored, nothing outside read into the page, written or removed."""
        for command, folder, victim in (
            ("tables", "tables", "all.md"),
            ("page", "report", "index.html"),
            ("figures", "figures", "figures.json"),
        ):
            if self.fast and command != "tables":
                continue
            cwd, results = self.report_tree(f"{folder}-link-out")
            (elsewhere := cwd / "elsewhere").mkdir()
            (elsewhere / victim).write_text("kept")
            (results / folder).symlink_to(elsewhere)
            rc, out = self.run("fsnn-report", command, "--results", str(results), cwd=cwd, timeout=600)
            touched = sorted(p.name for p in elsewhere.iterdir() if p.name != victim) + (
                [victim] if (elsewhere / victim).read_text() != "kept" else []
            )
            self.record(
                "report",
                f"{command}: results/{folder} a link out of the results tree",
                self.classify_error(rc, out, str(results / folder)),
                security=bool(touched),
                note=f"wrote outside: {touched}" if touched else self.first_error(out)[:90],
            )
        cwd, results = self.report_tree("manifests")
        secret = b"\x89PNG\r\n\x1a\n" + b"fsnn-probe-secret" * 8
        (cwd / "secret.png").write_bytes(secret)
        (cwd / "victim.md").write_text("kept")
        listed = ["../../secret", "../../victim", str(cwd / "secret"), str(cwd / "victim")]
        for folder, manifest in (("figures", "figures.json"), ("tables", "tables.json")):
            (results / folder).mkdir()
            (results / folder / manifest).write_text(json.dumps({"written": listed, "captions": {}}))
        for command in ("tables",) if self.fast else ("tables", "page"):
            rc, out = self.run("fsnn-report", command, "--results", str(results), cwd=cwd, timeout=240)
            page = results / "report" / "index.html"
            read = page.is_file() and base64.b64encode(secret).decode() in page.read_text()
            gone = not (cwd / "victim.md").exists()
            self.record(
                "report",
                f"{command}: a manifest naming ../../x and an absolute path",
                "traceback" if "Traceback" in out else "clear" if rc == 0 else "unclear",
                security=read or gone,
                note="read into the page" if read else "removed" if gone else "",
            )

    # -- the environment, data that no longer matches, caches and inputs that lie ---------------------------------
    def environment(self) -> None:
        """A variable set to nothing (``FSNN_RESULTS=``, ``FSNN_DATA=``) counts as unset; the run fails at its data
        (an empty data folder), once Hydra has made its folder, so the case shows where the folder went."""
        task = f"fsnn-probe-{os.getpid()}"
        cwd = self.folder("FSNN_RESULTS-empty")
        (cwd / "empty").mkdir()
        rc, out = self.run(
            "train.py",
            *GRAPH,
            f"task_name={task}",
            f"paths.data_dir={cwd / 'empty'}",
            cwd=cwd,
            env={"FSNN_RESULTS": ""},
        )
        at_root = Path("/") / task
        escaped = at_root.exists()
        if escaped:
            shutil.rmtree(at_root)  # the probe's own folder at the file system's root
        self.record(
            "environment",
            "FSNN_RESULTS= (set, empty)",
            "traceback"
            if "Traceback" in out
            else "silent"
            if escaped
            else "clear"
            if (cwd / "runs" / task).is_dir()
            else self.behaviour(rc, out),
            security=escaped,
            note=f"the run folder was made in {at_root}" if escaped else "",
        )
        cwd = self.folder("FSNN_DATA-empty")
        rc, out = self.run("train.py", *GRAPH, cwd=cwd, env={"FSNN_DATA": ""})
        looked = str(cwd / "data" / "Cora")
        self.record(
            "environment",
            "FSNN_DATA= (set, empty)",
            "traceback"
            if "Traceback" in out
            else "clear"
            if rc == 2 and looked in out
            else "unclear"
            if rc
            else "silent",
            note="" if looked in out else "it did not look in ./data",
        )

    def private_data(self, cwd: Path, *folders: str, part: str = "raw") -> Path:
        """A data folder of the case's own with the ``part`` of ``folders`` (fixtures): their raw files (a graph's),
        or ``""``, all of them."""
        data = cwd / "data"
        for folder in folders:
            shutil.copytree(self.data / folder / part, data / folder / part)
        return data

    def fabricated_run(self, cwd: Path, data: Path, shape: str = "same") -> Path:
        """A run folder of ``GRAPH`` on ``data`` with its config and an untrained ``best.ckpt`` written by the
        checkout's own functions (``shape="other"``: its first matrix saved one of another width, as a model built
        by other code or data would have it)."""
        run = cwd / "results" / "train" / "fabricated"
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                FABRICATE,
                str(self.root / "conf"),
                str(run),
                shape,
                *GRAPH,
                f"paths.data_dir={data}",
            ],
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"fabricating a run failed:\n{proc.stderr[-3000:]}")
        return run

    def mismatch(self) -> None:
        """Data that no longer matches the run, and graph files whose content is corrupt."""
        cwd = self.folder("evaluate-data-changed")
        data = self.private_data(cwd, "Cora", "CiteSeer")
        run = self.fabricated_run(cwd, data)
        shutil.rmtree(data / "Cora")  # the data folder replaced by another dataset's files (3703 features)
        (data / "Cora" / "raw").mkdir(parents=True)
        for path in (data / "CiteSeer" / "raw").iterdir():
            shutil.copy(path, data / "Cora" / "raw" / path.name.replace("citeseer", "cora"))
        rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={data}", cwd=cwd)
        self.record(
            "mismatch",
            "evaluate.py after the data changed (another feature count)",
            self.classify_error(rc, out, "ind.cora"),
            note=self.first_error(out)[:100],
        )
        cwd = self.folder("evaluate-weights-shape")
        data = self.private_data(cwd, "Cora")
        run = self.fabricated_run(cwd, data, shape="other")
        rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={data}", cwd=cwd)
        self.record(
            "mismatch",
            "evaluate.py: best.ckpt's weights of another shape, its own config",
            self.classify_error(rc, out, "best.ckpt"),
            note=self.first_error(out)[:100],
        )
        for label, folder, damage, name in (
            ("an edge beyond the node count in ind.cora.graph", "Cora", _edge_beyond, "ind.cora.graph"),
            ("a truncated ind.cora.x", "Cora", _truncated("ind.cora.x"), "ind.cora.x"),
            (
                "a truncated amazon_electronics_photo.npz",
                "Photo",
                _truncated("amazon_electronics_photo.npz"),
                "amazon_electronics_photo.npz",
            ),
        ):
            cwd = self.folder(f"corrupt-{folder}")  # a folder name that does not name the file
            data = self.private_data(cwd, folder)
            damage(data / folder / "raw")
            rc, out = self.run("train.py", *GRAPH, f"dataset={folder.lower()}", f"paths.data_dir={data}", cwd=cwd)
            self.record(
                "mismatch",
                f"train.py on {label}",
                self.classify_error(rc, out, f"raw/{name}"),
                note=self.first_error(out)[:100],
            )

    def load_graph(self, cwd: Path, data: Path, name: str = "cora") -> tuple[str | None, str]:
        """``load_graph(name)`` of the checkout in a process of its own: ``(what it read, output)``, what it read as
        ``x <features> y <labels digest>`` (``None`` when it read nothing)."""
        code = (
            "import sys, hashlib; from fsnn.data import load_graph\n"
            "g = load_graph(sys.argv[1], data_dir=sys.argv[2], download=False)\n"
            "print('read: x', g.x.shape[1], 'y', hashlib.sha256(g.y.numpy().tobytes()).hexdigest()[:12])\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, name, str(data)],
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        read = next((line for line in proc.stdout.splitlines() if line.startswith("read: ")), None)
        return read, proc.stdout + proc.stderr

    def inputs(self) -> None:
        """Caches and inputs that lie: a processed cache holding a pickle, another dataset's or a stale one, a NaN
        feature, a truncated compiled extension, and the Poisson sampler a run's numbers depend on."""
        for file, form in (("data.pt", "torch.save"), ("pre_transform.pt", "torch.save"), ("data.pt", "bare pickle")):
            cwd = self.folder(f"processed-payload-{file}-{form}")
            data = self.private_data(cwd, "Cora")
            self.load_graph(cwd, data)
            marker, path = cwd / "PAYLOAD_RAN", data / "Cora" / "processed" / file
            if form == "torch.save":
                torch.save(Payload(str(marker)), path)
            else:
                path.write_bytes(pickle.dumps(Payload(str(marker))))
            read, out = self.load_graph(cwd, data)
            ran = marker.exists()
            self.record(
                "inputs",
                f"a pickle payload in Cora/processed/{file} ({form}), then load_graph",
                "silent"
                if ran
                else "traceback"
                if "Traceback" in out
                else "clear"
                if read and str(path.parent) in out
                else "unclear",
                security=ran,
                note="payload ran" if ran else "",
            )
        cwd = self.folder("foreign-processed")
        data = self.private_data(cwd, "Cora", "CiteSeer")
        cora, _ = self.load_graph(cwd, data)
        self.load_graph(cwd, data, "citeseer")
        shutil.rmtree(data / "Cora" / "processed")
        shutil.copytree(data / "CiteSeer" / "processed", data / "Cora" / "processed")
        read, out = self.load_graph(cwd, data)
        self.record(
            "inputs",
            "CiteSeer's processed cache in Cora/processed, then load_graph",
            "traceback"
            if "Traceback" in out
            else "clear"
            if read == cora and str(data / "Cora" / "processed") in out
            else "silent",
            note=f"{read} where Cora's files give {cora}" if read != cora else "",
        )
        cwd = self.folder("stale-processed")
        data = self.private_data(cwd, "Cora")
        self.load_graph(cwd, data)
        _edit_pickle(data / "Cora" / "raw" / "ind.cora.ally", lambda y: np.roll(y, 1, axis=1))  # other labels
        fresh = self.private_data(self.folder("stale-processed-reference"), "Cora")
        shutil.copy(data / "Cora" / "raw" / "ind.cora.ally", fresh / "Cora" / "raw" / "ind.cora.ally")
        expected, _ = self.load_graph(cwd, fresh)
        read, out = self.load_graph(cwd, data)
        self.record(
            "inputs",
            "raw labels replaced after processing, then load_graph",
            "traceback"
            if "Traceback" in out
            else "clear"
            if read == expected and str(data / "Cora" / "processed") in out
            else "silent",
            note="" if read == expected else "the graph of the old files",
        )
        cwd = self.folder("nan-feature")
        data = self.private_data(cwd, "Cora")
        _edit_pickle(data / "Cora" / "raw" / "ind.cora.allx", _with_nan)
        rc, out = self.run("train.py", *GRAPH, f"paths.data_dir={data}", cwd=cwd)
        self.record(
            "inputs",
            "one NaN in the raw features, then train.py",
            self.classify_error(rc, out, "ind.cora"),
            note=self.first_error(out)[:100] or f"exit {rc}",
        )
        if not self.fast:  # built again: a compilation
            self.truncated_extension()
        cwd = self.folder("sampler-recorded-eval")
        data = self.private_data(cwd, "Cora")
        run = self.fabricated_run(cwd, data)
        rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={data}", cwd=cwd)
        self.record(
            "inputs",
            "eval.json names the Poisson sampler that drew the spikes",
            _names_sampler(_read_json(run / "eval.json"), out),
        )
        if not self.fast:
            cwd = self.folder("sampler-recorded-train")
            rc, out = self.train(cwd, *GRAPH)
            self.record(
                "inputs",
                "metrics.json names the Poisson sampler that drew the spikes",
                _names_sampler(self.metrics(self.run_dir_matching(cwd, "dataset")), out),
            )

    def truncated_extension(self) -> None:
        """The Poisson sampler's compiled extension, copied with its ``built`` marker into a build folder of the
        case's own, its library cut in half: then a process that draws spikes with it."""
        find = (
            "from fsnn.models import poisson as p\nfrom torch.utils import cpp_extension as c\nimport os\n"
            "ok = p.EXTENSION.unavailable_reason() is None\n"
            "root = os.environ.get('TORCH_EXTENSIONS_DIR') or c.get_default_build_root()\n"
            "print(root if ok else '', p.EXTENSION.build_directory() if ok else '')\n"
        )
        proc = subprocess.run([sys.executable, "-c", find], env=self.env(), capture_output=True, text=True, timeout=900)
        words = proc.stdout.split()
        if proc.returncode != 0 or len(words) != 2:
            print("  (the Poisson kernels cannot be built here: no truncated-extension case)", flush=True)
            return
        root, folder = Path(words[0]), Path(words[1])
        cwd = self.folder("truncated-extension")
        copy = cwd / "extensions" / folder.relative_to(root)
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("lock", ".fsnn.lock"))
        library = copy / "fsnn_poisson_kernels.so"
        library.write_bytes(library.read_bytes()[: library.stat().st_size // 2])
        code = (
            "import torch; from fsnn.models.poisson import poisson_encode\n"
            "print('sampler', poisson_encode(torch.rand(40, 100), 5).sampler)\n"
        )
        env = {"TORCH_EXTENSIONS_DIR": str(cwd / "extensions")}
        try:
            done = subprocess.run(
                [sys.executable, "-c", code], cwd=cwd, env=self.env(**env), capture_output=True, text=True, timeout=900
            )
            rc, out = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired:
            rc, out = None, ""
        outcome = (
            "unclear"
            if rc is not None and rc < 0
            else "traceback"
            if "Traceback" in out
            else "clear"
            if rc == 0 and library.name in out
            else "silent"
        )
        self.record(
            "inputs",
            "a truncated compiled extension with its built marker",
            outcome,
            note=f"killed by signal {-rc}" if rc is not None and rc < 0 else out.strip()[-80:],
        )

    # -- caches keyed on content, labels from the release, decisions, signals, reads, fixture writers --------------
    def data_snippets(self, category: str, cases: list[tuple[str, Path, str, str]]) -> None:
        """:meth:`snippets` of the cases ``(case, data, body, word)`` on the event datasets: ``body`` runs after
        :data:`_SERVE` with ``data`` (a fixture copy of the case's own) bound."""
        self.snippets(
            category, [(case, f"{_SERVE}data = Path({str(data)!r})\n{body}", word) for case, data, body, word in cases]
        )

    def event_copy(self, name: str, *folders: str) -> Path:
        """A fresh folder for the case ``name`` holding a copy of the fixture ``folders`` (whole): its data folder."""
        return self.private_data(self.folder(name), *folders, part="")

    def cache_keys(self) -> None:
        """The event frame cache serves what its raw files and the source say now: a raw recording changed after
        its frames were cached (edited, replaced with its old time kept) is integrated again, and a marker edited (its
        labels, a wrong CRC-32) is not believed, nor re-read forever. The fingerprint is each raw file's size and
        modification time, as make's and rsync's quick check: a file rewritten in place at the same size with its
        old time put back is not noticed, by design (reading every raw file at each run would undo the cache)."""
        raw = [
            ("edited (new content, size and time)", "raw.write_bytes(other.read_bytes())"),
            (
                "replaced by another, its old time kept (an archive extracted again)",
                "raw.write_bytes(other.read_bytes())\nos.utime(raw, ns=(stat.st_atime_ns, stat.st_mtime_ns))",
            ),
        ]
        cases = [
            (f"a raw recording {label}", self.event_copy(label, "NMNIST"), _RAW_CHANGED.format(change=change), "")
            for label, change in raw
        ]
        marker = [
            ("with its labels edited", "marker['labels'] = [(label + 1) % 10 for label in marker['labels']]"),
            ("with a wrong CRC-32 for a healthy sample", "marker['checksums'][train.indices[0]] ^= 1"),
        ]
        cases += [
            (f"a cache marker {label}", self.event_copy(label, "NMNIST"), _MARKER_EDITED.format(edit=edit), "")
            for label, edit in marker
        ]
        self.data_snippets("cache keys", cases)

    def labels(self) -> None:
        """A class's label is the release's, whichever class folders a copy holds; a folder the release does not have
        is refused by name."""
        missing = "shutil.rmtree(copy / {!r})"
        cases = [
            (
                "N-Caltech101 without the Faces_easy folder",
                "NCALTECH101",
                _LABELS.format(name="ncaltech101", change=missing.format("NCALTECH101/Caltech101/Faces_easy")),
                "",
            ),
            (
                "N-Caltech101 with a folder the release lacks (Airplanes)",
                "NCALTECH101",
                _LABELS.format(
                    name="ncaltech101",
                    change="os.rename(copy / 'NCALTECH101/Caltech101/airplanes', copy / 'NCALTECH101/Caltech101/Airplanes')",
                ),
                "Airplanes",
            ),
            (
                "DVS-Lip without the word folder 'action'",
                "DVSLip",
                _LABELS.format(
                    name="dvslip",
                    change="\n".join(missing.format(f"DVSLip/DVS-Lip/{split}/action") for split in ("train", "test")),
                ),
                "",
            ),
            (
                "MINI-HARDVS without action_002",
                "MINI_HARDVS",
                _LABELS.format(
                    name="hardvs_mini",
                    change="\n".join(
                        missing.format(f"MINI_HARDVS/events_np/{split}/action_002")
                        for split in ("train", "val", "test")
                    ),
                ),
                "",
            ),
        ]
        self.data_snippets(
            "labels", [(case, self.event_copy(case, folder), body, word) for case, folder, body, word in cases]
        )

    def decisions(self) -> None:
        """Decisions on samples that cannot carry one: a table cell counts a copied run folder once (copied anywhere
        in the results tree, its seed edited or written ``-0``, saved again) and says so, marks runs of several
        commits, and a claim is not decided on a zero-width interval, values that are not finite, or overflow."""
        cell = "| SGCN (f-SNN) |"  # Table 2's f-LIF SGCN row: its Cora column is the cell the runs fill
        copies = [
            ("10 of 20 runs copied elsewhere in the results tree", 10, lambda text, n: text),
            ("10 of 20 runs copied, their seeds edited", 10, lambda text, n: _with(text, seed=100 + n)),
            ("1 of 20 runs copied, its seed written -0", 1, lambda text, n: text.replace('"seed": 0,', '"seed": -0,')),
            (
                "1 of 20 runs copied and saved again (keys sorted, indented)",
                1,
                lambda text, n: json.dumps(json.loads(text), indent=2, sort_keys=True),
            ),
        ]
        for label, count, edit in copies:
            results = (cwd := self.folder(label)) / "results"
            runs = cell_runs(results, 20)
            for n, run in enumerate(runs[:count]):
                copy = results / "copies" / run.parent.name / "metrics.json"
                copy.parent.mkdir(parents=True)
                copy.write_text(edit(run.read_text(), n))
            rc, out, text = self.table_row(cwd, results, "node_classification.md", cell)
            self.record(
                "decisions",
                f"tables: {label}",
                "traceback"
                if "Traceback" in out
                else "clear"
                if "(n=20," in text and "left out" in text
                else self.behaviour(rc, out),
                note=text[:90],
            )
        results = (cwd := self.folder("two-commits")) / "results"
        for run in cell_runs(results, 20)[10:]:
            run.write_text(_with(run.read_text(), versions={"fsnn_commit": "1" * 40}))
        rc, out, text = self.table_row(cwd, results, "node_classification.md", cell)
        self.record(
            "decisions",
            "tables: 10 of 20 runs from another commit",
            "traceback" if "Traceback" in out else "clear" if "2 commits" in text else self.behaviour(rc, out),
            note=text[:90],
        )
        # a copy on each side of a claim: two equal values a side are a zero-width interval
        results = (cwd := self.folder("claims-copies")) / "results"
        for neuron in ("flif", "lif"):
            (run,) = cell_runs(results, 1, neuron)
            copy = results / "copies" / run.parent.name / "metrics.json"
            copy.parent.mkdir(parents=True)
            copy.write_text(run.read_text())
        rc, out, text = self.table_row(cwd, results, "claims.md", "| Cora / SGCN | LIF")
        self.record(
            "decisions",
            "claims: one run and its copy on each side",
            "traceback" if "Traceback" in out else "clear" if "not decided" in text else self.behaviour(rc, out),
            note=text[:90],
        )
        nan, inf = "float('nan')", "float('inf')"
        undecidable = [
            ("[80, 80] vs [70, 70] (no spread), no claim", "[80, 80]", "[70, 70]", "None", "spread"),
            ("[80, 80] vs [70, 70] (no spread), claim 10", "[80, 80]", "[70, 70]", "10.0", "spread"),
            ("a NaN value", f"[1, 2, {nan}]", "[0, 1, 2]", "None", "finite"),
            ("an infinite value", "[1, 2, 3]", f"[0, 1, {inf}]", "1.0", "finite"),
            ("a NaN claim", "[10, 11, 12]", "[0, 1, 2]", nan, "finite"),
            ("values whose variance overflows", "[1e308, -1e308, 1e308]", "[0, 1, 2]", "None", "large"),
        ]
        self.snippets(
            "decisions",
            [
                (f"decide: {label}", _DECIDE.format(a=a, b=b, claim=claim), word)
                for label, a, b, claim, word in undecidable
            ],
        )

    def table_row(self, cwd: Path, results: Path, table: str, row: str) -> tuple[int | None, str, str]:
        """``(exit status, output, text)`` of ``fsnn-report tables`` on ``results``: ``text`` is the first cell of the
        row of ``table`` (a file it writes) that starts with ``row`` (``""`` where there is none), or, for a claims
        row, the row."""
        rc, out = self.run("fsnn-report", "tables", "--results", str(results), "--out", str(cwd / "tables"), cwd=cwd)
        path = cwd / "tables" / table
        lines = path.read_text().splitlines() if path.is_file() else []
        found = next((line for line in lines if line.startswith(row)), "")
        return rc, out, found if table == "claims.md" else found[len(row) :].split("|")[0].strip()

    def handlers(self) -> None:
        """Signals outside the three every command handles: a scheduler's SIGUSR1 / SIGUSR2 (SLURM's ``--signal``
        reaches every process of a job, data loader workers included) stop a run as SIGTERM does, or leave it alone
        where they reach only its workers; a refused resume leaves the interrupted run's record as it was."""
        for name in ("SIGUSR1", "SIGUSR2"):
            self.stopped_and_resumed("handlers", f"{name} after the first epoch, then rerun", name)
        workers = "dataset.num_workers=1"
        self.stopped_and_resumed(
            "handlers", "SIGUSR2 to the run and its loader workers, then rerun", "SIGUSR2", workers, to="all"
        )
        cwd = self.folder("SIGUSR2-workers")
        rc, out = self.signalled(cwd, signal.SIGUSR2, *TINY, "trainer.max_epochs=3", workers, to="workers")
        m = self.metrics(self.run_dir(cwd)) or {}
        went_on = rc == 0 and m.get("status") == "complete" and "no data loader worker" not in out
        self.record(
            "handlers",
            "SIGUSR2 to the loader workers alone: the run goes on",
            "clear" if went_on else self.behaviour(rc, out),
            note=f"exit {rc}, status {m.get('status')}"
            + (", no worker was signalled" if "no data loader" in out else ""),
        )
        # an interrupted run rerun with another result config: refused, its record still says interrupted
        cwd = self.folder("refused-resume")
        self.signalled(cwd, signal.SIGTERM, *TINY, "trainer.max_epochs=3", "run_name=mine")
        record = self.run_dir(cwd) / "metrics.json"
        interrupted = record.read_bytes()
        rc, out = self.train(cwd, *TINY, "trainer.max_epochs=4", "run_name=mine")
        kept = record.read_bytes() == interrupted
        again, _ = self.train(cwd, *TINY, "trainer.max_epochs=3", "run_name=mine")
        resumed = (_read_json(record) or {}).get("status") == "complete"
        self.record(
            "handlers",
            "a refused resume, then the run's own command",
            self.classify_error(rc, out, "checkpoint") if kept and resumed else "silent",
            note=f"record {'kept' if kept else 'rewritten'}, own command {'resumed' if resumed else f'exit {again}'}",
        )
        self.report_signalled("handlers", "make_tables", "SIGUSR1")
        self.evaluate_signalled("handlers", self.complete_run("handlers-ref"), "SIGUSR2", "study=none")
        print("  (a submitit job's requeue on SIGUSR2 not probed: it needs a scheduler)", flush=True)

    def reads(self) -> None:
        """Reads of files a run, a user or a fixture left: a damaged saved config, a record of a run that never
        finished, a fixture folder that cannot be written, a frame cache folder that is a link, event coordinates
        outside the sensor or not numbers: one line naming the file (or the safe behaviour)."""
        cwd = self.folder("reads-ref")
        data = self.private_data(cwd, "Cora")
        ref = self.fabricated_run(cwd, data)
        configs = [
            ("invalid YAML", b"model: [unclosed\n"),
            ("valid YAML without a run's sections", b"seed: 0\nnote: mine\n"),
            ("empty", b""),
            ("a YAML list", b"- dataset\n- neuron\n"),
            ("bytes that are not UTF-8", b"\xff\xfe\x00model: \xc3\x28\n"),
        ]
        for label, text in configs:
            cwd, run = self.copy_run(ref, label)
            (run / ".hydra" / "config.yaml").write_bytes(text)
            rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={data}", cwd=cwd)
            self.record(
                "reads",
                f"evaluate.py: .hydra/config.yaml {label}",
                self.classify_error(rc, out, ".hydra/config.yaml"),
                note=self.first_error(out)[:90],
            )
        for status, args in (("running", ()), ("interrupted", ()), ("running", ("allow_unfinished=true",))):
            cwd, run = self.copy_run(ref, f"status-{status}-{len(args)}")
            (run / "metrics.json").write_text(json.dumps({"status": status, "seed": 0}))
            rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={data}", *args, cwd=cwd)
            written = [name for name in ("eval.json", "energy.json") if (run / name).exists()]
            if args:  # evaluated, and its output says the run was unfinished?
                unfinished = rc == 0 and written and (_read_json(run / written[0]) or {}).get("run_unfinished")
                outcome = "clear" if unfinished else self.behaviour(rc, out)
            else:
                outcome = "silent" if rc == 0 or written else self.classify_error(rc, out, str(run))
            self.record(
                "reads",
                f"evaluate.py {' '.join(args)} on a record saying {status}, no process".replace("  ", " "),
                outcome,
                note=self.first_error(out)[:90],
            )
        self.fixtures_unwritable()
        self.frame_reads()

    def fixtures_unwritable(self) -> None:
        """``fsnn-fixtures`` on a file, a path under a file, a read-only folder: one line naming it."""
        cwd = self.folder("fixtures-unwritable")
        (afile := cwd / "afile").write_text("mine")
        (read_only := cwd / "read-only").mkdir()
        for label, target, options in (
            ("a file", afile, {}),
            ("a path under a file", afile / "data", {}),
            ("a read-only folder", read_only, {"read_only": read_only}),
        ):
            if options and not shutil.which("unshare"):
                print("  (no unshare here to mount a folder read-only: no read-only case)", flush=True)
                continue
            rc, out = self.run("fsnn-fixtures", str(target), "--only", "nmnist", cwd=cwd, **options)
            self.record(
                "reads",
                f"fsnn-fixtures on {label}",
                self.classify_error(rc, out, str(afile if target != read_only else read_only)),
                lost=afile.read_text() != "mine",
                note=next((line for line in out.splitlines() if ERROR_LINE.match(line)), out.strip()[-90:])[:90],
            )

    def frame_reads(self) -> None:
        """A frame cache folder that is a link (to another disk), a file of the user's in it, and raw events outside
        the sensor or at a coordinate that is not a number."""
        linked = (
            "split = serve('nmnist', data)[0].cache.dir\nelsewhere = data.parent / 'other-disk'\n"
            "shutil.move(split, elsewhere)\nsplit.symlink_to(elsewhere)\n(elsewhere / 'notes.txt').write_text('mine')\n"
            "(split / '_COMPLETE.json').unlink()  # stale: rebuilt\n"
            "again = frames(serve('nmnist', data)[0])\n"
            "assert split.is_symlink(), 'the linked cache folder was replaced by a folder'\n"
            "assert (elsewhere / 'notes.txt').exists(), 'a file of the user\\'s in the cache folder was removed'\n"
            "assert np.array_equal(again, frames(serve('nmnist', data, data / 'fresh-cache')[0])), 'other frames'\n"
        )
        cases = [
            ("a frame cache folder linked to another disk, stale", self.event_copy("linked", "NMNIST"), linked, "")
        ]
        gesture = [("x = 200 on the 128-pixel sensor", "x", 200), ("y = -1", "y", -1)]
        for label, axis, value in gesture:
            data = self.event_copy(label, "DVSGesture")
            path = sorted((data / "DVSGesture" / "ibmGestureTrain").glob("*/0.npy"))[0]
            events = np.load(path)
            events[3, "xy".index(axis)] = value  # columns x, y, p, t
            np.save(path, events)
            cases.append(
                (
                    f"DVS128 Gesture: an event at {label}",
                    data,
                    _ACCEPTED.format(name="dvsgesture"),
                    f"{path.parent.name}/{path.name}",
                )
            )
        data = self.event_copy("nan-coordinate", "MINI_HARDVS")
        path = sorted((data / "MINI_HARDVS" / "events_np" / "train").rglob("*.npz"))[0]
        events = dict(np.load(path))
        events["x"] = events["x"].astype(np.float64)
        events["x"][2] = np.nan
        np.savez(path, **events)
        cases.append(
            (
                "MINI-HARDVS: an event at x = NaN",
                data,
                _ACCEPTED.format(name="hardvs_mini"),
                f"{path.parent.name}/{path.name}",
            )
        )
        self.data_snippets("reads", cases)

    def writers(self) -> None:
        """``fsnn-fixtures`` looks before it writes: real data is refused by name and left as it was, a fake written
        over another leaves what the command wrote, a write that fails leaves no partial dataset; the fakes'
        runs train without ``FSNN_DATA_VERIFY=0`` and are recorded as fake, real data never."""
        real = HERE / "tests" / "data" / "planetoid" / "Cora"
        for label, copy, only in (
            ("the real Cora", lambda data: shutil.copytree(real, data / "Cora"), "cora"),
            (
                "an N-MNIST copy of the user's (a file no fake has)",
                lambda data: (
                    (data / "NMNIST" / "Train" / "0").mkdir(parents=True)
                    or (data / "NMNIST" / "Train" / "0" / "mine.bin").write_bytes(b"\x01\x02\x80\x00\x10" * 30)
                ),
                "nmnist",
            ),
        ):
            cwd = self.folder(f"writers-{only}")
            copy(data := cwd / "data")
            kept = _tree(data)
            rc, out = self.run("fsnn-fixtures", str(data), "--only", only, cwd=cwd)
            self.record(
                "writers",
                f"--only {only} over {label}",
                self.classify_error(rc, out, str(data)),
                lost=any(_tree(data).get(name) != digest for name, digest in kept.items()),
                note=f"{len(set(_tree(data)) - set(kept))} files added, "
                f"{sum(_tree(data).get(name) != digest for name, digest in kept.items())} of {len(kept)} replaced"
                if rc == 0
                else self.first_error(out)[:90],
            )
        # a fake over another: the folder holds what the second command writes into an empty one
        for label, first, second in (
            ("--scale 0.001 over --scale 0.004", ["--scale", "0.004"], ["--scale", "0.001"]),
            ("--scale 0.001 over the tiny fake", [], ["--scale", "0.001"]),
            ("the tiny fake over itself", [], []),
        ):
            cwd = self.folder(label)
            self.run("fsnn-fixtures", str(cwd / "data"), "--only", "nmnist", *first, cwd=cwd)
            rc, out = self.run("fsnn-fixtures", str(cwd / "data"), "--only", "nmnist", *second, cwd=cwd)
            self.run("fsnn-fixtures", str(cwd / "fresh"), "--only", "nmnist", *second, cwd=cwd)
            found, fresh = _tree(cwd / "data"), _tree(cwd / "fresh")
            self.record(
                "writers",
                label,
                ("clear" if found == fresh else "silent") if rc == 0 else self.classify_error(rc, out, "data"),
                note=f"{len(found)} files where the command alone writes {len(fresh)}",
            )
        # the disk fills up (a file may grow to 16 KiB) while Cora's fake is written, after N-MNIST's
        cwd = self.folder("writers-disk-full")
        rc, out = self.run("fsnn-fixtures", str(cwd / "data"), "--only", "nmnist", "cora", cwd=cwd, file_size=16384)
        self.run("fsnn-fixtures", str(cwd / "fresh"), "--only", "nmnist", "cora", cwd=cwd)
        partial = (
            sorted(
                folder.name
                for folder in (cwd / "data").iterdir()
                if _tree(folder) != _tree(cwd / "fresh" / folder.name)
            )
            if (cwd / "data").is_dir()
            else []
        )
        self.record(
            "writers",
            "disk full while writing Cora's fake",
            "silent" if partial else self.classify_error(rc, out, str(cwd / "data")),
            note=f"partial datasets left: {partial}" if partial else self.first_error(out)[:90],
        )
        self.fake_runs()

    def schema(self) -> None:
        """The config surface (:data:`SCHEMA_VALUES`, and a key no eval config has): refused before any folder is
        made, in one line naming the key."""
        for overrides, key in SCHEMA_VALUES:
            cwd = self.folder(overrides)
            flags = [arg for arg in overrides.split() if arg.startswith("-")]  # -m goes before the overrides
            rest = [arg for arg in overrides.split() if arg not in flags]
            rc, out = self.train(cwd, *flags, *TINY, *rest, timeout=240)
            self.refused_before_a_folder("schema", overrides, cwd, rc, out, key)
        cwd = self.folder("schema-many-overrides")
        start = time.perf_counter()
        rc, out = self.train(cwd, *TINY, *["neuron.alpha=0.5"] * MANY_OVERRIDES, timeout=240)
        took = time.perf_counter() - start
        self.record(
            "schema",
            f"{MANY_OVERRIDES} overrides (neuron.alpha=0.5 repeated), then a tiny run",
            "clear" if rc == 0 else "silent" if rc is None else self.behaviour(rc, out),
            note=f"{'timed out after' if rc is None else 'ended in'} {took:.0f} s",
        )
        cwd = self.folder("schema-evaluate")
        run = self.fabricated_run(cwd, data := self.private_data(cwd, "Cora"))
        rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={data}", "+studdy=energy", cwd=cwd)
        made = (run / "eval").exists()
        self.record(
            "schema",
            "evaluate.py +studdy=energy",
            "unclear" if made and rc == 2 else self.classify_error(rc, out, "studdy"),
            note="its eval folder was made" if made else self.first_error(out)[:90],
        )

    def refused_before_a_folder(self, category: str, case: str, cwd: Path, rc: int | None, out: str, key: str) -> None:
        """Record a ``train.py`` run in ``cwd`` that should have refused ``key`` in one line before making a folder."""
        made = (cwd / "runs").exists()
        outcome = self.classify_error(rc, out, key)
        self.record(
            category,
            case,
            "unclear" if made and outcome == "clear" else outcome,
            note="a run folder was made" if made and rc else self.first_error(out)[:90],
        )

    def fake_runs(self) -> None:
        """The smoke routes on ``fsnn-fixtures DIR`` with the loaders' checks on: they train, and each run says it
        ran on fake data; a run on real data beside a fake never does."""
        fakes = self.folder("writers-fakes") / "data"
        self.run("fsnn-fixtures", str(fakes), cwd=fakes.parent)
        real = self.folder("writers-real-beside-a-fake") / "data"
        shutil.copytree(HERE / "tests" / "data" / "planetoid" / "Cora", real / "Cora")
        self.run("fsnn-fixtures", str(real), "--only", "nmnist", cwd=real.parent)
        for label, data, args, fake in (
            (
                "graph smoke route",
                fakes,
                ["experiment=table2_node_classification_smoke", "dataset=cora", "backbone=sgcn", "neuron=flif"],
                True,
            ),
            (
                "vision smoke route",
                fakes,
                ["experiment=table1_neuromorphic_smoke", "setup=nmnist_cnn", "neuron=flif"],
                True,
            ),
            ("real Cora beside a fake N-MNIST", real, GRAPH, False),
        ):
            cwd = self.folder(label)
            # as a user runs it: the variable unset (empty reads as unset), verification at its default
            rc, out = self.run("train.py", *args, f"paths.data_dir={data}", cwd=cwd, env={"FSNN_DATA_VERIFY": ""})
            found = [_read_json(path) or {} for path in (cwd / "runs").rglob("metrics.json")]
            m = found[0] if len(found) == 1 else {}
            right = rc == 0 and m.get("status") == "complete" and (m.get("fake_data") is True) == fake
            self.record(
                "writers",
                f"{label}, FSNN_DATA_VERIFY unset: {'recorded as fake' if fake else 'never recorded as fake'}",
                "clear" if right else self.behaviour(rc, out),
                note=f"exit {rc}, {len(found)} runs, fake_data {m.get('fake_data')!r}"
                + (f": {self.first_error(out)[:60]}" if rc else ""),
            )


# a run folder made by the checkout's own functions: conf dir, run dir, "same"/"other" shape, overrides
FABRICATE = """
import sys, torch
from pathlib import Path
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from fsnn.suite.checkpoint import result_config, save_checkpoint
from fsnn.suite.tasks import build_task
conf, run, shape = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
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


def _tree(folder: Path) -> dict[str, str]:
    """``{path in folder: SHA-256 of its content}`` of every file under ``folder`` (none where it is absent)."""
    return {
        path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _children(pid: int) -> list[int]:
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


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _names_sampler(record: dict | None, out: str) -> str:
    """``clear`` when a record names the samplers of its Poisson encoders."""
    if "Traceback" in out:
        return "traceback"
    encoders = (record or {}).get("encoders") or {}
    return "clear" if encoders and all(e.get("samplers") for e in encoders.values()) else "silent"


def _edit_pickle(path: Path, edit) -> None:
    obj = pickle.loads(path.read_bytes(), encoding="latin1")
    path.write_bytes(pickle.dumps(edit(obj), protocol=2))


def _with_nan(x):
    x = x.tolil()
    x[3, 5] = float("nan")
    return x.tocsr()


def _edge_beyond(raw: Path) -> None:
    def edit(graph):
        graph[0].append(99_999)
        return graph

    _edit_pickle(raw / "ind.cora.graph", edit)


def _truncated(name: str):
    def damage(raw: Path) -> None:
        path = raw / name
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])

    return damage


def _snippets(category: str):
    def cases(self) -> None:
        self.snippets(category, [(case, code, word) for case, code, word, _fast in SNIPPETS[category]])

    cases.__doc__ = f"The library's {category} cases (:data:`SNIPPETS`), each a Python snippet in a fresh process."
    return cases


class Payload:
    """A pickle that creates a file when it is loaded."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


CATEGORIES = {
    "bad value": Probe.bad_values,
    "multirun": Probe.multirun,
    "checkpoint": Probe.checkpoints,
    "cache": Probe.caches,
    "security": Probe.security,
    "runs": Probe.runs,
    "values": Probe.values,
    "lifecycle": Probe.lifecycle,
    "confined": Probe.confined,
    "folders": Probe.folders,
    "signals": Probe.signals,
    "library": Probe.library,
    "report": Probe.report,
    "environment": Probe.environment,
    "mismatch": Probe.mismatch,
    "inputs": Probe.inputs,
    "cache keys": Probe.cache_keys,
    "labels": Probe.labels,
    "decisions": Probe.decisions,
    "handlers": Probe.handlers,
    "reads": Probe.reads,
    "writers": Probe.writers,
    "schema": Probe.schema,
    "parameters": _snippets("parameters"),
    "autograd": _snippets("autograd"),
    "registries": _snippets("registries"),
}
#: the categories whose cases (with ``--fast``) run in seconds each, without training: the test suite runs them
FAST = ("environment", "mismatch", "inputs", "folders", "report", "labels", "decisions", "reads")


def summary(rows: list[dict]) -> str:
    lines = [
        "| category | cases | clear | traceback | unclear | silent | data lost | security |",
        "|---|---|---|---|---|---|---|---|",
    ]
    groups = {}
    for row in rows:
        groups.setdefault(row["category"], []).append(row)
    for name, group in [*groups.items(), ("all", rows)]:
        counts = Counter(r["outcome"] for r in group)
        lost, security = sum(r["lost"] for r in group), sum(r.get("security", False) for r in group)
        lines.append(
            f"| {name} | {len(group)} | " + " | ".join(str(counts[o]) for o in OUTCOMES) + f" | {lost} | {security} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=HERE, help="the fsnn checkout to probe (default: this one)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "probe", help="where probe.json/md go")
    parser.add_argument("--only", nargs="+", choices=sorted(CATEGORIES), help="run only these categories")
    parser.add_argument(
        "--fast",
        action="store_true",
        help=f"in {', '.join(FAST)}, only the cases that train nothing (what the test suite runs)",
    )
    parser.add_argument(
        "--values",
        nargs="+",
        metavar="OVERRIDE",
        help="try only these of the bad values (as listed in BAD_VALUES), e.g. on a busy machine",
    )
    args = parser.parse_args(argv)
    root = args.root.resolve()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fsnn-probe-") as tmp:
        work, data = Path(tmp) / "runs", Path(tmp) / "data"
        work.mkdir()
        subprocess.run(
            [sys.executable, "-m", "fsnn.data.make_fixtures", str(data)],
            check=True,
            env={**os.environ, "PYTHONPATH": str(root)},
            stdout=subprocess.DEVNULL,
        )
        values = BAD_VALUES if args.values is None else [v for v in BAD_VALUES if v[0] in args.values]
        if args.values is not None and len(values) != len(args.values):
            unknown = sorted(set(args.values) - {v[0] for v in values})
            parser.error(f"--values: expected overrides listed in BAD_VALUES, got {unknown}")
        args.out.mkdir(parents=True, exist_ok=True)
        (journal := args.out / "probe.jsonl").write_text("")
        probe = Probe(root, work, data, values, journal, fast=args.fast)
        for name, method in CATEGORIES.items():
            if args.only is None or name in args.only:
                print(f"{name}:", flush=True)
                method(probe)
    table = summary(probe.rows)
    print(table)
    print(f"{len(probe.rows)} cases in {time.perf_counter() - start:.0f} s")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "probe.json").write_text(json.dumps({"root": str(root), "rows": probe.rows}, indent=2))
    (args.out / "probe.md").write_text(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
