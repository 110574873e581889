"""The documentation site: its mathematics rendered offline in a real browser (Debian's chromium driven by Playwright,
as in test_report.py), every argument of the public API documented, and the tutorial's code run as written."""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
import shutil
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
    docstring, merged) and the neurons' ``forward`` documents ``state`` and ``return_state``."""
    page = (site / "api" / "neurons.html").read_text()
    section = page[
        page.index('id="fsnn.neurons.fractional.FractionalLIF"') : page.index(
            'id="fsnn.neurons.fractional.FractionalIF"'
        )
    ]
    for name in inspect.signature(__import__("fsnn").FractionalLIF).parameters:
        assert f"<code>{name}</code>" in section, name
    assert "a number in" in section  # the range of an opaque type, Alpha, in words
    forward = page[page.index('id="fsnn.neurons.base.SpikingNeuron.forward"') :]
    forward = forward[: forward.index('class="doc doc-heading"', 100)]
    assert "<code>return_state</code>" in forward and "<code>state</code>" in forward


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


# -- the how-tos run as written ------------------------------------------------------------------------------------
HOW_TO = ROOT / "docs" / "how-to"
#: a fenced block: its language, its ``title`` (mkdocs-material's file name) and its text
FENCE = re.compile(r'^```(\w+)(?: title="([^"]+)")?\n(.*?)^```$', flags=re.S | re.M)


def run_page(page: Path, folder: Path, pythonpath: Path = ROOT) -> str:
    """Do in ``folder`` what ``page`` tells a reader to, block by block: a block with a ``title`` is written to that
    file, an untitled ``bash`` block is run by bash (stopping at its first failing command) and an untitled ``python``
    block by python; the others (output, fragments) are only read. The commands find fsnn in ``pythonpath``, this
    environment's commands first on the ``PATH``, one thread and no W&B. Returns what the blocks printed."""
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        "PYTHONPATH": str(pythonpath),
        "OMP_NUM_THREADS": "1",
        "WANDB_MODE": "disabled",
    }
    printed = []
    for number, (language, title, text) in enumerate(FENCE.findall(page.read_text()), 1):
        if title:
            (folder / title).parent.mkdir(parents=True, exist_ok=True)
            (folder / title).write_text(text)
        elif language in ("bash", "python"):
            command = ["bash", "-euo", "pipefail", "-c", text] if language == "bash" else [sys.executable, "-c", text]
            done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, f"{page.name}, block {number}:\n{text}\n{done.stderr[-3000:]}"
            printed.append(done.stdout)
    return "".join(printed)


def test_own_neuron_how_to_runs_and_the_report_names_the_neuron_by_its_label(tmp_path):
    """The neuron registered without its label is refused there; the sweep trains it beside f-LIF and LIF under one
    recipe; the table of one's own shows the three, and its claims name the neuron by its registered label."""
    printed = run_page(HOW_TO / "own-neuron.md", tmp_path)
    assert "neuron 'exp_lif_unlabelled' is registered without its 'label'" in printed
    records = {
        path.parent.name: json.loads(path.read_text())
        for path in (tmp_path / "runs" / "table1_neuromorphic_smoke").glob("*/metrics.json")
    }
    assert sorted(records) == [f"neuron-{n}+seed-0+setup-dvsgesture_cnn" for n in ("exp_lif", "flif", "lif")]
    assert all(r["status"] == "complete" and 0.0 <= r["test_acc"] <= 1.0 for r in records.values())
    configs = [r["config"] for r in records.values()]
    assert [key for key in configs[0] if any(c[key] != configs[0][key] for c in configs)] == ["neuron"]
    table = (tmp_path / "runs" / "tables" / "exp_lif_gesture.md").read_text()
    assert table.count("(n=1") == 3 and "| LIF (exp decay) |" in table  # the column headed by its registered label
    claims = (tmp_path / "runs" / "tables" / "claims.md").read_text()
    assert "| LIF (exp decay) |" in claims and "| LIF (fsnn, alpha = 1) |" in claims


def test_stepping_how_to_runs_and_shows_what_it_says(tmp_path):
    """Steps and chunks equal the whole call, the stream's state stays one size, truncated BPTT trains, SpikingJelly's
    own helpers step and reset a mixed network, and the recurrent f-LIF network trains through ``fsnn-train``."""
    printed = run_page(HOW_TO / "stepping.md", tmp_path)
    assert "step by step equals the whole call: True" in printed and "chunks equal the whole call: True" in printed
    sizes = re.search(r"after 10, 100, 1000 steps: \[(\d+), (\d+), (\d+)\]", printed).groups()
    assert len(set(sizes)) == 1, printed
    banks = re.findall(r"^(0\.\d) \| (\d+) \| (\d+) \| (\S+)$", printed, flags=re.M)
    assert [alpha for alpha, *_ in banks] == ["0.2", "0.5", "0.8"], printed
    for _, modes, numbers, error in banks:  # V, 9 exact currents and the modes; within the default tol
        assert int(numbers) == int(modes) + 10 and float(error) <= 1e-6
    assert "trained over 512 steps in chunks of 64" in printed
    assert "stepped twice alike: True | stepped equals multi-step: True" in printed
    (path,) = (tmp_path / "runs" / "train").glob("*/metrics.json")
    record = json.loads(path.read_text())
    assert record["status"] == "complete" and record["config"]["backbone"]["recurrent"] is True
    assert {entry["engine"] for entry in record["neurons"].values()} == {"state-soe"}


def test_own_dataset_how_to_trains_a_dataset_of_one_module_and_one_yaml(tmp_path):
    """The toy event dataset of the page, one module and one YAML with nothing in fsnn edited, trains through
    ``fsnn-train`` on its fake, and the cost estimates count its registered training split less the validation share."""
    run_page(HOW_TO / "own-dataset.md", tmp_path)
    (path,) = (tmp_path / "runs" / "train").glob("*/metrics.json")
    record = json.loads(path.read_text())
    assert record["status"] == "complete" and 0.0 <= record["test_acc"] <= 1.0 and record["fake_data"] is True
    assert record["config"]["dataset"]["name"] == "toy_events" and record["config"]["dataset"]["T"] == 4
    count = "from omegaconf import OmegaConf; from fsnn.report.estimates import train_samples; import toy_events; "
    count += "print(train_samples(OmegaConf.create({'dataset': {'name': 'toy_events', 'val_fraction': 0.1}})))"
    done = subprocess.run(
        [sys.executable, "-c", count],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    assert done.stdout.split() == [str(round(48 * 0.9))], done.stderr[-3000:]


def test_new_table_how_to_fills_its_table_from_its_smoke_sweep(tmp_path):
    """In a copy of the checkout, the page's experiment and its smoke twin compose, the smoke sweep runs its four jobs
    on the fakes, and the table of the page's tables file shows one run in each of its four cells."""
    for part in ("fsnn", "conf"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "train.py", tmp_path)
    run_page(HOW_TO / "new-table.md", tmp_path, pythonpath=tmp_path)
    runs = sorted((tmp_path / "runs" / "time_steps_smoke").glob("*/metrics.json"))
    assert len(runs) == 4 and all(json.loads(p.read_text())["status"] == "complete" for p in runs)
    table = (tmp_path / "runs" / "tables" / "time_steps.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith(("| T=8 |", "| T=16 |"))]
    assert len(rows) == 2 and all(row.count("(n=1") == 2 for row in rows)
