"""Run folders and their records, as both the suite (which writes them) and the reports (which read them) see
them: where they live (the results root), what may name one (the option types of ``task_name``, ``run_name`` and
``paths.results_dir``), how a folder name fits the file system, and how a ``metrics.json`` is read."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated

from fsnn.atomic import RunFileError
from fsnn.checks import Check
from fsnn.runs.configs import env_setting

#: the results folder of a checkout: the runs behind its tables (their records in git), the tables, figures and page
#: made from them; a run of one's own goes to ``paths.results_dir`` (``./runs``) instead
EVIDENCE = "results"


def results_root() -> Path:
    """The results folder the reports read by default: ``$FSNN_RESULTS`` where it is set and not blank (then runs are
    written there too, as ``paths.results_dir``), else :data:`EVIDENCE` of the current directory."""
    return Path(env_setting("FSNN_RESULTS", EVIDENCE)).expanduser()


#: the unit of the metrics (accuracy, AUC) in ``metrics.json``, ``eval.json`` and ``robustness.json``, recorded in
#: each as ``metric_unit``; what a person reads (console, tables, report) is in percent
#: (:func:`fsnn.runs.formatting.format_percent`)
METRIC_UNIT = "fraction"


#: the longest name of one file or folder that common file systems take (ext4, xfs, btrfs, APFS, NTFS), in bytes
NAME_MAX = 255


def is_folder_name(value: str, *, slash: bool = False, limit: int | None = 255) -> bool:
    """Whether ``value`` names one folder inside another and no other: not empty, ``.`` or ``..``, no control
    character, no ``/`` (unless ``slash``: a name in which fsnn turns it into ``_``), at most ``limit`` bytes."""
    return (
        value not in ("", ".", "..")
        and (slash or "/" not in value)
        and value.isprintable()
        and (limit is None or len(value.encode()) <= limit)
    )


#: a value that becomes one folder's name (``task_name``: ``results/<task_name>/``), which must stay in its root
FolderName = Annotated[
    str, Check("a folder name (not empty, . or .., without / or control characters, at most 255 bytes)", is_folder_name)
]
#: a folder given by its path (``paths.results_dir``): a blank one would be the file system's root once a name is
#: joined to it (``'' + '/train'``)
FolderPath = Annotated[str, Check("a folder (a path, not blank)", lambda value: value.strip() != "")]
#: ``run_name``: as :data:`FolderName`, but a ``/`` becomes ``_`` and a long name is shortened with a hash
RunName = Annotated[
    str,
    Check(
        "null or a folder name (not empty, . or .., without control characters)",
        lambda value: is_folder_name(value, slash=True, limit=None),
    ),
]


def fitting_name(name: str, limit: int = NAME_MAX) -> str:
    """``name`` if its UTF-8 fits in ``limit`` bytes, else its readable start (whole characters) + ``-`` + the first
    12 hex digits of its SHA-256: a name too long for a folder (many overrides, a long ``run_name``) becomes one that
    fits, and the same name always becomes the same folder, so that rerunning a command finds its run."""
    encoded = name.encode()
    if len(encoded) <= limit:
        return name
    digest = hashlib.sha256(encoded).hexdigest()[:12]
    return f"{encoded[: limit - len(digest) - 1].decode(errors='ignore')}-{digest}"


def read_run_record(run_dir: Path) -> dict | None:
    """The run's ``metrics.json`` as a dict, or ``None`` when there is none or it is unreadable (a run never
    finished writes it again). :class:`RunFileError` when something other than a file is in its place."""
    path = Path(run_dir) / "metrics.json"
    if path.exists() and not path.is_file():
        kind = "folder" if path.is_dir() else "special file"
        raise RunFileError(f"{path}: expected the run's record, a file, got a {kind}; move it away and rerun")
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


#: the folder ``force=true`` moves an earlier generation of a run into: ``previous.1`` (the oldest), ``previous.2``...
GENERATION = re.compile(r"previous\.(\d+)")


def is_earlier_generation(path: Path) -> bool:
    """Whether ``path`` (a file such as ``metrics.json``) belongs to an earlier generation of a run set aside by
    ``force=true`` (:func:`set_aside`), not to a run of its own."""
    return GENERATION.fullmatch(Path(path).parent.name) is not None
