"""What the dataset layer reads from its surroundings: the ``$FSNN_DATA_*`` switches (:func:`resolve_verify`,
:func:`resolve_download`) and paths as the user wrote them (:func:`abspath`)."""

from __future__ import annotations

import os
from pathlib import Path

from fsnn.data.fakes import is_fake


def env_flag(var: str, default: bool) -> bool:
    """Boolean environment switch: ``0/false/no/off`` -> False, ``1/true/yes/on`` -> True, unset -> ``default``."""
    value = os.environ.get(var)
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


def resolve_verify(verify: bool | None, folder: str | Path | None = None) -> bool:
    """``verify`` if given, else ``$FSNN_DATA_VERIFY`` if set; else off for a fake (``folder``, the dataset's folder,
    carries the marker ``fsnn-fixtures`` writes: :func:`fsnn.data.fakes.is_fake`) and on for anything else.

    On: each split of an event dataset must hold the published number of files (DVS128 Gesture 1,077 / 264, N-MNIST
    60,000 / 10,000, N-Caltech101 8,709, DVS-Lip 14,896 / 4,975, HARDVS its label files' counts), CIFAR must pass
    torchvision's checksums, ImageNet have all 1000 classes and a graph its published node count. Off: the expected
    layout with at least one sample per split suffices (fakes, subsets)."""
    if verify is not None:
        return bool(verify)
    fake = folder is not None and is_fake(folder)
    return env_flag("FSNN_DATA_VERIFY", not fake)


def resolve_download(download: bool | None) -> bool:
    """``download`` if given, else ``$FSNN_DATA_DOWNLOAD`` (default on): whether to try an automatic download
    where the upstream library can do one."""
    return env_flag("FSNN_DATA_DOWNLOAD", True) if download is None else bool(download)


def abspath(path: Path | str) -> Path:
    """Absolute path without resolving symlinks (error messages show the directory the user passed)."""
    return Path(os.path.abspath(os.path.expanduser(str(path))))
