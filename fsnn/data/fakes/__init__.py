"""Fake datasets, in the on-disk formats of the real ones, that say they are fakes: :mod:`.fixtures` (tiny copies
of every downloadable dataset, with :mod:`.graph_fixtures` for the graphs), :mod:`.scaled_fixtures` (fakes at a
fraction of the published size, with :mod:`.scaled_events` and :mod:`.scaled_images`) and :mod:`.make_fixtures`, the
``fsnn-fixtures DIR`` command. Each writes a fake dataset's folder through :func:`write_fakes`, which

* refuses a folder that holds anything but an earlier fake (a real dataset carries no marker), before writing
  anything;
* writes the new fake into a hidden staging folder beside it, then swaps it in whole, so a full disk or an
  interruption leaves the previous folder as it was and no partial fake;
* replaces an earlier fake whole (a fake of another scale leaves none of its files behind);
* puts :data:`FAKE_MARKER` in the folder, last.

The loaders read a folder that carries the marker without the completeness checks a fake cannot pass (published file
counts, md5 sums, node counts: :func:`fsnn.data.environment.resolve_verify`), and a run on it records ``"fake_data":
true`` in its ``metrics.json``.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from fsnn.atomic import RunFileError, write_json_atomic

#: the file that makes a dataset folder a fake: JSON ``{"fake": true, "dataset": name, "scale": null or a fraction,
#: "files": how many files the fake holds}``, written last
FAKE_MARKER = "FSNN_FAKE_DATA.json"


class NotAFakeError(ValueError):
    """A folder a fake would be written into holds something that is not an earlier fake (a real dataset, a file)."""


def fake_marker(folder: str | Path) -> dict | None:
    """The marker of the fake dataset in ``folder``, or ``None`` when ``folder`` is not one (no marker, or one that is
    unreadable or does not say ``"fake": true``: such a folder is treated as real data)."""
    try:
        marker = json.loads((Path(folder) / FAKE_MARKER).read_text())
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) and marker.get("fake") is True else None


def is_fake(folder: str | Path) -> bool:
    """Whether ``folder`` holds a fake dataset written by ``fsnn-fixtures``."""
    return fake_marker(folder) is not None


def check_replaceable(folder: Path) -> None:
    """Raise :class:`NotAFakeError` unless a fake may be written at ``folder``: absent, an empty folder or an earlier
    fake (a link is refused: what it points to is not the writer's)."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        what = "a link" if folder.is_symlink() else "a file"
        raise NotAFakeError(
            f"{folder} is {what}; a fake dataset is written only as a new folder or over an earlier fake"
        )
    if folder.is_dir() and any(folder.iterdir()) and not is_fake(folder):
        raise NotAFakeError(
            f"{folder} holds files that fsnn-fixtures did not write (no {FAKE_MARKER}), a real dataset perhaps: a fake "
            "is never written over it; write the fakes into another folder"
        )


def write_fakes(
    root: str | Path, folders: dict[str, str], write: Callable[[Path, str], object], scale: float | None = None
) -> dict[str, Path]:
    """Write the fake datasets ``folders`` (``{name: its folder under root}``) under ``root``; ``write(staging root,
    name)`` writes the files of ``name`` under ``<staging root>/<folder>``. Returns ``{name: root / folder}``.

    Every folder is checked first (:func:`check_replaceable`): nothing is written if one is refused. Each fake is
    then written in a staging folder in ``root``, marked (:data:`FAKE_MARKER`, with ``scale``) and moved in place of
    the earlier one; a write that fails (a full disk, no permission) removes the staging folder and raises
    :class:`fsnn.atomic.RunFileError` naming the file, with the fakes written before it in place."""
    root = Path(root)
    for folder in folders.values():
        check_replaceable(root / folder)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RunFileError(f"cannot make {root}: {error.strerror or error}") from error
    written = {}
    for name, folder in folders.items():
        target = root / folder
        try:
            staging = Path(tempfile.mkdtemp(prefix=f".{folder}.fsnn-fixtures-", dir=root))
        except OSError as error:
            raise RunFileError(f"cannot write in {root}: {error.strerror or error}") from error
        try:
            write(staging, name)
            files = sum(1 for path in (staging / folder).rglob("*") if path.is_file())
            marker = {"fake": True, "dataset": name, "scale": scale, "files": files}
            write_json_atomic(staging / folder / FAKE_MARKER, marker)
            if target.exists():  # an earlier fake (checked above), set aside within the staging folder
                target.rename(staging / ".replaced")
            (staging / folder).rename(target)
        except OSError as error:
            file = Path(error.filename) if error.filename else staging / folder
            shown = target / file.relative_to(staging / folder) if file.is_relative_to(staging / folder) else file
            raise RunFileError(
                f"cannot write {shown}: {error.strerror or error}; nothing of the fake {name} was kept"
                f"{f' ({target} is as it was)' if target.exists() else ''}"
            ) from error
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        written[name] = target
    return written
