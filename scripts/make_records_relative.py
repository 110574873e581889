#!/usr/bin/env python
"""Rewrite the records of runs whose config names their run folder by an absolute path, as records written before
fsnn recorded the csv logger's folder relative to the run do: every ``metrics.json`` under ``RESULTS`` whose config
changes under :func:`fsnn.suite.runfiles.relative_to_run` is rewritten with it, and keeps a note of it under
``rewritten``; nothing else of a record changes. A record already relative is left alone, so a second pass rewrites
nothing::

    .venv/bin/python scripts/make_records_relative.py results
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


def make_records_relative(results_dir: str | Path) -> list[Path]:
    """Rewrite every ``metrics.json`` under ``results_dir`` whose config names its run folder by an absolute path;
    returns the files rewritten."""
    done = []
    for path in sorted(Path(results_dir).rglob("metrics.json")):
        record = json.loads(path.read_text())
        config = relative_to_run(record.get("config"), path.parent)
        if config != record.get("config"):
            record["config"] = config
            record.setdefault("rewritten", []).append(NOTE)
            write_json_atomic(path, record)
            done.append(path)
    return done


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="the results folder whose records are rewritten")
    args = parser.parse_args(argv)
    for path in make_records_relative(args.results):
        print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
