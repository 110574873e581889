"""Where the reports write, and what the page links to: an output folder is refused when a link leads it out of
the results folder it belongs to (the reports would overwrite and remove files there), a manifest names only files
of its own folder, and a relative link on the page is percent-encoded, so that no folder name makes it a scheme
(``javascript:``), a query or a fragment."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fsnn.atomic import RunFileError
from fsnn.report.collect import inside, printable, read_record
from fsnn.runs.records import is_folder_name

#: the characters a path segment of a URL holds as they are (RFC 3986's sub-delimiters and ``@``), which run folder
#: names use (``+``, ``=``, ``,``); ``:`` is not one of them: in a relative link's first segment it makes a scheme
URL_SAFE = "!$&'()*+,;=@"


def _within(folder: Path, root: Path) -> bool:
    """Whether ``folder`` lies in ``root`` as written (``..`` resolved, links not followed)."""
    folder, root = os.path.abspath(folder), os.path.abspath(root)
    return os.path.commonpath([folder, root]) == root


def confined(folder: str | Path, results_dir: str | Path) -> Path:
    """``folder``, a folder of the reports under ``results_dir`` (its tables, figures, page), after checking that no
    link leads it out of the results folder; :class:`RunFileError` naming the folder where one does. A folder given
    outside the results folder is the caller's own choice and taken as it is."""
    folder = Path(folder)
    if _within(folder, Path(results_dir)) and not inside(folder, results_dir):
        raise RunFileError(
            f"{printable(folder)}: a link leads it to {printable(os.path.realpath(folder))}, outside the results "
            f"folder {printable(results_dir)}; a report's folder stays inside it (the reports overwrite and remove "
            "files in their folders): remove the link, or name a folder outside the results folder (--out, --figures)"
        )
    return folder


def output_folder(folder: str | Path, results_dir: str | Path) -> Path:
    """``folder`` made (with its parents) to write a report into, once :func:`confined`; :class:`RunFileError`
    naming it when it cannot be (a file in its place, no permission, a read-only file system)."""
    folder = confined(folder, results_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        what = "a file is in its place" if folder.exists() and not folder.is_dir() else error.strerror or str(error)
        raise RunFileError(f"cannot write {printable(folder)}: {what}") from error
    return folder


def listed_files(folder: str | Path, manifest: str) -> tuple[list[str], dict[str, Any]]:
    """``(names, record)`` of the manifest ``<folder>/<manifest>`` a report wrote (``{"written": [names], ...}``):
    only the names of a plain file in ``folder`` (no ``/``, not ``..``: a name that is a path is never followed),
    and the manifest as read; ``([], {})`` when it is missing, unreadable or a link out of ``folder``."""
    path = Path(folder) / manifest
    try:
        if not inside(path, folder):
            return [], {}
        record = read_record(path)
    except (OSError, ValueError):
        return [], {}
    written = record.get("written")
    names = (
        [name for name in written if isinstance(name, str) and is_folder_name(name)]
        if isinstance(written, list)
        else []
    )
    return names, record


def relative_url(path: str | Path) -> str:
    """A relative link to ``path`` (relative to the page) as the page writes it: each segment percent-encoded from
    its bytes (:data:`URL_SAFE` kept), so that a folder named ``javascript:...`` links to that folder, a ``#`` or
    ``?`` stays part of the name, and a name that is not UTF-8 still finds its folder."""
    return "/".join(quote(os.fsencode(part), safe=URL_SAFE) for part in Path(path).as_posix().split("/"))
