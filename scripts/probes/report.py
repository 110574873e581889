"""``fsnn-report`` on a damaged or hostile results tree, and claims the runs cannot carry (categories ``report``,
``decisions``)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

from probes.base import ProbeBase
from probes.common import (
    FAILING_DISK,
    HEALTHY,
    HERE,
    REPORT_TASK,
    SCHEME_LINK,
    _with,
    cell_runs,
    remove_deep,
    report_record,
)
from probes.snippets import DECIDE


class ReportCases(ProbeBase):
    """These cases, as methods that :class:`probe_runs.Probe` collects."""

    def report(self) -> None:
        """``fsnn-report`` on a results tree with one hostile part (a link loop, a record that cannot be one, a
        value of the wrong type, a folder name that is not UTF-8, a scheme-like folder name), writing to a full disk, a
        read-only or linked-out output folder, or told by a manifest to follow a path: every bad record is skipped
        and named, a write that cannot happen is one ``fsnn: error:`` line naming the folder with no partial file
        left, and nothing outside the results tree is read into the page, written or removed. ``--fast``: only the
        cases that run ``fsnn-report tables`` and take no minute (what the test suite runs)."""
        self.report_reads()
        self.report_scheme_link()
        self.report_writes()
        self.report_links()

    def report_tree(self, name: str) -> tuple[Path, Path]:
        """``(folder, results)``: a fresh folder for a report case and its results tree holding one healthy run."""
        cwd = self.folder(f"report-{name}")
        report_record(cwd / "results", "healthy")
        return cwd, cwd / "results"

    def report_reads(self) -> None:
        """Each record or folder that cannot be a run's, among healthy ones: skipped and named, the rest reported."""

        def nested(results: Path) -> Path:
            path = results / REPORT_TASK / "nested" / "metrics.json"
            path.parent.mkdir(parents=True)
            path.write_text("[" * 100_000 + "]" * 100_000)
            return path

        def fifo(results: Path) -> Path:
            path = results / REPORT_TASK / "fifo" / "metrics.json"
            path.parent.mkdir(parents=True)
            os.mkfifo(path)
            return path

        def loop(results: Path) -> Path:
            (results / REPORT_TASK / "loop").symlink_to("..")
            return results / REPORT_TASK / "loop"

        def deep_tree(results: Path) -> str:
            folder = results / "deep"
            for _ in range(1100):  # one by one: os.makedirs recurses as deep as the tree
                folder.mkdir()
                folder = folder / "d"
            return "1 complete"  # the healthy run: the walk ends and reports it

        def not_utf8(results: Path) -> str:
            report_record(results, os.fsdecode(b"run-\xff"))
            return "run-\\xff"  # as the reports print a byte that is not UTF-8

        def wrong(key: str, value):
            def change(run: dict) -> None:
                *parents, last = key.split(".")
                node = run
                for part in parents:
                    node = node[part]
                node[last] = value

            return lambda results: report_record(results, f"bad-{key.replace('.', '-')}", change)

        # (case, what damages the tree, the commands that read it, fast)
        reads = [
            ("a symlink loop under the results folder", loop, ("tables", "page"), True),
            ("a folder tree 1,100 levels deep", deep_tree, ("tables",), True),
            ("metrics.json of 100,000 nested arrays", nested, ("tables",), True),
            ("metrics.json is a fifo", fifo, ("tables",), False),
            ("a run folder whose name is not UTF-8", not_utf8, ("tables", "page"), False),
            ("a record whose config is a string", wrong("config", "x"), ("tables", "page"), False),
            ("a record whose config.paths is a string", wrong("config.paths", "x"), ("page",), False),
            ("a record whose config.trainer is a string", wrong("config.trainer", "x"), ("tables",), True),
            ("a record whose versions is a string", wrong("versions", "x"), ("page",), False),
            ("a record whose status is a number", wrong("status", 3), ("tables", "page"), False),
        ]
        for label, damage, commands, quick in reads:
            for command in commands:
                if self.fast and not (quick and command == "tables"):
                    continue
                cwd, results = self.report_tree(f"{command}-{label}")
                named = damage(results)
                rc, out = self.run("fsnn-report", command, "--results", str(results), cwd=cwd, timeout=240)
                page = results / "report" / "index.html"
                said = page.read_text(errors="replace") if command == "page" and page.is_file() else out
                if command == "page" and isinstance(named, Path):
                    named = os.path.relpath(named, results)  # the page lists paths in the results folder
                outcome = (
                    "traceback"
                    if "Traceback (most recent call last)" in out
                    else "silent"
                    if rc is None
                    else "unclear"
                    if rc != 0
                    else "clear"
                    if str(named) in said
                    else "silent"
                )
                self.record(
                    "report",
                    f"{command}: {label}",
                    outcome,
                    note="timed out after 240 s" if rc is None else self.first_error(out)[:90],
                )
                remove_deep(results / "deep")

    def report_scheme_link(self) -> None:
        """A run folder named like a script link right under the page's own folder, where the page's relative link
        to its record would start with the folder's name: the link must not be a scheme."""
        if self.fast:
            return
        cwd, results = self.report_tree("javascript-folder")
        run = results / "report" / "javascript:document.title='x'"
        run.mkdir(parents=True)
        (run / "metrics.json").write_text(json.dumps(HEALTHY))
        rc, out = self.run("fsnn-report", "page", "--results", str(results), cwd=cwd, timeout=240)
        page = results / "report" / "index.html"
        links = SCHEME_LINK.findall(page.read_text()) if page.is_file() else []
        self.record(
            "report",
            "page: a run folder named javascript:document.title='x'",
            "traceback" if "Traceback" in out else "silent" if rc != 0 or links else "clear",
            security=bool(links),
            note=f"links with a scheme: {links}" if links else "",
        )

    def report_writes(self) -> None:
        """Writes that cannot happen: one line naming the folder, no partial file left."""
        failing = [
            ("tables", "full", "disk full"),
            ("tables", "read-only", "read-only --out"),
            ("page", "full", "disk full"),
            ("page", "read-only", "read-only --out"),
        ]
        for command, how, label in failing:
            if self.fast and command != "tables":
                continue
            cwd, results = self.report_tree(f"{command}-{how}")
            (out_dir := cwd / "out").mkdir()
            proc = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    FAILING_DISK.format(tests=str(HERE / "tests")),
                    how,
                    command,
                    "--results",
                    str(results),
                    "--out",
                    str(out_dir),
                ],
                cwd=cwd,
                env=self.env(),
                capture_output=True,
                text=True,
                timeout=240,
            )
            partial = [p.name for p in out_dir.iterdir() if ".tmp-" in p.name]
            outcome = self.classify_error(proc.returncode, proc.stdout + proc.stderr, str(out_dir))
            self.record(
                "report",
                f"{command}: {label}",
                "silent" if partial else outcome,
                note=f"partial files left: {partial}" if partial else self.first_error(proc.stderr)[:90],
            )
        cwd, results = self.report_tree("out-unmakeable")
        rc, out = self.run(
            "fsnn-report", "tables", "--results", str(results), "--out", "/proc/fsnn-probe/tables", cwd=cwd
        )
        self.record(
            "report",
            "tables: an --out that cannot be made (/proc/...)",
            self.classify_error(rc, out, "/proc/fsnn-probe/tables"),
            note=self.first_error(out)[:90],
        )

    def report_links(self) -> None:
        """Output folders that a link leads out of the results tree, and manifests that name a path: refused or
        ignored, nothing outside read into the page, written or removed."""
        for command, folder, victim in (
            ("tables", "tables", "all.md"),
            ("page", "report", "index.html"),
            ("figures", "figures", "figures.json"),
        ):
            if self.fast and command != "tables":
                continue
            cwd, results = self.report_tree(f"{folder}-link-out")
            (elsewhere := cwd / "elsewhere").mkdir()
            (elsewhere / victim).write_text("kept")
            (results / folder).symlink_to(elsewhere)
            rc, out = self.run("fsnn-report", command, "--results", str(results), cwd=cwd, timeout=600)
            touched = sorted(p.name for p in elsewhere.iterdir() if p.name != victim) + (
                [victim] if (elsewhere / victim).read_text() != "kept" else []
            )
            self.record(
                "report",
                f"{command}: results/{folder} a link out of the results tree",
                self.classify_error(rc, out, str(results / folder)),
                security=bool(touched),
                note=f"wrote outside: {touched}" if touched else self.first_error(out)[:90],
            )
        cwd, results = self.report_tree("manifests")
        secret = b"\x89PNG\r\n\x1a\n" + b"fsnn-probe-secret" * 8
        (cwd / "secret.png").write_bytes(secret)
        (cwd / "victim.md").write_text("kept")
        listed = ["../../secret", "../../victim", str(cwd / "secret"), str(cwd / "victim")]
        for folder, manifest in (("figures", "figures.json"), ("tables", "tables.json")):
            (results / folder).mkdir()
            (results / folder / manifest).write_text(json.dumps({"written": listed, "captions": {}}))
        for command in ("tables",) if self.fast else ("tables", "page"):
            rc, out = self.run("fsnn-report", command, "--results", str(results), cwd=cwd, timeout=240)
            page = results / "report" / "index.html"
            read = page.is_file() and base64.b64encode(secret).decode() in page.read_text()
            gone = not (cwd / "victim.md").exists()
            self.record(
                "report",
                f"{command}: a manifest naming ../../x and an absolute path",
                "traceback" if "Traceback" in out else "clear" if rc == 0 else "unclear",
                security=read or gone,
                note="read into the page" if read else "removed" if gone else "",
            )

    def decisions(self) -> None:
        """Decisions on samples that cannot carry one: a table cell counts a copied run folder once (copied anywhere
        in the results tree, its seed edited or written ``-0``, saved again) and says so, marks runs of several
        commits, and a claim is not decided on a zero-width interval, values that are not finite, or overflow."""
        cell = "| SGCN (f-SNN) |"  # Table 2's f-LIF SGCN row: its Cora column is the cell the runs fill
        copies = [
            ("10 of 20 runs copied elsewhere in the results tree", 10, lambda text, n: text),
            ("10 of 20 runs copied, their seeds edited", 10, lambda text, n: _with(text, seed=100 + n)),
            ("1 of 20 runs copied, its seed written -0", 1, lambda text, n: text.replace('"seed": 0,', '"seed": -0,')),
            (
                "1 of 20 runs copied and saved again (keys sorted, indented)",
                1,
                lambda text, n: json.dumps(json.loads(text), indent=2, sort_keys=True),
            ),
        ]
        for label, count, edit in copies:
            results = (cwd := self.folder(label)) / "results"
            runs = cell_runs(results, 20)
            for n, run in enumerate(runs[:count]):
                copy = results / "copies" / run.parent.name / "metrics.json"
                copy.parent.mkdir(parents=True)
                copy.write_text(edit(run.read_text(), n))
            rc, out, text = self.table_row(cwd, results, "node_classification.md", cell)
            self.record(
                "decisions",
                f"tables: {label}",
                "traceback"
                if "Traceback" in out
                else "clear"
                if "(n=20," in text and "left out" in text
                else self.behaviour(rc, out),
                note=text[:90],
            )
        results = (cwd := self.folder("two-commits")) / "results"
        for run in cell_runs(results, 20)[10:]:
            run.write_text(_with(run.read_text(), versions={"fsnn_commit": "1" * 40}))
        rc, out, text = self.table_row(cwd, results, "node_classification.md", cell)
        self.record(
            "decisions",
            "tables: 10 of 20 runs from another commit",
            "traceback" if "Traceback" in out else "clear" if "2 commits" in text else self.behaviour(rc, out),
            note=text[:90],
        )
        # a copy on each side of a claim: two equal values a side are a zero-width interval
        results = (cwd := self.folder("claims-copies")) / "results"
        for neuron in ("flif", "lif"):
            (run,) = cell_runs(results, 1, neuron)
            copy = results / "copies" / run.parent.name / "metrics.json"
            copy.parent.mkdir(parents=True)
            copy.write_text(run.read_text())
        rc, out, text = self.table_row(cwd, results, "claims.md", "| Cora / SGCN | LIF")
        self.record(
            "decisions",
            "claims: one run and its copy on each side",
            "traceback" if "Traceback" in out else "clear" if "not decided" in text else self.behaviour(rc, out),
            note=text[:90],
        )
        nan, inf = "float('nan')", "float('inf')"
        undecidable = [
            ("[80, 80] vs [70, 70] (no spread), no claim", "[80, 80]", "[70, 70]", "None", "spread"),
            ("[80, 80] vs [70, 70] (no spread), claim 10", "[80, 80]", "[70, 70]", "10.0", "spread"),
            ("a NaN value", f"[1, 2, {nan}]", "[0, 1, 2]", "None", "finite"),
            ("an infinite value", "[1, 2, 3]", f"[0, 1, {inf}]", "1.0", "finite"),
            ("a NaN claim", "[10, 11, 12]", "[0, 1, 2]", nan, "finite"),
            ("values whose variance overflows", "[1e308, -1e308, 1e308]", "[0, 1, 2]", "None", "large"),
        ]
        self.snippets(
            "decisions",
            [
                (f"decide: {label}", DECIDE.format(a=a, b=b, claim=claim), word)
                for label, a, b, claim, word in undecidable
            ],
        )

    def table_row(self, cwd: Path, results: Path, table: str, row: str) -> tuple[int | None, str, str]:
        """``(exit status, output, text)`` of ``fsnn-report tables`` on ``results``: ``text`` is the first cell of the
        row of ``table`` (a file it writes) that starts with ``row`` (``""`` where there is none), or, for a claims
        row, the row."""
        rc, out = self.run("fsnn-report", "tables", "--results", str(results), "--out", str(cwd / "tables"), cwd=cwd)
        path = cwd / "tables" / table
        lines = path.read_text().splitlines() if path.is_file() else []
        found = next((line for line in lines if line.startswith(row)), "")
        return rc, out, found if table == "claims.md" else found[len(row) :].split("|")[0].strip()
