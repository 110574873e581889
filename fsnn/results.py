"""Run records: atomic JSON files and the facts every ``metrics.json`` carries."""

from __future__ import annotations

import json
import os
import platform
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

PACKAGES = ("fsnn", "torch", "torchvision", "lightning", "hydra-core", "spikingjelly", "snntorch",
            "tonic", "timm", "torch-geometric", "numpy", "triton")


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` via a temporary file in the same folder and ``os.replace``.

    A reader (or a crash) sees either the old file or the complete new one, never half of one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: str | Path, payload: Any) -> Path:
    """``payload`` as indented JSON, written atomically (:func:`write_text_atomic`)."""
    return write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True, default=_jsonable))


def _jsonable(value):
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def package_versions() -> dict[str, str | None]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def device_description(device: torch.device | str) -> str:
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
