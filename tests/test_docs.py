"""The documentation site: its mathematics rendered offline in a real browser (Debian's chromium driven by Playwright,
as in test_report.py), every argument of the public API documented, and the tutorial's code run as written."""

from __future__ import annotations

import inspect
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import CHROMIUM, FLAGS, ROOT, needs_chromium, registries

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
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
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
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS
        )
        try:
            tab = context.new_page()
            tab.set_viewport_size({"width": 1280, "height": 800})
            tab.on(
                "request",
                lambda request: (
                    None if request.url.startswith(("file:", "data:", "blob:")) else remote.append(request.url)
                ),
            )
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
    """The API page of the dynamics renders the equations of :mod:`fsnn.neurons.dynamics` and :mod:`fsnn.neurons.memory` from their
    docstrings, offline too."""
    facts = math_in_browser(site / "api" / "dynamics.html", tmp_path / "profile")
    assert facts["remote"] == facts["errors"] == facts["katexErrors"] == facts["unrendered"] == []
    assert facts["rendered"] == facts["formulas"] >= 10


# -- every argument documented -----------------------------------------------------------------------------------
def documented_arguments(obj) -> dict[str, str]:
    """``{argument: description}`` of the ``Args:`` section of ``obj``'s docstring (Google style, as mkdocstrings
    renders it); a class's are those of its own docstring and of its ``__init__`` (inherited where it has none, as
    ``merge_init_into_class`` shows them)."""
    import griffe

    texts = [inspect.getdoc(obj) or ""]
    if inspect.isclass(obj):
        texts.append(inspect.getdoc(obj.__init__) or "")
    found = {}
    logging.getLogger("griffe").disabled = True  # it warns about every argument without a type in the docstring
    for text in texts:
        for section in griffe.Docstring(text).parse("google"):
            if section.kind is griffe.DocstringSectionKind.parameters:
                found.update({p.name.lstrip("*"): p.description.strip() for p in section.value})
    return found


def public_api() -> dict[str, object]:
    """``{where: callable}``: every class and function of ``fsnn.__all__``, every entry of every registry (a dataset
    by its builder, a task kind by its public methods), and a neuron's ``forward``."""
    import fsnn

    found = {f"fsnn.{name}": getattr(fsnn, name) for name in fsnn.__all__}
    for what, entries in registries().items():
        for name in entries.names():
            entry = entries.get(name)
            if what == "dataset":
                entry = entry.builder
            if inspect.isclass(entry) or inspect.isfunction(entry):
                found[f"{what} {name}"] = entry
            else:  # a task kind: an instance whose methods the run calls
                found.update(
                    {
                        f"{what} {name}.{m}": getattr(entry, m)
                        for m in dir(entry)
                        if not m.startswith("_") and inspect.ismethod(getattr(entry, m))
                    }
                )
    for where, obj in list(found.items()):
        if inspect.isclass(obj) and issubclass(obj, torch.nn.Module) and "neuron" in where.split()[0]:
            found[f"{where}.forward"] = obj.forward
    return {where: obj for where, obj in found.items() if inspect.isclass(obj) or callable(obj)}


def arguments(obj) -> list[str]:
    return [name for name in inspect.signature(obj).parameters if name not in ("self", "cls")]


def test_every_public_argument_is_documented():
    """Each argument of ``fsnn.__all__`` and of the neurons (``forward`` included) has an entry in its docstring's
    ``Args:`` (meaning, range, default), and no entry names an argument that is gone."""
    api = public_api()
    assert {
        "fsnn.FractionalLIF",
        "neuron lif",
        "backbone sgcn",
        "dataset cora",
        "task node.build",
        "corruption spike_noise",
        "study energy",
        "neuron flif.forward",
    } <= set(api)
    undocumented, stale = {}, {}
    for where, obj in api.items():
        documented = documented_arguments(obj)
        if missing := [name for name in arguments(obj) if not documented.get(name)]:
            undocumented[where] = missing
        if gone := sorted(set(documented) - set(arguments(obj))):
            stale[where] = gone
    assert undocumented == {}
    assert stale == {}


def test_the_neuron_page_explains_every_argument(site):
    """FractionalLIF's API page shows all 17 constructor arguments with a description (its parent's ``__init__``
    docstring, merged) and the neurons' ``forward`` documents ``return_state``."""
    page = (site / "api" / "neurons.html").read_text()
    section = page[
        page.index('id="fsnn.neurons.fractional.FractionalLIF"') : page.index(
            'id="fsnn.neurons.fractional.FractionalIF"'
        )
    ]
    for name in inspect.signature(__import__("fsnn").FractionalLIF).parameters:
        assert f"<code>{name}</code>" in section, name
    assert "a number in" in section  # the range of an opaque type, Alpha, in words
    forward = page[page.index('id="fsnn.neurons.fractional.FractionalNeuron.forward"') :]
    assert "<code>return_state</code>" in forward[: forward.index('class="doc doc-heading"', 100)]


# -- the tutorial runs as written ------------------------------------------------------------------------------
TUTORIAL = ROOT / "docs" / "tutorials" / "your-own-network.md"


def test_tutorial_code_runs_and_f_lif_learns_the_cue():
    """The tutorial's ``python`` blocks, run in order in one namespace as a reader pastes them: training lowers the
    f-LIF network's loss, and it beats the LIF network on the held-out cues, as the page says."""
    blocks = re.findall(r"^```python\n(.*?)^```$", TUTORIAL.read_text(), flags=re.S | re.M)
    assert len(blocks) == 4
    namespace: dict = {"__name__": "tutorial"}
    for number, block in enumerate(blocks):
        exec(compile(block, f"{TUTORIAL.name}, python block {number + 1}", "exec"), namespace)
    fractional, lif = namespace["results"]["f-LIF (alpha=0.5)"], namespace["results"]["LIF (alpha=1)"]
    assert fractional["last loss"] < fractional["first loss"] - 0.03
    assert fractional["test accuracy"] > max(lif["test accuracy"], 0.55)
