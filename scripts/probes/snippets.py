"""The probe's Python snippets: the library's cases (:data:`SNIPPETS`) and the event datasets' ones, and
:func:`run_snippets`, which runs them in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
SERVE = """
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
RAW_CHANGED = """
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
MARKER_EDITED = """
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
LABELS = """
shutil.copytree(data, copy := data.parent / "copy")
{change}
full, changed = labels(serve({name!r}, data)), labels(serve({name!r}, copy))
moved = {{key.split("/")[-2]: (full[key], label) for key, label in changed.items() if full.get(key) != label}}
assert not moved, f"labels moved (class: (with every folder, without)): {{moved}}"
"""
# an event dataset with a damaged raw file: its build must refuse it
ACCEPTED = """
serve({name!r}, data)
raise AssertionError("built: the damaged raw file accepted")
"""
# a claims decision that the runs cannot carry: ``decide(a, b, claim)`` must say it is not decided
DECIDE = """
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
