"""The documentation site: its mathematics rendered offline in a real browser (Debian's chromium driven by Playwright,
as in test_report.py), every argument of the public API documented, and the tutorial's code run as written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from test_report import CHROMIUM, FLAGS, needs_chromium

#: where the browser test keeps its screenshot (ignored by git, beside the report page's)
SCREENSHOTS = ROOT / "results" / "screenshots"
MATH_FACTS = """() => ({
    formulas: document.querySelectorAll('.arithmatex').length,
    rendered: document.querySelectorAll('.arithmatex .katex').length,
    display: document.querySelectorAll('.arithmatex .katex-display').length,
    katexErrors: [...document.querySelectorAll('.katex-error')].map(e => e.getAttribute('title') || e.textContent),
    unrendered: [...document.querySelectorAll('.arithmatex')].filter(e => !e.querySelector('.katex'))
                                                              .map(e => e.textContent.slice(0, 80)),
    fontsReady: document.fonts.status,
    mathFonts: [...document.fonts].filter(f => f.family.includes('KaTeX') && f.status === 'loaded').length,
})"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site as ``make docs`` builds it (``mkdocs build --strict``), in a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=ROOT,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def math_in_browser(page: Path, profile: Path, screenshot: Path | None = None) -> dict:
    """Open ``page`` in headless chromium (1280 x 800): its formulas (:data:`MATH_FACTS`), every request that left
    ``file://`` (``remote``) and every console error or uncaught exception (``errors``); with ``screenshot``, a
    picture of the page's top."""
    from playwright.sync_api import sync_playwright

    remote: list[str] = []
    errors: list[str] = []
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            tab = context.new_page()
            tab.set_viewport_size({"width": 1280, "height": 800})
            tab.on("request", lambda request: None if request.url.startswith(("file:", "data:", "blob:"))
                   else remote.append(request.url))
            tab.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            tab.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
            tab.goto(page.as_uri(), wait_until="load")
            tab.wait_for_function("document.querySelectorAll('.arithmatex .katex').length > 0", timeout=15_000)
            tab.evaluate("document.fonts.ready.then(() => true)")
            facts = tab.evaluate(MATH_FACTS)
            if screenshot is not None:
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                tab.screenshot(path=str(screenshot))
            tab.close()
        finally:
            context.close()
    return {**facts, "remote": remote, "errors": errors}


@needs_chromium
def test_caputo_derivative_renders_offline(site, tmp_path):
    """The concepts page's Caputo derivative and schemes are typeset by the vendored KaTeX with its own fonts: every
    formula rendered, none a KaTeX error, no request to the network (no CDN); the screenshot is kept in
    ``results/screenshots/docs-caputo.png``."""
    shot = SCREENSHOTS / "docs-caputo.png"
    facts = math_in_browser(site / "concepts" / "fractional-neuron.html", tmp_path / "profile", shot)
    assert facts["remote"] == []
    assert facts["errors"] == facts["katexErrors"] == facts["unrendered"] == []
    assert facts["rendered"] == facts["formulas"] >= 20 and facts["display"] >= 5
    assert facts["mathFonts"] > 0  # KaTeX's fonts came from the site, not a fallback
    assert shot.stat().st_size > 10_000


@needs_chromium
def test_docstring_equations_render(site, tmp_path):
    """The API page of the dynamics renders the equations of :mod:`fsnn.dynamics` and :mod:`fsnn.history` from their
    docstrings, offline too."""
    facts = math_in_browser(site / "api" / "dynamics.html", tmp_path / "profile")
    assert facts["remote"] == facts["errors"] == facts["katexErrors"] == facts["unrendered"] == []
    assert facts["rendered"] == facts["formulas"] >= 10
