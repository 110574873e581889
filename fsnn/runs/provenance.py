"""What produced a result, as every ``metrics.json`` and benchmark records it: the installed versions of the
libraries that matter, the fsnn commit, the device."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path

import torch

from fsnn.runs.configs import PACKAGE

PACKAGES = (
    "fsnn",
    "torch",
    "torchvision",
    "lightning",
    "hydra-core",
    "spikingjelly",
    "snntorch",
    "tonic",
    "timm",
    "torch-geometric",
    "numpy",
    "triton",
)


def package_versions() -> dict[str, str | None]:
    """Installed versions of :data:`PACKAGES`, and ``fsnn_commit``: the git commit of the fsnn source that runs
    (:func:`source_commit`)."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    versions["fsnn_commit"] = source_commit()
    return versions


def source_commit() -> str | None:
    """``git rev-parse HEAD`` of the checkout fsnn is imported from, with ``-dirty`` when its tracked files differ
    from that commit; ``None`` outside a git checkout (an installed wheel) or without git."""
    try:
        top, head = subprocess.run(
            ["git", "-C", str(PACKAGE), "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.split()
        if Path(top).resolve() != PACKAGE.parent:  # an installed copy inside some other repository
            return None
        changed = subprocess.run(
            ["git", "-C", str(PACKAGE), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if changed else head


def cpu_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (Linux's ``/proc/cpuinfo``), else what :mod:`platform` knows (its architecture at least),
    so that runs from two machines of one architecture can be told apart."""
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_description(device: torch.device | str) -> str:
    """What a run ran on, for ``metrics.json``: the GPU's name, or the CPU's model and torch's threads."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({cpu_name()}, {torch.get_num_threads()} threads)"
