"""The probe's fast cases (``scripts/probe_runs.py --fast``): hostile environments, data that no longer matches a
run, caches and inputs that lie, and the command of a committed run, tried as a user would on this checkout, each
ending in a clear message or a correct result."""

from __future__ import annotations

import json
import sys

import pytest
from helpers import ROOT, run_app

sys.path.insert(0, str(ROOT / "scripts"))
from probe_runs import FAST  # noqa: E402 - the probe is a script, not a package

# cases that each load a graph, build a model or run fsnn-report in processes of their own: over half a minute
# together
SLOW = ("mismatch", "inputs", "decisions", "reads")


@pytest.mark.parametrize("category", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW else c for c in FAST])
def test_the_probe_s_fast_cases_are_clear(tmp_path, category):
    proc = run_app(
        "scripts/probe_runs.py",
        "--fast",
        "--only",
        category,
        "--out",
        str(tmp_path / "out"),
        cwd=tmp_path,
        timeout=1500,
        env={"OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads((tmp_path / "out" / "probe.json").read_text())["rows"]
    assert rows and all(row["category"] == category for row in rows)
    failed = [row for row in rows if row["outcome"] != "clear" or row["lost"] or row["security"]]
    assert not failed, failed
