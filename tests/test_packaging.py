"""Packaging: the core installs and runs with torch alone; the optional libraries stay optional."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from helpers import ROOT
from packaging.requirements import Requirement

from fsnn.models import poisson
from fsnn.neurons import cpu_kernels

OPTIONAL = ("spikingjelly", "snntorch", "hydra", "lightning", "torch_geometric")

CORE_USE = """
import importlib.util, json, torch
import fsnn
from fsnn import FractionalLIF, build_neuron
from fsnn.models.poisson import poisson_encode

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
    "paper_tables": importlib.resources.files("fsnn.report").joinpath("paper_tables.yaml").is_file(),
    "engine": neuron.last_engine,
    "sampler": poisson_encode(torch.rand(4, 6), 3).sampler,
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


def _build_wheel(tmp_path: Path) -> Path:
    """A wheel of this checkout, built from a copy so that the checkout gets no build folders."""
    source = tmp_path / "src"
    for folder in ("fsnn", "conf"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(wheels),
            str(source),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "warn" not in (built.stdout + built.stderr).lower(), (built.stdout + built.stderr)[-3000:]  # no noise
    return next(wheels.glob("fsnn-*.whl"))


def _fresh_venv(path: Path, wheel: Path, sees: Path) -> tuple[Path, Path, dict]:
    """``(python, site-packages, env)`` of a new virtual environment at ``path`` (no pip of its own) holding ``wheel``
    (installed by this environment's pip, without dependencies) and seeing the folder ``sees`` through a ``.pth``
    file, after its own site-packages."""
    venv.create(path, with_pip=False)
    python = path / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    (site / "dependencies.pth").write_text(f"{sees}\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONNOUSERSITE": "1"}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        env=env,
        timeout=300,
    )
    return python, site, env


