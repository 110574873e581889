#!/usr/bin/env python
"""Rewrite the records of runs whose config names a place on the machine that ran them by an absolute path:

* the run folder, as records written before fsnn recorded the csv logger's folder relative to the run do: every
  config that changes under :func:`fsnn.suite.runfiles.relative_to_run` is rewritten with it;
* with ``--path KEY=DIR``, ``paths.KEY`` given on the command line as an absolute path: it becomes ``DIR``, the
  checkout-relative folder of the same command run from a checkout (``--path data_dir=data``), in the config and in
  the recorded overrides.

A rewritten record keeps a note of it under ``rewritten``; nothing else of a record changes. A record already
relative is left alone, so a second pass rewrites nothing::

    .venv/bin/python scripts/make_records_relative.py results [--path data_dir=data --path results_dir=runs]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fsnn.atomic import write_json_atomic  # noqa: E402 - the checkout above, not an installed fsnn
from fsnn.suite.runfiles import relative_to_run  # noqa: E402

NOTE = "absolute paths of the run folder in config made relative to it (scripts/make_records_relative.py)"


def make_records_relative(results_dir: str | Path, paths: dict[str, str] | None = None) -> list[Path]:
    """Rewrite every ``metrics.json`` under ``results_dir`` whose config names its run folder, or one of ``paths``'
    keys of ``config.paths``, by an absolute path (module docstring); returns the files rewritten."""
    done = []
    for path in sorted(Path(results_dir).rglob("metrics.json")):
        record = json.loads(path.read_text())
        notes = []
        config = relative_to_run(record.get("config"), path.parent)
        if config != record.get("config"):
            notes.append(NOTE)
        given = (config or {}).get("paths") or {}
        for key, folder in (paths or {}).items():
            if isinstance(given.get(key), str) and Path(given[key]).is_absolute():
                notes.append(f"paths.{key}, given as an absolute path of the machine that ran it, recorded as {folder}")
                given[key] = folder
                record["overrides"] = [
                    f"paths.{key}={folder}" if item.startswith(f"paths.{key}=") else item
                    for item in record.get("overrides") or []
                ]
        if notes:
            record["config"] = config
            record.setdefault("rewritten", []).extend(notes)
            write_json_atomic(path, record)
            done.append(path)
    return done


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="the results folder whose records are rewritten")
    parser.add_argument(
        "--path",
        action="append",
        default=[],
        metavar="KEY=DIR",
        help="record an absolute paths.KEY as the checkout-relative DIR (repeatable)",
    )
    args = parser.parse_args(argv)
    paths = dict(item.split("=", 1) for item in args.path)
    for path in make_records_relative(args.results, paths):
        print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
