"""The package's architecture, enforced: three layers with one-way imports, the library's shared base flat and the
app's a package.

- the library: :mod:`fsnn.neurons`, :mod:`fsnn.models`, :mod:`fsnn.data` and their shared base, the flat modules of
  ``fsnn/``; it imports neither the app's shared base, nor the suite, nor the reports;
- the app's shared base (:mod:`fsnn.runs`): the configs' location and recipe switches, the run records, provenance,
  interrupts, the number formatter, which the commands and the reports share; it may import the library, never the
  suite or the reports;
- the suite (:mod:`fsnn.suite`): the commands, the run lifecycle, the tasks and studies; it may import the
  library, the app's shared base and the reports;
- the reports (:mod:`fsnn.report`): tables, figures, the page; it imports the library and the app's shared base,
  never the suite.

The library's shared base is flat: a module sits in ``fsnn/`` itself, beside the packages, when the library's
packages import it (argument checks, the registry API, atomic files, compiled extensions) and it imports no
package, only other flat modules; a module that serves one package lives in that package, and one that serves only
the suite and the reports lives in :mod:`fsnn.runs`. ``fsnn/__init__.py`` is the library's public API and exempt.

Checked twice: statically, over every import statement of the package (module level or inside a function), which
also finds cycles; and by importing each package in a fresh interpreter and reading ``sys.modules``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

PACKAGE = ROOT / "fsnn"
PACKAGES = ("data", "models", "neurons", "report", "runs", "suite")
LIBRARY = ("fsnn.neurons", "fsnn.models", "fsnn.data")
HEAVY = ("hydra", "lightning", "pydantic", "omegaconf")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> str:
    if module.startswith("fsnn.suite"):
        return "suite"
    if module.startswith("fsnn.report"):
        return "report"
    if module.startswith("fsnn.runs"):
        return "runs"
    return "library"


def imports(known: dict[str, Path]) -> dict[str, set[str]]:
    """``{module: the fsnn modules it imports}``, each import resolved to the module it loads: ``from p import
    name`` is the submodule ``p.name`` where there is one, else ``p`` itself (a name from its ``__init__``)."""
    graph = {}
    for name, path in known.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names if alias.name.split(".")[0] == "fsnn"}
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "fsnn":
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    targets.add(sub if sub in known else node.module)
        graph[name] = {t for t in targets if t in known and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import that goes against the layers: the library into the app's shared base, the suite or the reports;
    the app's shared base into the suite or the reports; the reports into the suite."""
    allowed = {
        "library": {"library"},
        "runs": {"library", "runs"},
        "report": {"library", "runs", "report"},
        "suite": {"library", "runs", "report", "suite"},
    }
    return sorted(
        f"{source} -> {target}"
        for source, targets in graph.items()
        for target in targets
        if layer(target) not in allowed[layer(source)]
    )


def test_the_imports_go_one_way_and_in_no_circle():
    graph = imports(modules())
    assert upward(graph) == []
    assert cycles(graph) == []


def package_of(module: str) -> str | None:
    """The package of ``fsnn`` that holds ``module`` (``"models"`` for ``fsnn.models.sgcn``), ``None`` when flat."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in PACKAGES) else None


def test_the_folder_tree_shows_the_layers():
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert packages == list(PACKAGES)


def test_the_flat_modules_are_the_librarys_shared_base():
    """A flat module is imported by a package of the library and serves two or more packages; it imports only other
    flat modules."""
    graph = imports(modules())
    flat = [m for m in graph if m.count(".") == 1 and package_of(m) is None]
    assert flat, "no flat module found: the rule would hold for nothing"
    users = {m: {package_of(source) for source, targets in graph.items() if m in targets} - {None} for m in flat}
    outside = {m: sorted(p) for m, p in users.items() if not p & {"neurons", "models", "data"}}
    assert outside == {}, "a flat module no package of the library imports belongs in fsnn.runs, the app's base"
    serving_one = {m: sorted(p) for m, p in users.items() if len(p) < 2}
    assert serving_one == {}, "a flat module that serves fewer than two packages belongs in the one it serves"
    importing = {m: sorted(t for t in graph[m] if package_of(t)) for m in flat}
    assert {m: t for m, t in importing.items() if t} == {}, "a flat module imports only other flat modules"


def test_the_apps_shared_base_is_a_package_both_the_suite_and_the_reports_use():
    """Each module of :mod:`fsnn.runs` serves the suite and the reports, directly or through another of its
    modules: one that serves only one of them belongs in it."""
    graph = imports(modules())
    app = sorted(m for m in graph if layer(m) == "runs" and m != "fsnn.runs")
    assert app, "no module in fsnn.runs: the rule would hold for nothing"

    def served(module: str, seen: frozenset = frozenset()) -> set[str]:
        sources = {source for source, targets in graph.items() if module in targets and source not in seen}
        return {layer(s) for s in sources if layer(s) in ("suite", "report")} | {
            found for s in sources if layer(s) == "runs" for found in served(s, seen | {module})
        }

    assert {m: sorted(served(m)) for m in app if served(m) != {"suite", "report"}} == {}


def loaded(statement: str) -> list[str]:
    """The modules a fresh interpreter holds after ``statement``."""
    code = f"import json, sys; {statement}; print(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("package", ["fsnn", *LIBRARY])
def test_the_library_loads_neither_the_suite_nor_the_reports(package):
    held = loaded(f"import {package}")
    assert [m for m in held if layer(m) != "library" and m.startswith("fsnn.")] == []
    if package in ("fsnn", "fsnn.data"):  # the library needs torch, not the suite's configuration stack
        assert [m for m in held if m.split(".")[0] in HEAVY] == []


def test_the_reports_load_no_part_of_the_suite():
    report = sorted(module_name(p) for p in (PACKAGE / "report").rglob("*.py") if p.stem != "__main__")
    held = loaded("; ".join(f"import {m}" for m in report))
    assert [m for m in held if m.startswith("fsnn.suite")] == []


def test_the_tests_mirror_the_packages_and_a_library_test_imports_only_the_library():
    """``tests/<package>/`` holds the tests of each package; a test of the library (neurons, models, data) imports
    neither the suite nor the reports, so that it tests the library as a user of ``pip install fsnn`` has it."""
    tests = ROOT / "tests"
    assert sorted(p.name for p in tests.iterdir() if p.is_dir() and list(p.glob("test_*.py"))) == sorted(PACKAGES)
    found = {}
    for package in ("neurons", "models", "data"):
        for path in sorted((tests / package).glob("test_*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                names = (
                    [alias.name for alias in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                upper = [n for n in names if layer(n) != "library" and n.startswith("fsnn.")]
                if upper:
                    found.setdefault(path.relative_to(tests).as_posix(), []).extend(upper)
    assert found == {}