@pytest.mark.slow
def test_core_installs_with_torch_alone(tmp_path):
    # a fresh environment whose only library is torch (linked, not downloaded: it is gigabytes)
    torch_only = _torch_only_site(tmp_path / "torch-only")
    python, site, env = _fresh_venv(tmp_path / "venv", _build_wheel(tmp_path), sees=torch_only)
    done = subprocess.run([python, "-c", CORE_USE], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(report["fsnn"]).is_relative_to(site)  # the installed copy, not the checkout
    assert report["optional_found"] == []
    assert report["spikes"] == [12, 3, 5] and report["grads_finite"] and report["flif"] == "FractionalLIF"
    assert report["paper_tables"]
    # the compiled CPU loops travel in the wheel (their C++ source) and build there wherever they build here
    assert report["engine"] == ("cpp-direct" if cpu_kernels.unavailable_reason() is None else "direct")
    assert report["sampler"] == ("compiled" if poisson.EXTENSION.unavailable_reason() is None else "torch")
    message = report["sj_lif"]
    assert "sj_lif" in message and "not installed" in message and "pip install 'fsnn[baselines]'" in message
    assert "\n" not in message
    # the suite's commands are installed with the core, and say what they need
    command = subprocess.run(
        [python.parent / "fsnn-train"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert command.returncode == 2 and command.stdout == "" and "Traceback" not in command.stderr
    last = command.stderr.splitlines()[-1]  # after torch's own warning that numpy is missing
    assert last.startswith(
        "fsnn: error: fsnn-train needs the optional libraries of fsnn[suite] (hydra is not installed)"
    )
    assert last.endswith("pip install 'fsnn[suite]'") and command.stderr.count("fsnn:") == 1


MY_EXPERIMENT = """# @package _global_
# a new experiment in a folder of one's own: f-LIF at alpha 0.3 on the default setting
defaults:
  - override /neuron: flif
task_name: my_experiment
neuron:
  alpha: 0.3
"""


@pytest.mark.slow
def test_the_suite_runs_from_an_installed_wheel(tmp_path):
    """``fsnn-train`` / ``fsnn-evaluate`` / ``fsnn-fixtures`` from a wheel installed into a fresh virtual environment
    outside the checkout, with the configs the wheel carries and a user's own config folder on Hydra's search path,
    and a ``*_smoke`` sweep on the fake data of ``fsnn-fixtures``.

    To avoid reinstalling torch and the suite's other dependencies (gigabytes), the fresh environment sees this
    environment's site-packages through a ``.pth`` file (its ``.pth`` files, this checkout's editable install among
    them, are not read), and the wheel itself is installed with ``--no-deps``."""
    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        packed = set(archive.namelist())
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "fsnn").rglob("*.py")}
    configs = {"fsnn/" + p.relative_to(ROOT).as_posix() for p in (ROOT / "conf").rglob("*.yaml")}
    assert sources | configs <= packed, sorted((sources | configs) - packed)[:5]

    deps = Path(sysconfig.get_paths()["purelib"])
    python, site, env = _fresh_venv(tmp_path / "venv", wheel, sees=deps)
    bin_dir = python.parent
    work = tmp_path / "elsewhere"  # neither the checkout nor its parent
    (work / "my_configs" / "experiment").mkdir(parents=True)
    (work / "my_configs" / "experiment" / "mine.yaml").write_text(MY_EXPERIMENT)
    env |= {"WANDB_MODE": "disabled", "MPLBACKEND": "Agg"}
    where = subprocess.run(
        [python, "-c", "import fsnn.suite.cli; print(fsnn.suite.cli.__file__); print(fsnn.suite.cli.CONFIG_DIR)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=300,
    )
    module, config_dir = where.stdout.split()
    assert Path(module).is_relative_to(site) and Path(config_dir) == site / "fsnn" / "conf"

    common = ["paths.data_dir=data", "paths.results_dir=results"]
    done = subprocess.run(
        [bin_dir / "fsnn-train", "+smoke=vision", "logger=tensorboard", *common],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    run = work / "results" / "train" / "+smoke-vision+seed-0"
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["status"] == "complete" and metrics["config"]["dataset"]["name"] == "digits_dvs"
    assert list((run / "tensorboard").glob("version_0/events.out.tfevents.*"))
    evaluated = subprocess.run(
        [
            bin_dir / "fsnn-evaluate",
            f"run_dir={run}",
            "paths.data_dir=data",
            "limit_test_batches=1",
        ],  # the smoke run tested one batch
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=600,
    )
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    assert json.loads((run / "eval.json").read_text())["test_acc"] == pytest.approx(metrics["test_acc"])

    # the documented way to add an experiment without touching the package
    mine = subprocess.run(
        [bin_dir / "fsnn-train", "--config-dir", "my_configs", "experiment=mine", "+smoke=vision", *common],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=600,
    )
    assert mine.returncode == 0, mine.stderr[-3000:]
    record = json.loads(next((work / "results" / "my_experiment").glob("*/metrics.json")).read_text())
    assert record["status"] == "complete" and record["config"]["neuron"]["alpha"] == 0.3

    # a *_smoke sweep outside any checkout: without data it is refused once, pointing at fsnn-fixtures; with the
    # fake data that command writes, it runs
    smoke = [bin_dir / "fsnn-train", "experiment=ablation_alpha_node_smoke", "paths.results_dir=results"]
    refused = subprocess.run(smoke, capture_output=True, text=True, env=env, cwd=work, timeout=600)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr[-3000:]
    assert f"paths.data_dir: expected a folder holding the sweep's datasets, got '{work / 'data'}'" in refused.stderr
    assert "fsnn-fixtures DIR" in refused.stderr and not (work / "results" / "ablation_alpha_node_smoke").exists()
    fixtures = subprocess.run(
        [bin_dir / "fsnn-fixtures", "fake_data", "--only", "cora"],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=300,
    )
    assert fixtures.returncode == 0 and "paths.data_dir=fake_data" in fixtures.stdout, fixtures.stderr[-3000:]
    swept = subprocess.run(
        [*smoke, "paths.data_dir=fake_data"], capture_output=True, text=True, env=env, cwd=work, timeout=900
    )
    assert swept.returncode == 0, swept.stderr[-3000:]
    runs = [json.loads(p.read_text()) for p in (work / "results" / "ablation_alpha_node_smoke").glob("*/metrics.json")]
    assert len(runs) == 10 and all(r["status"] == "complete" and r["config"]["dataset"]["name"] == "cora" for r in runs)

    # the reports read the wheel's configs: the smoke sweep is one of the suite's experiments (its
    # conf/experiment/ file is in the wheel), the two runs above are not; the results folder is the runs' own,
    # $FSNN_RESULTS, with no --results
    reported = subprocess.run(
        [bin_dir / "fsnn-report", "tables"],
        capture_output=True,
        text=True,
        env={**env, "FSNN_RESULTS": str(work / "results")},
        cwd=work,
        timeout=600,
    )
    assert reported.returncode == 0, reported.stderr[-3000:]
    assert f"runs in {work / 'results'}: 12 complete, 0 failed, 0 running/unfinished, 0 corrupt" in reported.stdout
    assert "not tabulated: 2 run(s) of my_experiment, train" in reported.stdout, reported.stdout[:3000]
    # a run trained with FSNN_RESULTS=<dir> is on the page fsnn-report writes for that dir
    elsewhere = {**env, "FSNN_RESULTS": str(work / "elsewhere_results")}
    trained = subprocess.run(
        [bin_dir / "fsnn-train", "+smoke=vision", "paths.data_dir=data"],
        capture_output=True,
        text=True,
        env=elsewhere,
        cwd=work,
        timeout=600,
    )
    assert trained.returncode == 0, trained.stderr[-3000:]
    paged = subprocess.run(
        [bin_dir / "fsnn-report", "page"], capture_output=True, text=True, env=elsewhere, cwd=work, timeout=900
    )
    assert paged.returncode == 0, paged.stderr[-3000:]
    page = (work / "elsewhere_results" / "report" / "index.html").read_text()
    assert "<code>train/+smoke-vision+seed-0</code>" in page


def test_importing_the_core_loads_no_optional_library():
    code = (
        "import sys, torch; from fsnn import FractionalLIF, build_neuron; build_neuron('flif')(torch.ones(2, 1)); "
        f"print([m for m in {OPTIONAL!r} if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"


def test_a_baseline_without_its_library_is_one_clear_error(monkeypatch):
    from fsnn.registry import Registry

    neurons = Registry("neuron")
    neurons.lazy("sj_lif", "fsnn.neurons.baselines:SJLIF", extra="baselines")
    assert neurons.names() == ["sj_lif"]  # listed before its library is imported
    monkeypatch.delitem(sys.modules, "fsnn.neurons.baselines", raising=False)
    for module in ["spikingjelly", *(m for m in sys.modules if m.startswith("spikingjelly."))]:
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(ImportError) as error:
        neurons.create("sj_lif", tau=2.0)
    message = str(error.value)
    assert "'sj_lif'" in message and "spikingjelly is not installed" in message
    assert message.endswith("pip install 'fsnn[baselines]'") and "\n" not in message


def test_a_triton_that_cannot_import_leaves_the_core_working():
    # torch installs Triton, but its interpreter (TRITON_INTERPRET=1) needs numpy, which torch does not
    code = (
        "import sys, torch; sys.modules['triton'] = None\n"
        "from fsnn import FractionalLIF\n"
        "print(tuple(FractionalLIF(alpha=0.5)(torch.ones(4, 2)).shape))\n"
        "try:\n    FractionalLIF(alpha=0.5, engine='triton')(torch.ones(4, 2))\n"
        "except (RuntimeError, ValueError) as error:\n    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    shape, message = done.stdout.strip().splitlines()
    assert shape == "(4, 2)"
    assert message.startswith("engine='triton' cannot run here")
    assert "Triton cannot be imported" in message


@pytest.mark.parametrize("logger,extra", [("wandb", "wandb"), ("tensorboard", "tensorboard")])
def test_a_logger_without_its_library_is_one_clear_error(compose_cfg, monkeypatch, tmp_path, logger, extra):
    from fsnn.suite.config import check_config
    from fsnn.suite.tasks import ConfigError

    cfg = compose_cfg(f"logger={logger}", f"paths.results_dir={tmp_path}")
    check_config(cfg)  # installed here
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("wandb", "tensorboard", "tensorboardX") else real(name, *a),
    )
    with pytest.raises(ConfigError) as error:
        check_config(cfg)
    message = str(error.value)
    assert message.startswith("logger: ") and message.endswith(f"pip install 'fsnn[{extra}]'") and "\n" not in message


def test_the_tensorboard_logger_writes_events(compose_cfg, tmp_path):
    import hydra

    cfg = compose_cfg("logger=tensorboard")
    cfg.logger.save_dir = str(tmp_path)  # Hydra's run folder, outside a run
    logger = hydra.utils.instantiate(cfg.logger)
    logger.log_metrics({"val/acc": 0.5}, step=0)
    logger.finalize("success")
    assert list(tmp_path.glob("tensorboard/version_0/events.out.tfevents.*"))


def test_only_spikformer_needs_timm(monkeypatch):
    from fsnn.models import build_backbone
    from fsnn.registry import MissingExtraError

    for module in ["timm", *(m for m in sys.modules if m.startswith("timm."))]:
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    build_backbone("dvsnet", num_classes=10, in_channels=2, input_size=(32, 32), neuron="lif", channels=4, num_blocks=2)
    build_backbone("resnet18", num_classes=10, in_channels=2, input_size=(32, 32), neuron="lif")
    with pytest.raises(MissingExtraError) as error:
        build_backbone("spikformer", num_classes=10, in_channels=2, input_size=(32, 32), neuron="lif")
    message = str(error.value)
    assert "timm is not installed" in message and message.endswith("pip install 'fsnn[vision]'")
    assert "\n" not in message


def test_license_and_citation_agree_with_the_package():
    import tomllib

    import yaml

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License")
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["version"] == project["version"] and citation["license"] == project["license"]
    paper = citation["preferred-citation"]
    bibtex = (ROOT / "README.md").read_text().split("```bibtex", 1)[1].split("```", 1)[0]
    assert f"title     = {{{paper['title']}}}" in bibtex
    authors = " and ".join(f"{a['family-names']}, {a['given-names']}" for a in paper["authors"])
    assert " ".join(authors.split()) in " ".join(bibtex.replace("\n", " ").split())


@pytest.mark.skipif(shutil.which("make") is None, reason="make not found on PATH")
def test_make_installs_torch_from_the_index_it_is_given_first():
    """``make ... TORCH_INDEX=<url>`` (the README's CPU install) installs torch from that index, at the constraints'
    version, before fsnn; without it, no such step."""

    def install_steps(*args: str) -> list[str]:
        proc = subprocess.run(
            ["make", "-n", "-B", "install", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        return [line for line in proc.stdout.splitlines() if "pip install" in line]

    steps = install_steps("TORCH_INDEX=https://download.pytorch.org/whl/cpu")
    assert steps[1].endswith(
        "pip install --quiet -c constraints.txt torch --index-url https://download.pytorch.org/whl/cpu"
    )
    assert "-e " in steps[2]  # fsnn after torch, which the constraints then find installed
    assert not any("--index-url" in step for step in install_steps())
    assert "make train TORCH_INDEX=https://download.pytorch.org/whl/cpu" in (ROOT / "README.md").read_text()


def test_pyproject_lists_every_package_and_config_folder():
    """setuptools warns, about 1,000 lines per install, for each config folder it finds but is not told about: the
    package list is fsnn's packages and every folder of conf/ (as ``fsnn.conf.<folder>``), no more, no less."""
    import tomllib

    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    code = {p.parent.relative_to(ROOT).as_posix().replace("/", ".") for p in (ROOT / "fsnn").rglob("__init__.py")}
    configs = {"fsnn.conf"} | {
        "fsnn.conf." + p.relative_to(ROOT / "conf").as_posix().replace("/", ".")
        for p in (ROOT / "conf").rglob("*")
        if p.is_dir() and p.name != "__pycache__"
    }
    assert sorted(listed) == sorted(code | configs)
