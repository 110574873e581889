"""Packaging: the core installs and runs with torch alone; the optional libraries stay optional."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from conftest import ROOT

OPTIONAL = ("spikingjelly", "snntorch", "hydra", "lightning", "torch_geometric")

CORE_USE = """
import importlib.util, json, torch
import fsnn
from fsnn import FractionalLIF, build_neuron

x = torch.randn(12, 3, 5, requires_grad=True)
neuron = FractionalLIF(alpha=0.5, learn_alpha=True)
spikes, v = neuron(x, return_state=True)
(spikes.sum() + v.sum()).backward()
report = {
    "fsnn": fsnn.__file__,
    "optional_found": [m for m in %r if importlib.util.find_spec(m) is not None],
    "spikes": list(spikes.shape),
    "grads_finite": bool(torch.isfinite(x.grad).all()) and neuron.alpha_raw.grad is not None,
    "flif": type(build_neuron("flif", alpha=0.3)).__name__,
    "paper_tables": importlib.resources.files("fsnn").joinpath("paper_tables.yaml").is_file(),
}
try:
    build_neuron("sj_lif")
except ImportError as error:
    report["sj_lif"] = str(error)
print(json.dumps(report))
""" % (OPTIONAL,)


def _closure(name: str) -> set[str]:
    """Distributions ``name`` needs at run time on this machine (its requirements, recursively, markers and the
    requested extras evaluated), found in this interpreter's environment."""
    seen, todo = set(), [(name, ())]
    while todo:
        dist_name, extras = todo.pop()
        dist = metadata.distribution(dist_name)
        key = dist.metadata["Name"].lower()
        if (key, extras) in seen:
            continue
        seen.add((key, extras))
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ("", *extras)):
                todo.append((req.name, tuple(sorted(req.extras))))
    return {key for key, _ in seen}


def _torch_only_site(target: Path) -> Path:
    """A folder of links to torch and the distributions it needs, and nothing else, from this environment."""
    target.mkdir()
    for name in _closure("torch"):
        dist = metadata.distribution(name)
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith((".", "/"))}
        for top in tops - {"bin", "__pycache__"}:
            source = Path(dist.locate_file(top))
            if source.exists() and not (target / top).exists():
                (target / top).symlink_to(source)
    return target


@pytest.mark.slow
def test_core_installs_with_torch_alone(tmp_path):
    # a wheel of this checkout, built from a copy so that the checkout gets no build folders
    source = tmp_path / "src"
    shutil.copytree(ROOT / "fsnn", source / "fsnn", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(wheels), str(source)], check=True, capture_output=True, timeout=300)

    # a fresh environment whose only library is torch (linked, not downloaded: it is gigabytes)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    torch_only = _torch_only_site(tmp_path / "torch-only")
    (Path(site) / "torch-only.pth").write_text(f"{torch_only}\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONNOUSERSITE": "1"}
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", *wheels.glob("*.whl")],
                   check=True, capture_output=True, env=env, timeout=300)

    done = subprocess.run([python, "-c", CORE_USE], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(report["fsnn"]).is_relative_to(site)  # the installed copy, not the checkout
    assert report["optional_found"] == []
    assert report["spikes"] == [12, 3, 5] and report["grads_finite"] and report["flif"] == "FractionalLIF"
    assert report["paper_tables"]
    message = report["sj_lif"]
    assert "sj_lif" in message and "not installed" in message and "pip install 'fsnn[baselines]'" in message
    assert "\n" not in message



def test_importing_the_core_loads_no_optional_library():
    code = ("import sys, torch; from fsnn import FractionalLIF, build_neuron; build_neuron('flif')(torch.ones(2, 1)); "
            f"print([m for m in {OPTIONAL!r} if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"


def test_a_baseline_without_its_library_is_one_clear_error(monkeypatch):
    from fsnn.registry import Registry

    neurons = Registry("neuron")
    neurons.lazy("sj_lif", "fsnn.baselines:SJLIF", extra="baselines")
    assert neurons.names() == ["sj_lif"]  # listed before its library is imported
    monkeypatch.delitem(sys.modules, "fsnn.baselines", raising=False)
    for module in ["spikingjelly", *(m for m in sys.modules if m.startswith("spikingjelly."))]:
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(ImportError) as error:
        neurons.create("sj_lif", tau=2.0)
    message = str(error.value)
    assert "'sj_lif'" in message and "spikingjelly is not installed" in message
    assert message.endswith("pip install 'fsnn[baselines]'") and "\n" not in message


def test_a_triton_that_cannot_import_leaves_the_core_working():
    # torch installs Triton, but its interpreter (TRITON_INTERPRET=1) needs numpy, which torch does not
    code = ("import sys, torch; sys.modules['triton'] = None\n"
            "from fsnn import FractionalLIF\n"
            "print(tuple(FractionalLIF(alpha=0.5)(torch.ones(4, 2)).shape))\n"
            "try:\n    FractionalLIF(alpha=0.5, engine='triton')(torch.ones(4, 2))\n"
            "except (RuntimeError, ValueError) as error:\n    print(error)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    shape, message = done.stdout.strip().splitlines()
    assert shape == "(4, 2)"
    assert message.startswith("engine='triton' cannot run here")
    assert "Triton cannot be imported" in message
