"""The probe's library snippets (``scripts/probe_runs.py``: the neuron's parameters outside their domain, second
derivatives and compilation, registry names and entries) run against this checkout: every fast one gets a correct
result or a clear refusal naming what it refuses."""

from __future__ import annotations

import importlib.util

import pytest
from helpers import ROOT

spec = importlib.util.spec_from_file_location("probe_runs", ROOT / "scripts" / "probe_runs.py")
probe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(probe)
CATEGORIES = ("parameters", "autograd", "registries")


def test_the_probe_runs_every_snippet_category():
    assert set(CATEGORIES) <= set(probe.CATEGORIES) and set(probe.SNIPPETS) == set(CATEGORIES)


@pytest.mark.parametrize("category", CATEGORIES)
def test_every_fast_snippet_is_clear(category):
    cases = [(case, code, word) for case, code, word, fast in probe.SNIPPETS[category] if fast]
    assert cases
    results = probe.run_snippets(ROOT, [(code, word) for _, code, word in cases])  # one process for the category
    failed = [
        f"{case}: {outcome} ({note})" for (case, _, _), (outcome, note) in zip(cases, results) if outcome != "clear"
    ]
    assert not failed, "\n".join(failed)


def test_a_snippet_tells_silent_unclear_and_traceback_apart():
    results = probe.run_snippets(
        ROOT,
        [
            ("raise AssertionError('accepted')", "x"),
            ("raise ValueError('alpha must be')", "tau"),
            ("raise KeyError('k')", "k"),
            ("raise ValueError('tau must be in (0, 1]')", "tau"),
            ("x = 1", "x"),
        ],
    )
    assert [outcome for outcome, _ in results] == ["silent", "unclear", "traceback", "clear", "clear"]
