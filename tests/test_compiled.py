"""The plumbing of fsnn's compiled CPU extensions (:mod:`fsnn.compiled`): where they are built, a finished
build imported without building, and a build that fails. The kernels themselves: ``test_cpu_kernels.py`` and ``test_poisson_sampler.py``."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
import torch
from helpers import ROOT

from fsnn import compiled
from fsnn.compiled import CompiledExtension


def test_builds_go_to_one_folder_per_torch_version_and_source(monkeypatch, tmp_path):
    """An upgraded torch builds anew; two checkouts of one source share a build; an edited source gets its own."""
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "builds"))
    one, other = tmp_path / "a" / "k.cpp", tmp_path / "b" / "k.cpp"
    for path in (one, other):
        path.parent.mkdir()
        path.write_text("int f() { return 1; }\n")
    folder = CompiledExtension("fsnn_k", one).build_directory()
    assert folder.parent.parent == tmp_path / "builds" and folder.name.startswith("fsnn_k-")
    assert f"torch{torch.__version__}" in folder.parent.name
    assert CompiledExtension("fsnn_k", other).build_directory() == folder
    other.write_text("int f() { return 2; }\n")
    assert CompiledExtension("fsnn_k", other).build_directory() != folder


def test_a_failed_build_is_reported_once_and_remembered(monkeypatch, tmp_path, caplog):
    """A source that does not compile: unavailable_reason names the failure, logs one warning, and the build is not
    retried in the process (the exception is cached)."""
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "builds"))
    source = tmp_path / "broken.cpp"
    source.write_text("this is not C++\n")
    extension = CompiledExtension("fsnn_broken_test", source)
    compiled._warn_once.cache_clear()
    with caplog.at_level(logging.WARNING, logger=compiled.__name__):
        reason = extension.unavailable_reason()
        assert extension.unavailable_reason() == reason
    assert reason is not None and reason.startswith("their build failed")
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
    assert extension.module() is extension.module()  # built (tried) once
    # compiled from a copy beside the build, so that its path is the same for every checkout
    assert (extension.build_directory() / "broken.cpp").read_text() == "this is not C++\n"
    monkeypatch.setenv("FSNN_CPU_KERNELS", "0")
    assert extension.unavailable_reason() == "FSNN_CPU_KERNELS=0 turns them off"
    compiled._warn_once.cache_clear()


def test_a_finished_build_is_imported_without_building_again(monkeypatch):
    """Once built (the ``built`` marker beside it), a fresh process imports the extension without
    ``torch.utils.cpp_extension.load`` (which checks the build with ninja under the folder's lock every time)."""
    from torch.utils import cpp_extension

    from fsnn.models import poisson

    if (reason := poisson.EXTENSION.unavailable_reason()) is not None:
        pytest.skip(f"the Poisson kernels cannot be built here: {reason}")
    assert (poisson.EXTENSION.build_directory() / compiled.BUILT).exists()
    fresh = CompiledExtension(poisson.EXTENSION.name, poisson.EXTENSION.source)

    def no_build(*args, **kwargs):
        raise AssertionError("built again")

    monkeypatch.setattr(cpp_extension, "load", no_build)
    module = fresh.module()
    assert not isinstance(module, Exception), module
    assert module.splitmix64_sequence(1, 1) == poisson.EXTENSION.module().splitmix64_sequence(1, 1)


DAMAGE = """
import json, os, shutil, sys
from pathlib import Path
from torch.utils import cpp_extension
from fsnn.models import poisson
from fsnn import compiled
real = poisson.EXTENSION.build_directory() / (poisson.EXTENSION.name + ".so")
os.environ["TORCH_EXTENSIONS_DIR"] = sys.argv[1]
fresh = compiled.CompiledExtension(poisson.EXTENSION.name, poisson.EXTENSION.source)
folder = fresh.build_directory()
folder.mkdir(parents=True)
library = folder / real.name
shutil.copy(real, library)
compiled._write_marker(folder, library)
how = sys.argv[2]
if how in ("truncated", "legacy marker, truncated"):
    library.write_bytes(real.read_bytes()[: real.stat().st_size // 2])
if how.startswith("legacy marker"):
    (folder / compiled.BUILT).write_text("")
builds = []
def load(name, sources, build_directory, **kwargs):  # a build: the whole library again
    builds.append(name)
    shutil.copy(real, library)
    return compiled._import(name, library)
cpp_extension.load = load
module = fresh.module()
assert not isinstance(module, Exception), module
marker = json.loads((folder / compiled.BUILT).read_text())
print("OK", len(builds), marker["size"] == real.stat().st_size, module.splitmix64_sequence(1, 1))
"""


@pytest.mark.parametrize(
    "how, builds", [("whole", 0), ("truncated", 1), ("legacy marker", 0), ("legacy marker, truncated", 1)]
)
def test_a_damaged_build_is_built_again_not_imported(tmp_path, how, builds):
    """A library cut short under its ``built`` marker would kill every process that maps it with SIGBUS: it is
    checked against the size and SHA-256 its marker records (an older marker without them: against its own ELF
    tables) and built again, with a warning naming it; a whole one is imported without building. In a process of
    its own, so that a SIGBUS fails the test instead of ending the session."""
    from fsnn.models import poisson

    if (reason := poisson.EXTENSION.unavailable_reason()) is not None:
        pytest.skip(f"the Poisson kernels cannot be built here: {reason}")
    proc = subprocess.run(
        [sys.executable, "-c", DAMAGE, str(tmp_path / "builds"), how],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[:3] == ["OK", str(builds), "True"]
    assert ("building them again" in proc.stderr) == (builds == 1)
    if builds:
        assert "fsnn_poisson_kernels.so" in proc.stderr and ("cut short" in proc.stderr or "truncated" in proc.stderr)
