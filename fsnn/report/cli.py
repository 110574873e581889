"""``fsnn-report tables|figures|page``: the reports of a results folder, rebuilt from its run records.

- ``fsnn-report tables [--results DIR] [--out DIR] [--spec FILE]``: the paper's tables beside ours, printed and
  written as Markdown and LaTeX under ``<results>/tables`` (:mod:`fsnn.report.tables`);
- ``fsnn-report figures [--results DIR] [--out DIR] [...]``: every figure the runs and the theory give, PNG and PDF
  under ``<results>/figures`` (:mod:`fsnn.report.figures`);
- ``fsnn-report page [--results DIR] [--out DIR] [--figures DIR] [--bench DIR]``: the report page,
  ``<results>/report/index.html`` (:mod:`fsnn.report.page`).

The results folder defaults to ``$FSNN_RESULTS`` where it is set (where runs are written then), else ``./results``,
the runs behind a checkout's tables (:func:`fsnn.runs.records.results_root`); ``--results runs`` reports one's own runs
(``paths.results_dir``'s default). On a signal each command says in one line what it
wrote and exits 128 + n. A file that cannot be written (a full disk, a read-only folder, an output folder that a link
leads out of the results folder) is one line ``fsnn: error: ...`` naming it, exit status 2; every file is written
whole or not at all.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fsnn.report.collect import printable
from fsnn.runs.interrupts import exit_on_interrupt
from fsnn.runs.records import results_root

RESULTS_HELP = "results folder to read (default: $FSNN_RESULTS, else ./results; one's own runs: runs)"


def tables(args: argparse.Namespace) -> None:
    """``fsnn-report tables``: every table, printed and written (:func:`fsnn.report.tables.make_tables`)."""
    from fsnn.report.tables import make_tables

    with exit_on_interrupt("fsnn-report tables", [args.out or args.results / "tables"]):
        make_tables(args.results, args.out, args.spec)


def figures(args: argparse.Namespace) -> None:
    """``fsnn-report figures``: every figure (:func:`fsnn.report.figures.make_figures`)."""
    from fsnn.report.figures import make_figures

    out = args.out or args.results / "figures"
    with exit_on_interrupt("fsnn-report figures", [out]):
        paths = make_figures(
            args.results, out, args.dt, args.t_max, args.t_lin, args.engine, args.kernel_steps, args.tau_lif
        )
    for path in paths:
        print(f"wrote {path}")


def page(args: argparse.Namespace) -> None:
    """``fsnn-report page``: the report page (:func:`fsnn.report.page.write_report`)."""
    from fsnn.report.page import write_report

    with exit_on_interrupt("fsnn-report page", [args.out or args.results / "report"], ["index.html"]):
        path = write_report(args.results, args.out, args.figures, args.bench)
    print(f"wrote {path}")


def parser() -> argparse.ArgumentParser:
    """The command line of ``fsnn-report``: one subcommand per report."""
    top = argparse.ArgumentParser(prog="fsnn-report", description=__doc__.splitlines()[0])
    commands = top.add_subparsers(dest="command", required=True, metavar="{tables,figures,page}")

    def command(name: str, run, summary: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=summary, description=summary)
        sub.add_argument("--results", type=Path, default=None, help=RESULTS_HELP)
        sub.add_argument("--out", type=Path, default=None, help=f"output folder (default: <results>/{name})")
        sub.set_defaults(run=run)
        return sub

    sub = command("tables", tables, "the paper's tables beside ours, as Markdown and LaTeX")
    sub.add_argument("--spec", default=None, help="paper tables YAML (default: the one fsnn ships)")
    sub = command("figures", figures, "every figure the runs and the theory give, as PNG and PDF")
    sub.add_argument("--dt", type=float, default=0.01, help="step of the simulated f-LIF markers (Fig. 3)")
    sub.add_argument("--t-max", type=float, default=100.0, help="end of the log-log relaxation panel")
    sub.add_argument("--t-lin", type=float, default=5.0, help="end of the linear relaxation panel")
    sub.add_argument("--engine", default="direct", choices=["direct", "soe", "auto"], help="f-LIF engine")
    sub.add_argument("--kernel-steps", type=int, default=10001, help="kernel length m of Fig. 7")
    sub.add_argument("--tau-lif", type=float, default=2.0, help="tau of the integer-order LIF reference kernel")
    sub = command("page", page, "the report page, index.html")
    sub.add_argument("--figures", type=Path, default=None, help="figures folder (default: <results>/figures)")
    sub.add_argument(
        "--bench", type=Path, default=None, help="benchmark tables for the estimates (default: <results>/bench)"
    )
    return top


def main(argv: list[str] | None = None) -> int:
    """``fsnn-report tables|figures|page [options]``: run the report asked for; exit 2 naming ``--results`` when it is
    not a folder, or the file or folder that cannot be written."""
    # a file name that is not UTF-8 is printed escaped, never a UnicodeEncodeError
    sys.stdout.reconfigure(errors="backslashreplace")
    top = parser()
    args = top.parse_args(argv)
    args.results = args.results if args.results is not None else results_root()
    if not args.results.is_dir():
        top.exit(
            2,
            f"fsnn: error: --results {printable(args.results)}: not a folder (expected a results folder with "
            "<experiment>/<run>/metrics.json)\n",
        )
    try:
        args.run(args)
    except OSError as error:  # fsnn.atomic.RunFileError names the file; any other names its path
        top.exit(2, f"fsnn: error: {printable(error)}\n")
    return 0
