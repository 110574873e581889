"""The dataset layer's errors: :class:`DatasetMissingError` (the data is not there) and :class:`DatasetDamagedError`
(it is there but wrong), with the messages every loader builds (:func:`dataset_missing`, :func:`missing_in_folder`)
and the file count that finds missing data (:func:`count_files`)."""

from __future__ import annotations

from itertools import islice
from pathlib import Path


class DatasetMissingError(FileNotFoundError):
    """A dataset is absent or incomplete on disk. ``str(err)`` is one message for the user: the dataset name,
    the exact directory expected, the layout expected there, and where to get the data.

    Attributes: ``dataset`` (registry name), ``directory`` (the absolute path checked).
    """

    def __init__(self, message: str, *, dataset: str = "", directory: Path | str = ""):
        super().__init__(message)
        self.dataset = dataset
        self.directory = str(directory)

    def __str__(self) -> str:  # FileNotFoundError would otherwise format errno/filename
        return self.args[0]


class DatasetDamagedError(ValueError):
    """A dataset's files are there but do not hold what they should (a truncated file, values out of range, another
    dataset's files). ``str(err)`` is one line naming the file, or the quantity, and what to do.

    Attributes: ``dataset`` (registry name), ``path`` (the file or files named, ``""`` when none)."""

    def __init__(self, message: str, *, dataset: str = "", path: Path | str = ""):
        super().__init__(message)
        self.dataset = dataset
        self.path = str(path)


def dataset_missing(
    name: str, directory: Path, problem: str, layout: list[str], get_it: str, cause: BaseException | None = None
) -> DatasetMissingError:
    """The :class:`DatasetMissingError` of every loader: what is wrong (with the library's error, ``cause``), where,
    which files are expected, how to get them."""
    if cause is not None:
        problem = f"{problem} ({type(cause).__name__}: {cause})"
    lines = [f"Dataset {name!r} is missing or incomplete in {directory}: {problem}.", "Expected layout:"]
    lines += [f"  {line}" for line in layout]
    lines.append(f"How to get it: {get_it}")
    return DatasetMissingError("\n".join(lines), dataset=name, directory=directory)


def missing_in_folder(name: str, folder: Path, problem: str, layout, get_it: str, library: str) -> DatasetMissingError:
    """:func:`dataset_missing` for a dataset that ``library`` reads from ``folder``: each line of ``layout`` is a
    path relative to ``folder`` unless it places ``{dir}`` itself, ``{dir}`` in ``get_it`` is ``folder``, and the
    layout ends naming the library (the tonic and HarDVS loaders' error)."""
    lines = [line.format(dir=folder) if "{dir}" in line else f"{folder}/{line}" for line in layout]
    return dataset_missing(name, folder, problem, lines + [f"(read by {library})"], get_it.format(dir=folder))


def count_files(folder: Path, ext: str, limit: int | None = None) -> int:
    """Number of ``*ext`` files under ``folder`` (recursively), counting no further than ``limit`` when given;
    ``0`` when ``folder`` is not a directory (the layout checks of the event loaders)."""
    if not folder.is_dir():
        return 0
    return sum(1 for _ in islice(folder.rglob(f"*{ext}"), limit))
