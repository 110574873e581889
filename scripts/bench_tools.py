"""What the benchmark scripts share: the code of another revision to compare with, a child process timed and
watched for memory, and the name of the CPU."""

from __future__ import annotations

import os
import platform
import subprocess
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30


def extract_tree(revision: str, into: Path) -> Path:
    """The tree of ``revision`` of this repository, unpacked under ``into`` (``git archive``)."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", revision], check=True, capture_output=True, text=True
    ).stdout.strip()
    tree = into / f"fsnn-{commit}"
    tree.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def watched(
    cmd: list[str], cwd: Path, env: dict, limit_gib: float, cpus: set[int] | None = None
) -> tuple[int, float, float, str]:
    """Run ``cmd`` (pinned to ``cpus`` when given): ``(exit code, seconds, peak GiB, its output)``. The peak is the
    resident memory of the process and its children (data loader workers) together, sampled every 50 ms; a process
    tree past ``limit_gib`` is killed (exit code -9)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus),
    )
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(proc.stdout), daemon=True)
    reader.start()
    parent, peak = psutil.Process(proc.pid), 0
    while proc.poll() is None:
        try:
            tree = [parent, *parent.children(recursive=True)]
            peak = max(peak, sum(_rss(p) for p in tree))
        except psutil.NoSuchProcess:
            break
        if peak > limit_gib * GIB:
            proc.kill()
        time.sleep(0.05)
    code = proc.wait()
    reader.join()
    return code, time.perf_counter() - start, peak / GIB, "".join(output)


def _rss(process: psutil.Process) -> int:
    try:
        return process.memory_info().rss
    except psutil.NoSuchProcess:  # a worker that ended between the listing and the reading
        return 0


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or what ``platform`` knows of it elsewhere."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
