#!/usr/bin/env python
"""Try, as a new user would, bad values and damaged files (a typo, a truncated checkpoint, a rotten cache) against
a checkout of fsnn, and count what happens:
``python scripts/probe_runs.py [--root CHECKOUT] [--out DIR] [--only CATEGORY ...]``.

Every case runs ``train.py`` / ``evaluate.py`` (with ``study=energy``) of ``--root`` (default: this checkout) in a
fresh folder on tiny fixture data, and gets one outcome:

- ``clear``: one ``fsnn: error:`` line (a command's own: ``fsnn-fixtures: error:``) that names the key or file, no
  traceback (or, for a damaged cache, a message naming the file and a correct result; for a behaviour such as the
  run-folder lock, the safe behaviour);
- ``traceback``: a Python traceback on the console;
- ``unclear``: an error without traceback that does not name the key or file;
- ``silent``: a bad value accepted, damage not noticed, a payload run, work redone or differing.

``lost`` counts the cases where a complete ``metrics.json`` written before, or a user's real dataset, was overwritten
or removed, ``security``
those where a file outside the folder it belongs in was written, replaced, removed or read (a string of a config or
a record that became a path). Further categories: ``confined`` (strings that become paths), ``folders`` (one
configuration, one folder), ``signals`` (every command on a signal), ``library`` (learned parameters, engines'
autograd, impossible metrics), ``report`` (``fsnn-report`` on a damaged or hostile results tree, a full disk, a
read-only or linked-out output folder), ``environment`` (variables set to nothing), ``mismatch`` (data that no
longer matches a run, corrupt graph files), ``inputs`` (caches and inputs that lie: processed caches holding pickles, foreign or
stale ones, NaN features, a truncated compiled extension, the Poisson sampler in a run's record), ``cache keys`` (a
raw recording changed after its frames were cached, a cache marker edited), ``labels`` (class folders missing or not
the release's), ``decisions`` (copied runs in a table cell, runs of several commits, claims on samples that cannot
carry a decision), ``handlers`` (SIGUSR1 / SIGUSR2 to a run and its loader workers, a refused resume), ``reads``
(damaged saved configs, records of runs that never finished, unwritable fixture folders, a linked frame cache, events
outside the sensor), ``writers`` (``fsnn-fixtures`` over real data or another fake, on a full disk; the fakes' runs
recorded as fake), ``schema`` (keys no config of their group has), ``parameters``
(the neuron's parameters set outside their domain), ``autograd`` (second derivatives and compilation: a correct
result or a clear refusal) and ``registries`` (names that become paths, entries of the wrong kind); these last three
are Python snippets (:data:`SNIPPETS`), whose fast ones ``tests/suite/test_probe_snippets.py`` runs. ``--fast`` keeps, in
those of :data:`FAST`, the cases that train nothing: what the test suite runs. Prints one table per category and
the totals, and writes them to ``<out>/probe.json`` and ``<out>/probe.md``. This is a probe,
not a test: it records what a checkout does, including the failures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

# the probe's cases are in scripts/probes/, and they damage files with the tests' helper (tests/zipdata.py)
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "tests")]
from probes.commands import CommandCases  # noqa: E402
from probes.common import BAD_VALUES, HERE, OUTCOMES  # noqa: E402 - found through the path above
from probes.confined import ConfinedCases  # noqa: E402
from probes.event_data import EventDataCases  # noqa: E402
from probes.inputs import InputCases  # noqa: E402
from probes.library import LibraryCases  # noqa: E402
from probes.lifecycle import LifecycleCases  # noqa: E402
from probes.report import ReportCases  # noqa: E402
from probes.snippets import SNIPPETS, run_snippets  # noqa: E402, F401 - run_snippets: the snippet tests call it here


class Probe(CommandCases, LifecycleCases, ConfinedCases, LibraryCases, ReportCases, InputCases, EventDataCases):
    """Every category's cases on one checkout, its rows in :attr:`rows`."""


