"""How fast the commands answer: ``python scripts/bench_startup.py --before REV``.

Times, in fresh processes, ``train.py --help``, a refused typo (``train.py neuron=flf``), ``evaluate.py --help``,
``import fsnn`` and ``from fsnn import FractionalLIF`` (the first use of the neurons, which needs torch), for this
checkout (after) and for the git revision ``REV`` (before, checked out with ``git worktree`` into a temporary folder
that is removed afterwards), with this interpreter. The two alternate, try by try, so that a change in the machine's
load falls on both; each row gives the median of ``--tries`` of the wall time and of the CPU time (user + system),
which a busy machine inflates far less. The 1-minute load average is read before every try, since on a shared
machine it says more about a wall time than the number itself.

Prints a Markdown table and writes ``results/bench/startup.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
#: (label, arguments after the interpreter, the exit status the command answers with)
COMMANDS = (
    ("train.py --help", ["train.py", "--help"], 0),
    ("train.py neuron=flf (a typo)", ["train.py", "neuron=flf"], 2),
    ("evaluate.py --help", ["evaluate.py", "--help"], 0),
    ("import fsnn", ["-c", "import fsnn"], 0),
    ("from fsnn import FractionalLIF", ["-c", "from fsnn import FractionalLIF"], 0),
)


def timed(root: Path, args: list[str], expected: int, cwd: Path) -> tuple[float, float]:
    """``(wall, cpu)`` seconds one command of the checkout ``root`` takes, from an empty folder (so that nothing is
    written into a checkout); an unexpected exit status stops the benchmark. The CPU time (user + system, of the
    process and its children) is what a quiet machine's wall time would be, near enough, for a startup that uses
    one core: it is the column to read when the load is high."""
    env = {**os.environ, "PYTHONPATH": str(root)}  # the checkout's fsnn, not the installed (editable) one
    command = [sys.executable, *(str(root / a) if a.endswith(".py") else a for a in args)]
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - used.ru_utime) + (after.ru_stime - used.ru_stime)
    if done.returncode != expected:
        raise SystemExit(
            f"{' '.join(command)} (in {root}) exited with {done.returncode}, not {expected}:\n{done.stderr[-2000:]}"
        )
    return seconds, cpu


def which_fsnn(root: Path, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, "-c", "import fsnn; print(fsnn.__file__)"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, metavar="REV", help="the git revision to compare with")
    parser.add_argument("--tries", type=int, default=3, help="tries per command and checkout (default 3)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "bench" / "startup.json")
    args = parser.parse_args(argv)
    if args.tries < 1:
        parser.error(f"--tries: expected an integer >= 1, got {args.tries}")
    rev = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", args.before], capture_output=True, text=True)
    if rev.returncode != 0:
        parser.error(f"--before: expected a git revision of {HERE}, got {args.before!r}")
    before_rev = rev.stdout.strip()
    after_rev = subprocess.run(
        ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="fsnn-bench-") as tmp:
        before, cwd = Path(tmp) / "before", Path(tmp) / "cwd"
        cwd.mkdir()
        subprocess.run(
            ["git", "-C", str(HERE), "worktree", "add", "--detach", "--quiet", str(before), before_rev], check=True
        )
        try:
            # its bytecode, as this checkout's already is: the first try must not pay for compiling fsnn
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(before / "fsnn")], check=True)
            roots = {"before": before, "after": HERE}
            for label, root in roots.items():  # each side runs its own copy of fsnn
                assert Path(which_fsnn(root, cwd)).is_relative_to(root), f"{label} does not import its own fsnn"
            rows = []
            for label, command, expected in COMMANDS:
                times, loads = {side: {"wall": [], "cpu": []} for side in roots}, []
                for _ in range(args.tries):
                    for side, root in roots.items():
                        loads.append(os.getloadavg()[0])
                        wall, cpu = timed(root, command, expected, cwd)
                        times[side]["wall"].append(wall)
                        times[side]["cpu"].append(cpu)
                rows.append(
                    {
                        "command": label,
                        "load_1min": [min(loads), max(loads)],
                        "tries_s": times,
                        **{
                            f"{side}_{kind}_s": statistics.median(t[kind])
                            for side, t in times.items()
                            for kind in ("wall", "cpu")
                        },
                    }
                )
                print(
                    f"{label}: wall before {rows[-1]['before_wall_s']:.2f} s, after {rows[-1]['after_wall_s']:.2f} s; "
                    f"CPU before {rows[-1]['before_cpu_s']:.2f} s, after {rows[-1]['after_cpu_s']:.2f} s "
                    f"(load {min(loads):.1f}-{max(loads):.1f})",
                    file=sys.stderr,
                )
        finally:
            subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(before)], check=True)
    lines = [
        f"| command (median of {args.tries}) | wall, before ({before_rev}) | wall, after ({after_rev}) | "
        "CPU, before | CPU, after | load (1 min) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| `{r['command']}` | {r['before_wall_s']:.2f} s | {r['after_wall_s']:.2f} s | "
        f"{r['before_cpu_s']:.2f} s | {r['after_cpu_s']:.2f} s | "
        f"{r['load_1min'][0]:.1f}-{r['load_1min'][1]:.1f} |"
        for r in rows
    ]
    print("\n".join(lines))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "before": before_rev,
                "after": after_rev,
                "tries": args.tries,
                "python": sys.version.split()[0],
                "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                "rows": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
