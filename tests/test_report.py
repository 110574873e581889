"""The reproduction report page (fsnn.report, scripts/report.py), rendered in a real headless browser: Debian's
chromium driven by Playwright (which then needs no browser download of its own)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, run_app
from fsnn import report, tables

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not found on PATH (Debian: apt-get install chromium; .ci/run installs it)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
PAGE_FACTS = """() => ({
    tables: [...document.querySelectorAll('section.paper-table')].map(s => s.id),
    images: [...document.images].map(i => ({alt: i.alt, ok: i.complete && i.naturalWidth > 0})),
    runs: document.querySelectorAll('table.runs tbody tr').length,
    off: [...document.querySelectorAll('td.cell.off')].map(td => td.innerText.replace(/\\s+/g, ' ').trim()),
    links: [...document.querySelectorAll('table.runs a')].map(a => a.getAttribute('href')),
})"""


def in_browser(page: Path, profile: Path, screenshot: Path | None = None) -> dict:
    """Open ``page`` in headless chromium with a fresh profile: the page's tables, images, highlighted cells and
    run links, and every console error or uncaught exception (``errors``); optionally a full-page screenshot."""
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS, viewport={"width": 1400, "height": 900})
        try:
            tab = context.new_page()
            tab.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            tab.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
            tab.goto(page.as_uri(), wait_until="load")
            facts = tab.evaluate(PAGE_FACTS)
            if screenshot is not None:
                tab.screenshot(path=str(screenshot), full_page=True)
        finally:
            context.close()
    return {**facts, "errors": errors}


def _record(task, run, dataset, backbone, neuron, seed, acc, recipe="matched", status="complete"):
    record = {"status": status, "task": task, "run": run, "seed": seed, "recipe": recipe, "metric": "acc",
              "overrides": [f"neuron={neuron}", f"seed={seed}"], "device": "cpu (x86_64, 1 threads)",
              "wall_time_s": 12.5, "versions": {"fsnn_commit": "0123456789abcdef"},
              "config": {"dataset": {"name": dataset}, "backbone": {"name": backbone}, "neuron": {"name": neuron}}}
    if status == "complete":
        record["test_acc"] = acc
    else:
        record["error"] = "RuntimeError: boom"
    return record


@pytest.fixture
def results(tmp_path) -> Path:
    root = tmp_path / "results"
    runs = [_record("table2_node_classification", f"flif{s}", "cora", "sgcn", "flif", s, acc)  # paper 88.08 ± 0.58
            for s, acc in enumerate([0.860, 0.862])]
    runs += [_record("table2_node_classification", f"sj{s}", "cora", "sgcn", "sj_lif", s, acc)  # paper 81.81 ± 0.69
             for s, acc in enumerate([0.815, 0.820])]
    runs += [_record("table2_node_classification", "authors0", "cora", "sgcn", "flif", 0, 0.87, recipe="authors"),
             _record("table2_node_classification", "lif0", "cora", "sgcn", "lif", 0, None, status="failed")]
    for run in runs:
        path = root / run["task"] / run["run"] / "metrics.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(run))
    shutil.copytree(ROOT / "results" / "figures", root / "figures", ignore=shutil.ignore_patterns("*.pdf"))
    return root


def test_highlight_rule():
    cell = {"mean": 86.1, "paper_mean": 88.08, "paper_std": 0.58}
    assert report.off_the_paper(cell)  # 3.4 paper std below
    assert not report.off_the_paper({**cell, "mean": 87.0})  # 1.9 std
    assert not report.off_the_paper({**cell, "paper_std": None})  # the paper prints no std: nothing to compare
    assert not report.off_the_paper({**cell, "mean": None})


@needs_chromium
def test_report_page_in_a_browser(results, tmp_path):
    page = report.write_report(results)
    assert page == results / "report" / "index.html"
    facts = in_browser(page, tmp_path / "profile", tmp_path / "page.png")
    assert facts["errors"] == []
    found = tables.scan_runs(results)
    want = [f"{spec['id']}{'' if recipe == 'matched' else '_' + recipe}" for spec in tables.load_spec()
            for recipe in tables.table_recipes(spec, found.complete + found.failed)]
    assert facts["tables"] == want and "node_classification_authors" in want
    pngs = sorted(p.stem for p in (results / "figures").glob("*.png"))
    assert [i["alt"] for i in facts["images"]] == pngs and all(i["ok"] for i in facts["images"])
    # SGCN f-LIF on Cora is 3.3 paper std off; SpikingJelly's 0.6 std is not highlighted
    assert facts["off"] == ["86.10 ± 0.14 (n=2) paper 88.08 ± 0.58 Δ -1.98 (-3.4 σ)"]
    assert facts["runs"] == 6 and all((page.parent / href).is_file() for href in facts["links"])
    assert (tmp_path / "page.png").stat().st_size > 10_000


@needs_chromium
def test_the_browser_check_can_fail(tmp_path):
    broken = tmp_path / "broken.html"
    broken.write_text('<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body>'
                      '<img alt="gone" src="missing.png"><script>undefinedFunction()</script></body></html>')
    facts = in_browser(broken, tmp_path / "profile")
    assert facts["images"] == [{"alt": "gone", "ok": False}]
    assert any("undefinedFunction" in error for error in facts["errors"])


@needs_chromium
def test_repository_report_in_a_browser(tmp_path):
    """``scripts/report.py`` on this checkout's own results (the measured Cora runs, the figures), as ``make report``
    runs it; the screenshot is kept beside the page, ``results/report/screenshot.png``."""
    proc = run_app("scripts/report.py", cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = ROOT / "results" / "report" / "index.html"
    facts = in_browser(page, tmp_path / "profile", page.with_name("screenshot.png"))
    assert facts["errors"] == []
    assert len(facts["tables"]) >= len(tables.load_spec())
    assert len(facts["images"]) == len(list((ROOT / "results" / "figures").glob("*.png")))
    assert all(i["ok"] for i in facts["images"])
    assert all((page.parent / href).is_file() for href in facts["links"])