def _snippets(category: str):
    def cases(self) -> None:
        self.snippets(category, [(case, code, word) for case, code, word, _fast in SNIPPETS[category]])

    cases.__doc__ = f"The library's {category} cases (:data:`SNIPPETS`), each a Python snippet in a fresh process."
    return cases


CATEGORIES = {
    "bad value": Probe.bad_values,
    "multirun": Probe.multirun,
    "checkpoint": Probe.checkpoints,
    "cache": Probe.caches,
    "security": Probe.security,
    "runs": Probe.runs,
    "values": Probe.values,
    "lifecycle": Probe.lifecycle,
    "confined": Probe.confined,
    "folders": Probe.folders,
    "signals": Probe.signals,
    "library": Probe.library,
    "report": Probe.report,
    "environment": Probe.environment,
    "mismatch": Probe.mismatch,
    "inputs": Probe.inputs,
    "cache keys": Probe.cache_keys,
    "labels": Probe.labels,
    "decisions": Probe.decisions,
    "handlers": Probe.handlers,
    "reads": Probe.reads,
    "writers": Probe.writers,
    "schema": Probe.schema,
    "parameters": _snippets("parameters"),
    "autograd": _snippets("autograd"),
    "registries": _snippets("registries"),
}
#: the categories whose cases (with ``--fast``) run in seconds each, without training: the test suite runs them
FAST = ("environment", "mismatch", "inputs", "folders", "report", "labels", "decisions", "reads")


def summary(rows: list[dict]) -> str:
    lines = [
        "| category | cases | clear | traceback | unclear | silent | data lost | security |",
        "|---|---|---|---|---|---|---|---|",
    ]
    groups = {}
    for row in rows:
        groups.setdefault(row["category"], []).append(row)
    for name, group in [*groups.items(), ("all", rows)]:
        counts = Counter(r["outcome"] for r in group)
        lost, security = sum(r["lost"] for r in group), sum(r.get("security", False) for r in group)
        lines.append(
            f"| {name} | {len(group)} | " + " | ".join(str(counts[o]) for o in OUTCOMES) + f" | {lost} | {security} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=HERE, help="the fsnn checkout to probe (default: this one)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "probe", help="where probe.json/md go")
    parser.add_argument("--only", nargs="+", choices=sorted(CATEGORIES), help="run only these categories")
    parser.add_argument(
        "--fast",
        action="store_true",
        help=f"in {', '.join(FAST)}, only the cases that train nothing (what the test suite runs)",
    )
    parser.add_argument(
        "--values",
        nargs="+",
        metavar="OVERRIDE",
        help="try only these of the bad values (as listed in BAD_VALUES), e.g. on a busy machine",
    )
    args = parser.parse_args(argv)
    root = args.root.resolve()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fsnn-probe-") as tmp:
        work, data = Path(tmp) / "runs", Path(tmp) / "data"
        work.mkdir()
        subprocess.run(
            [sys.executable, "-m", "fsnn.data.fakes.make_fixtures", str(data)],
            check=True,
            env={**os.environ, "PYTHONPATH": str(root)},
            stdout=subprocess.DEVNULL,
        )
        values = BAD_VALUES if args.values is None else [v for v in BAD_VALUES if v[0] in args.values]
        if args.values is not None and len(values) != len(args.values):
            unknown = sorted(set(args.values) - {v[0] for v in values})
            parser.error(f"--values: expected overrides listed in BAD_VALUES, got {unknown}")
        args.out.mkdir(parents=True, exist_ok=True)
        (journal := args.out / "probe.jsonl").write_text("")
        probe = Probe(root, work, data, values, journal, fast=args.fast)
        for name, method in CATEGORIES.items():
            if args.only is None or name in args.only:
                print(f"{name}:", flush=True)
                method(probe)
    table = summary(probe.rows)
    print(table)
    print(f"{len(probe.rows)} cases in {time.perf_counter() - start:.0f} s")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "probe.json").write_text(json.dumps({"root": str(root), "rows": probe.rows}, indent=2))
    (args.out / "probe.md").write_text(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
