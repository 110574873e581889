#!/usr/bin/env python
"""CPU speed / memory benchmark: fsnn.FractionalLIF against SpikingJelly and snnTorch LIF neurons.

Model per cell: ``torch.nn.Linear(256, 256)`` applied to an input ``[T, 32, 256]`` (one batched call over
``T*32`` rows), followed by the neuron in multi-step mode (``[T, 32, 256] -> [T, 32, 256]``).  One iteration is
forward + ``spikes.sum()`` + backward (gradients reach the Linear weights/bias and the input tensor).

Neurons (``--only`` picks a subset by these names):

* ``sj_lif``          SpikingJelly ``neuron.LIFNode(tau=2, v_reset=None, step_mode="m")``, ``surrogate.Sigmoid(alpha=5)``
                      (driven directly, not through ``fsnn.neurons.baselines``, so the numbers are what SJ users get)
* ``snntorch_leaky``  snnTorch ``Leaky(beta=0.5, reset_mechanism="subtract")``, sigmoid surrogate (slope=5, the same
                      function as SJ's ``Sigmoid(alpha=5)``), Python loop over T
* ``fsnn_auto``, ``fsnn_direct``, ``fsnn_soe``  ``FractionalLIF(alpha=0.5, tau=2, engine=...)``
* ``fsnn_window16``   ``FractionalLIF(alpha=0.5, tau=2, engine="auto", memory=16)`` (short-memory window)

Every (neuron, T) cell runs in fresh subprocesses of this script (``--cell``), so peak-memory numbers are not
polluted by other cells and a cell that is too slow / too big can be killed (``--cell-timeout``,
``--cell-max-rss-gib``) without losing the rest of the table.  A cell is two subprocesses:

* timing pass (default allocator settings, i.e. what library users get): 2 warm-up iterations, then the median of
  ``--repeats`` timed iterations (``time.perf_counter`` around forward+backward only).  A per-cell time budget
  (``--budget`` seconds) lowers the repeat count for slow cells (at least 1);
* memory pass: 1 warm-up, then the peak-RSS increase of up to 3 identical fwd+bwd iterations (max reported).
  It is a separate process because measuring RSS faithfully needs ``MALLOC_MMAP_THRESHOLD_`` (see ``_PeakRSS``),
  which costs speed (an mmap/munmap + page faults per tensor: +10-15 % already at a 64 KiB threshold) and so
  must not touch the timing pass.

Memory: see ``_PeakRSS`` below.  Results: a table on stdout and JSON at ``--out``
(default ``results/bench/neurons.json``, written atomically).

GPU (``--device cuda``): the neuron alone, fwd+bwd of ``[T, 16, F]`` with ``F = 2^14 .. 2^20`` features
(``--features-log2``), full memory, alpha 0.5, ``T = 16, 64, 256, 1024, 4096``; backward from a fixed random
``dL/dspikes``. Neurons (``--only``): ``sj_lif`` (SpikingJelly's default CUDA dispatch: its fused Triton kernel),
``sj_lif_torch`` (SpikingJelly's torch reference path, ``SJ_LIF_CUDA_IMPLEMENTATION=torch``), ``snntorch_leaky``,
``fsnn_direct`` / ``fsnn_soe`` (fsnn's torch engines) and ``fsnn_triton`` (fsnn's fused kernels, what ``auto``
uses on CUDA). Each neuron runs in its own process over every cell (smallest first, within ``--neuron-budget``
seconds); a cell is the median of CUDA-event-timed iterations after two warm-ups, and peak memory is
``torch.cuda.max_memory_allocated`` over one iteration above what was allocated before it (input, gradient
buffer). Cells with more than ``--max-elements`` elements in ``[T, 16, F]`` are skipped. Results:
``results/bench/neurons_cuda.json``.

Examples::

    .venv/bin/python scripts/bench_neurons.py                      # full run, T = 16 128 512 2048
    .venv/bin/python scripts/bench_neurons.py --device cuda        # the GPU table
    .venv/bin/python scripts/bench_neurons.py --quick              # smoke run, T = 16 128, 2 repeats
    .venv/bin/python scripts/bench_neurons.py --only sj_lif snntorch_leaky --T 16 128
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench_tools import cpu_model

from fsnn.atomic import write_json_atomic
from fsnn.runs.provenance import package_versions

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = Path("results") / "bench" / "neurons.json"  # under the current directory

NEURONS = ["sj_lif", "snntorch_leaky", "fsnn_auto", "fsnn_direct", "fsnn_soe", "fsnn_window16"]
GPU_LINEUP = ["sj_lif", "sj_lif_torch", "snntorch_leaky", "fsnn_direct", "fsnn_soe", "fsnn_triton"]
GPU_T = [16, 64, 256, 1024, 4096]
GPU_BATCH = 16
SJ_TORCH_ENV = {"SJ_LIF_CUDA_IMPLEMENTATION": "torch"}  # read when SpikingJelly is imported
REFERENCE = "sj_lif"
BATCH = 32
FEATURES = 256
THREADS = 2
CELL_MARK = "@@CELL_RESULT@@ "


# ----------------------------------------------------------------------------------------------------------------
# neuron construction (child side)
# ----------------------------------------------------------------------------------------------------------------
def neuron_and_step(name: str):
    """Return ``(module, step_fn)``; ``step_fn(x[T,B,N]) -> spikes[T,B,N]`` runs one fresh sequence."""
    import torch

    if name in ("sj_lif", "sj_lif_torch"):  # which path sj_lif_torch takes is set by SJ_TORCH_ENV
        from spikingjelly.activation_based import neuron, surrogate

        node = neuron.LIFNode(
            tau=2.0, v_threshold=1.0, v_reset=None, surrogate_function=surrogate.Sigmoid(alpha=5.0), step_mode="m"
        )

        def step(x):
            node.reset()  # drop the membrane state (and its graph) of the previous iteration
            return node(x)

        return node, step

    if name == "snntorch_leaky":
        import snntorch as snn
        from snntorch import surrogate as snn_surrogate

        lif = snn.Leaky(
            beta=0.5, threshold=1.0, spike_grad=snn_surrogate.sigmoid(slope=5.0), reset_mechanism="subtract"
        )

        def step(x):
            mem = lif.reset_mem()  # zeros, no graph; Leaky re-shapes it to x[0] on the first call
            spikes = []
            # x.unbind(0), not x[t]: the Linear output requires grad, and T separate x[t] selects each
            # materialise a full [T,B,N] zero gradient in backward -> O(T^2) (measured 52.9 s vs ~1 s per
            # iteration at T=2048).  That cost belongs to the harness, not to snnTorch, so we avoid it.
            for x_t in x.unbind(0):
                spk, mem = lif(x_t, mem)
                spikes.append(spk)
            return torch.stack(spikes)

        return lif, step

    if name.startswith("fsnn_"):
        from fsnn import FractionalLIF

        kwargs = dict(alpha=0.5, tau=2.0, threshold=1.0, reset="soft")
        variant = name[len("fsnn_") :]
        if variant in ("auto", "direct", "soe", "triton"):
            kwargs["engine"] = variant
        elif variant.startswith("window"):
            kwargs["engine"] = "auto"
            kwargs["memory"] = int(variant[len("window") :])
        else:
            raise ValueError(f"unknown fsnn variant {name!r}")
        mod = FractionalLIF(**kwargs)

        def step(x):
            if hasattr(mod, "reset") and callable(mod.reset):
                mod.reset()  # harmless if the neuron is stateless between calls
            return mod(x)

        return mod, step

    raise ValueError(f"unknown neuron {name!r}; choose from {NEURONS}")


# ----------------------------------------------------------------------------------------------------------------
# peak RSS measurement (child side)
# ----------------------------------------------------------------------------------------------------------------
def _read_status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            m = re.search(rf"^{field}:\s+(\d+)\s+kB", f.read(), re.M)
        return int(m.group(1)) if m else None
    except OSError:
        return None


MMAP_THRESHOLD = 16384  # bytes; MALLOC_MMAP_THRESHOLD_ of the memory pass, see _PeakRSS


def _lock_memory() -> str | None:
    """``mlockall(MCL_CURRENT)``; returns an error string or None.

    Called once in the memory pass, after warm-up, ``gc.collect()`` and ``malloc_trim``: it pins the pages that are
    resident at that moment (mostly shared-library text and the interpreter).  The kernel may otherwise page such
    "cold" file-backed pages out behind our back (DAMON proactive reclaim runs on the project machines) and
    re-faulting them inside the measured iteration would be counted as activation memory (a few MiB of noise).
    No MCL_FUTURE: later mappings (the tensors) stay unlocked, so freeing / trimming them works as usual.
    """
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        if libc.mlockall(1) != 0:  # MCL_CURRENT
            return f"mlockall failed: {os.strerror(ctypes.get_errno())}"
    except (OSError, AttributeError) as e:
        return f"mlockall unavailable: {e}"
    return None


def _malloc_trim() -> bool:
    """glibc ``malloc_trim(0)``: hand every free heap page back to the OS (no-op elsewhere)."""
    import ctypes

    try:
        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


class _PeakRSS:
    """Peak increase of resident memory over one fwd+bwd, relative to the RSS just before it.

    Which method: on Linux we reset the kernel's RSS high-water mark by writing ``5`` to ``/proc/self/clear_refs``
    right before the iteration, then read ``VmHWM`` from ``/proc/self/status`` right after it; the increase is
    ``VmHWM_after - VmRSS_before``.  The kernel keeps the high-water mark itself, so short peaks are not missed and
    nothing runs inside the iteration.  A plain ``getrusage(RUSAGE_SELF).ru_maxrss`` before/after would NOT do on
    its own: it is a lifetime maximum, so once warm-up reached the peak every later delta would read 0.  If
    ``clear_refs`` is not writable (non-Linux, restricted /proc) we fall back to a psutil thread sampling RSS every
    1 ms, which can miss short peaks and is labelled ``psutil-sampling-1ms`` in the JSON.

    Making RSS follow live tensor memory (all measured on this benchmark, SJ LIF at T=512):

    * glibc keeps freed memory in its heap.  With default settings (dynamic mmap threshold up to 32 MiB) the
      warm-up's activations are still resident in the "RSS before" and the increase reads low (16-64 MiB); after
      ``malloc_trim`` it reads high and jittery (126-148 MiB, heap fragmentation).
    * So the memory pass runs with ``MALLOC_MMAP_THRESHOLD_=16384``: every tensor of >= 16 KiB (including the
      per-time-step ``[32, 256]`` float tensors of 32 KiB that step-by-step implementations allocate) gets its own
      mmap and goes back to the OS on free; ``gc.collect()`` + ``malloc_trim(0)`` before each measured iteration
      clean up the small-object heap.  Result: stable to ~1 % across iterations (102 MiB).
    * Cost of that choice: a 32 KiB tensor occupies 9 pages (36 KiB) as its own mapping, so implementations that
      allocate per-time-step tensors (SpikingJelly's CPU loop, snnTorch) are over-counted by up to 12.5 % relative
      to their live bytes; whole-sequence tensors are page-exact.  Ratios vs SJ are therefore, if anything,
      slightly flattering to the neuron being compared with SJ.
    * ``_lock_memory`` (see there) removes the remaining few-MiB noise from library pages being re-faulted.
    """

    def __init__(self):
        self.lock_error = "not locked yet"  # None once _lock_memory succeeded
        self._locked_once = False
        self.method = "vmhwm-clear_refs"
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            if _read_status_kib("VmHWM") is None:
                raise OSError("no VmHWM")
        except OSError:
            self.method = "psutil-sampling-1ms"
        self._stop = None
        self._thread = None
        self._peak = 0
        self._before = 0

    def start(self):
        gc.collect()
        _malloc_trim()
        if not self._locked_once:
            self._locked_once = True
            self.lock_error = _lock_memory()
        if self.method == "vmhwm-clear_refs":
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self._before = _read_status_kib("VmRSS") * 1024
        else:
            import psutil

            proc = psutil.Process()
            self._before = proc.memory_info().rss
            self._peak = self._before
            self._stop = threading.Event()

            def sample():
                while not self._stop.is_set():
                    self._peak = max(self._peak, proc.memory_info().rss)
                    self._stop.wait(0.001)

            self._thread = threading.Thread(target=sample, daemon=True)
            self._thread.start()

    def stop(self) -> int:
        """Return the peak increase in bytes."""
        if self.method == "vmhwm-clear_refs":
            peak = _read_status_kib("VmHWM") * 1024
        else:
            import psutil

            self._stop.set()
            self._thread.join()
            peak = max(self._peak, psutil.Process().memory_info().rss)
        return max(0, peak - self._before)


# ----------------------------------------------------------------------------------------------------------------
# one cell (child side)
# ----------------------------------------------------------------------------------------------------------------
def run_cell(name: str, T: int, repeats: int, budget: float, warmup: int, measure_memory: bool) -> dict:
    """One (neuron, T) cell.  ``measure_memory=False``: timing pass; ``True``: peak-RSS pass (see _PeakRSS)."""
    import torch

    torch.set_num_threads(THREADS)
    torch.manual_seed(0)

    linear = torch.nn.Linear(FEATURES, FEATURES)
    neuron_mod, step = neuron_and_step(name)
    # randn * 2 so a reasonable fraction of neurons fires (timing is not spike-rate dependent for these
    # implementations, but a silent network would make the surrogate path trivially sparse for nobody)
    x = (torch.randn(T, BATCH, FEATURES) * 2.0).requires_grad_(True)

    def iteration():
        h = linear(x.reshape(T * BATCH, FEATURES)).reshape(T, BATCH, FEATURES)
        s = step(h)
        loss = s.sum()
        loss.backward()
        return s

    def clear_grads():
        linear.zero_grad(set_to_none=True)
        x.grad = None

    # -- warm-up (also yields a per-iteration estimate for the budget) --
    warm_times = []
    rate = None
    for i in range(warmup):
        clear_grads()
        t0 = time.perf_counter()
        s = iteration()
        warm_times.append(time.perf_counter() - t0)
        if i == 0:
            rate = float(s.detach().float().mean())
            if tuple(s.shape) != (T, BATCH, FEATURES):
                raise RuntimeError(f"{name}: output shape {tuple(s.shape)} != {(T, BATCH, FEATURES)}")
            if x.grad is None or linear.weight.grad is None:
                raise RuntimeError(f"{name}: backward did not reach the input / Linear weights")
        del s
        # a cell whose very first iteration already eats half the budget gets a single warm-up
        if warm_times[0] > budget / 2:
            break
    engine = getattr(neuron_mod, "last_engine", None)

    est = min(warm_times) if warm_times else 0.0
    n_rep = repeats if est <= 0 else max(1, min(repeats, int(budget // max(est, 1e-9))))

    meter = _PeakRSS() if measure_memory else None
    times, peaks = [], []
    for _ in range(n_rep):
        clear_grads()
        if meter is not None:
            meter.start()
        t0 = time.perf_counter()
        s = iteration()
        dt = time.perf_counter() - t0
        if meter is not None:
            peaks.append(meter.stop())
        times.append(dt)
        del s

    if measure_memory:
        return {
            "peak_mib": max(peaks) / 2**20,
            "peak_mib_per_repeat": [p / 2**20 for p in peaks],
            "memory_method": meter.method + ("+mlockall" if meter.lock_error is None else f" ({meter.lock_error})"),
            "memory_pass_ms": [t * 1e3 for t in times],
        }
    return {
        "neuron": name,
        "T": T,
        "median_ms": statistics.median(times) * 1e3,
        "min_ms": min(times) * 1e3,
        "times_ms": [t * 1e3 for t in times],
        "warmup_ms": [t * 1e3 for t in warm_times],
        "repeats": len(times),
        "spike_rate": rate,
        "engine": None if engine is None else str(engine),
        "threads": torch.get_num_threads(),
    }


# ----------------------------------------------------------------------------------------------------------------
# GPU: one process per neuron runs all its cells
# ----------------------------------------------------------------------------------------------------------------
def gpu_cells(args) -> list[tuple[int, int]]:
    """``(T, features)`` cells within ``--max-elements``, cheapest first."""
    cells = [(T, 2**k) for T in args.T for k in args.features_log2 if T * GPU_BATCH * 2**k <= args.max_elements]
    return sorted(cells, key=lambda c: c[0] * c[1])


def run_gpu_neuron(name: str, args) -> None:
    """Child: time every cell of one neuron on the GPU, print one JSON line per cell."""
    import torch

    device = torch.device(args.device)
    cuda = device.type == "cuda"
    neuron_mod, step = neuron_and_step(name)
    neuron_mod.to(device)
    spent = 0.0  # timed iterations only: first calls (kernel compilation) are not held against a neuron
    for T, F in gpu_cells(args):
        row = {"neuron": name, "T": T, "features": F, "N": GPU_BATCH * F}
        if spent > args.neuron_budget:
            print(CELL_MARK + json.dumps({**row, "status": "skipped: neuron budget spent"}), flush=True)
            continue
        try:
            gen = torch.Generator(device=device).manual_seed(0)
            x = (torch.randn(T, GPU_BATCH, F, device=device, generator=gen) * 2.0).requires_grad_(True)
            grad = torch.randn(T, GPU_BATCH, F, device=device, generator=gen)

            def iteration():
                x.grad = None
                spikes = step(x)
                torch.autograd.backward(spikes, grad)
                return spikes

            def timed() -> float:
                if not cuda:
                    t0 = time.perf_counter()
                    iteration()
                    return time.perf_counter() - t0
                begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                begin.record()
                iteration()
                end.record()
                end.synchronize()
                return begin.elapsed_time(end) / 1e3

            first = timed()  # compilation, autotuning, allocator growth
            est = timed()
            n = max(2, min(args.repeats, int(args.cell_budget / max(est, 1e-6))))
            if cuda:
                x.grad = None
                torch.cuda.synchronize()
                base = torch.cuda.memory_allocated(device)
                torch.cuda.reset_peak_memory_stats(device)
            times = [timed() for _ in range(n)]
            spent += est + sum(times)
            peak = (torch.cuda.max_memory_allocated(device) - base) / 2**20 if cuda else None
            rate = float(step(x.detach()).float().mean())
            row.update(
                status="ok",
                median_ms=statistics.median(times) * 1e3,
                min_ms=min(times) * 1e3,
                first_ms=first * 1e3,
                repeats=n,
                peak_mib=peak,
                spike_rate=rate,
                engine=getattr(neuron_mod, "last_engine", None),
            )
        except torch.cuda.OutOfMemoryError:
            row["status"] = "out of GPU memory"
        finally:
            x = grad = None
            if cuda:
                torch.cuda.empty_cache()
        print(CELL_MARK + json.dumps(row), flush=True)


def gpu_main(args) -> int:
    """Parent: one child process per neuron (SpikingJelly reads its dispatch choice at import)."""
    import torch

    from fsnn.runs.provenance import device_description

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print(f"--device {args.device}: no CUDA device is visible", file=sys.stderr)
        return 2
    hardware = device_description(device)
    neurons = args.only or GPU_LINEUP
    forward = [
        "--device",
        args.device,
        "--T",
        *map(str, args.T),
        "--features-log2",
        *map(str, args.features_log2),
        "--repeats",
        str(args.repeats),
        "--cell-budget",
        str(args.cell_budget),
        "--neuron-budget",
        str(args.neuron_budget),
        "--max-elements",
        str(args.max_elements),
    ]
    rows, t_all = [], time.monotonic()
    for name in neurons:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        if name == "sj_lif_torch":
            env.update(SJ_TORCH_ENV)
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), *forward, "--gpu-child", name],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=args.cell_timeout,
        )
        got = [json.loads(line[len(CELL_MARK) :]) for line in proc.stdout.splitlines() if line.startswith(CELL_MARK)]
        if proc.returncode or not got:
            print(f"{name}: failed\n{proc.stderr[-3000:]}", file=sys.stderr)
        for r in got:
            msg = (
                f"{r['median_ms']:9.2f} ms  peak {_fmt(r['peak_mib'], '.0f')} MiB"
                if r["status"] == "ok"
                else r["status"]
            )
            print(f"[{time.monotonic() - t_all:6.1f}s] {name:<15} T={r['T']:<5} N={r['N']:<9} {msg}", flush=True)
        rows += got
    ref = {(r["T"], r["N"]): r for r in rows if r["neuron"] == REFERENCE and r["status"] == "ok"}
    for r in rows:
        base = ref.get((r["T"], r["N"]))
        ok = r["status"] == "ok" and base is not None
        r["time_ratio_vs_sj"] = r["median_ms"] / base["median_ms"] if ok else None
        r["mem_ratio_vs_sj"] = r["peak_mib"] / base["peak_mib"] if ok and base.get("peak_mib") else None
    print(
        f"\n{hardware}, torch {torch.__version__}; neuron alone on [T, {GPU_BATCH}, F], fwd+bwd, alpha 0.5, "
        f"full memory; ratios vs {REFERENCE} (its fused CUDA kernel) in the same cell"
    )
    hdr = f"{'neuron':<15} {'T':>5} {'N':>9} {'median ms':>10} {'x SJ':>6} {'peak MiB':>9} {'mem x SJ':>8}  engine"
    print(hdr + "\n" + "-" * len(hdr))
    for r in sorted(rows, key=lambda r: (r["T"], r["N"], neurons.index(r["neuron"]))):
        if r["status"] != "ok":
            print(f"{r['neuron']:<15} {r['T']:>5} {r['N']:>9} {r['status']}")
            continue
        print(
            f"{r['neuron']:<15} {r['T']:>5} {r['N']:>9} {r['median_ms']:>10.2f} {_fmt(r['time_ratio_vs_sj'], '.2f'):>6} "
            f"{_fmt(r['peak_mib'], '.0f'):>9} {_fmt(r['mem_ratio_vs_sj'], '.2f'):>8}  {r.get('engine') or ''}"
        )
    write_json_atomic(
        args.out,
        {
            "benchmark": "neurons_cuda",
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "hardware": hardware,
            "library_versions": package_versions(),
            "config": {
                "T": args.T,
                "batch": GPU_BATCH,
                "features_log2": args.features_log2,
                "alpha": 0.5,
                "neurons": neurons,
                "reference": REFERENCE,
                "max_elements": args.max_elements,
                "timing": "median of CUDA-event-timed fwd+bwd iterations after two warm-ups",
                "memory": "torch.cuda.max_memory_allocated over the timed iterations minus what was allocated "
                "before them (input and upstream gradient)",
            },
            "total_wall_s": time.monotonic() - t_all,
            "results": rows,
        },
    )
    print(f"wrote {args.out}")
    return 0


# ----------------------------------------------------------------------------------------------------------------
# parent side
# ----------------------------------------------------------------------------------------------------------------
def _spawn(name: str, T: int, args, mode: str):
    """Run one pass of a cell in a fresh interpreter; kill it on timeout or when its RSS passes the cap.

    Returns ``(result_dict_or_None, status_or_None, wall_s, stderr)``.
    """
    import psutil

    if mode == "time":
        repeats, warmup = args.repeats, args.warmup
    else:  # memory pass: one warm-up (lazy init), then the max peak over up to 3 iterations
        repeats, warmup = min(3, args.repeats), 1
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--cell",
        name,
        "--cell-mode",
        mode,
        "--T",
        str(T),
        "--repeats",
        str(repeats),
        "--budget",
        str(args.budget),
        "--warmup",
        str(warmup),
    ]
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(THREADS)
    if mode == "mem":
        env["MALLOC_MMAP_THRESHOLD_"] = str(MMAP_THRESHOLD)  # see _PeakRSS; never set for the timing pass
    else:
        env.pop("MALLOC_MMAP_THRESHOLD_", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    cap = int(args.cell_max_rss_gib * 2**30)
    t_start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    out_chunks, err_chunks = [], []
    readers = [
        threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()), daemon=True),
        threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()), daemon=True),
    ]
    for r in readers:
        r.start()
    status = None
    ps = psutil.Process(proc.pid)
    while proc.poll() is None:
        if time.monotonic() - t_start > args.cell_timeout:
            status = f"timeout>{args.cell_timeout:.0f}s"
        else:
            try:
                if ps.memory_info().rss > cap:
                    status = f"rss>{args.cell_max_rss_gib:g}GiB"
            except psutil.Error:
                pass
        if status:
            proc.kill()  # only the child we started
            break
        time.sleep(0.2)
    proc.wait()
    for r in readers:
        r.join()
    out, err = "".join(out_chunks), "".join(err_chunks)
    wall = time.monotonic() - t_start
    for line in out.splitlines():
        if line.startswith(CELL_MARK):
            return json.loads(line[len(CELL_MARK) :]), None, wall, err
    if status is None:
        tail = (err.strip().splitlines() or ["(no stderr)"])[-1]
        status = f"error: {tail}"[:300]
    return None, status, wall, err


def _busy_cpu_s() -> float:
    """Non-idle CPU seconds of the whole machine since boot (all cores, steal included)."""
    import psutil

    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def _children_cpu_s() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _other_load(interval: float = 1.0) -> float:
    """Average number of cores busy with anything but this script over ``interval`` seconds."""
    b0, t0, own0 = _busy_cpu_s(), time.monotonic(), time.process_time()
    time.sleep(interval)
    return max(0.0, (_busy_cpu_s() - b0 - (time.process_time() - own0)) / (time.monotonic() - t0))


def wait_for_idle(max_wait: float, threshold: float) -> float:
    """Block (up to ``max_wait`` s) until other processes use < ``threshold`` cores; return the last reading."""
    deadline = time.monotonic() + max_wait
    load = _other_load()
    while load >= threshold and time.monotonic() < deadline:
        load = _other_load()
    return load


def _fsnn_digest() -> str | None:
    """sha256 over fsnn/*.py, to tell which version of the (work-in-progress) core produced the numbers."""
    import hashlib

    files = sorted((REPO / "fsnn").glob("*.py"))
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def launch_cell(name: str, T: int, args) -> dict:
    """Timing pass (default malloc, as library users run) + memory pass (its own fresh process)."""
    idle_before = wait_for_idle(args.wait_idle, args.busy_threshold) if args.wait_idle > 0 else None
    b0, c0 = _busy_cpu_s(), _children_cpu_s()
    res, status, wall, err = _spawn(name, T, args, "time")
    # CPU time that other processes burnt while the timing pass ran, in cores (the machine has 2 and the
    # benchmark uses both, so anything clearly above 0 slows the cell down)
    other = max(0.0, (_busy_cpu_s() - b0 - (_children_cpu_s() - c0)) / max(wall, 1e-9))
    if res is None:
        return {
            "neuron": name,
            "T": T,
            "status": status,
            "cell_wall_s": wall,
            "median_ms": None,
            "peak_mib": None,
            "engine": None,
            "stderr_tail": err[-2000:],
            "other_load_cores": other,
        }
    res["status"] = "ok"
    res["other_load_cores"] = other
    res["other_load_before_cores"] = idle_before
    res["contended"] = other >= args.busy_threshold
    mem, mstatus, mwall, merr = _spawn(name, T, args, "mem")
    res["cell_wall_s"] = wall + mwall
    if mem is None:
        res["peak_mib"] = None
        res["memory_status"] = mstatus
        res["memory_stderr_tail"] = merr[-2000:]
    else:
        res.update(mem)
    return res


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def print_table(rows):
    hdr = f"{'neuron':<16} {'T':>5} {'median ms':>11} {'x SJ':>7} {'peak MiB':>9} {'mem x SJ':>9}  {'engine':<10} note"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        note = "" if r.get("status") == "ok" else r.get("status", "")
        if r.get("status") == "ok" and r.get("repeats") is not None:
            note = f"n={r['repeats']}"
            if r.get("contended"):
                note += f" BUSY({r['other_load_cores']:.1f} cores used by others)"
        print(
            f"{r['neuron']:<16} {r['T']:>5} {_fmt(r.get('median_ms'), '11.2f')} {_fmt(r.get('time_ratio_vs_sj'), '7.2f')} "
            f"{_fmt(r.get('peak_mib'), '9.1f')} {_fmt(r.get('mem_ratio_vs_sj'), '9.2f')}  {str(r.get('engine') or ''):<10} {note}"
        )


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--T", type=int, nargs="+", default=[16, 128, 512, 2048], help="sequence lengths")
    p.add_argument("--only", nargs="+", choices=NEURONS, default=None, help="subset of neurons")
    p.add_argument("--repeats", type=int, default=5, help="timed iterations per cell (median reported)")
    p.add_argument("--warmup", type=int, default=2, help="untimed warm-up iterations per cell")
    p.add_argument(
        "--budget",
        type=float,
        default=60.0,
        help="seconds of timed iterations per cell; slow cells get fewer repeats (>=1)",
    )
    p.add_argument("--cell-timeout", type=float, default=900.0, help="kill a cell after this many seconds")
    p.add_argument(
        "--cell-max-rss-gib",
        type=float,
        default=None,
        help="kill a cell whose RSS passes this (default: 60%% of physical memory)",
    )
    p.add_argument(
        "--wait-idle",
        type=float,
        default=60.0,
        help="before each cell wait up to this many seconds for other processes to go quiet (0: off)",
    )
    p.add_argument(
        "--busy-threshold",
        type=float,
        default=0.25,
        help="cores used by other processes above which the machine counts as busy / a cell as contended",
    )
    p.add_argument("--retry-busy", type=int, default=2, help="re-run a contended cell up to this many times")
    p.add_argument("--quick", action="store_true", help="smoke run: T=16,128 and 2 repeats")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON output path (default results/bench/neurons.json, neurons_cuda.json with --device)",
    )
    p.add_argument("--device", default=None, help="cuda[:i]: the GPU table (see above); default: the CPU table")
    p.add_argument(
        "--features-log2",
        type=int,
        nargs="+",
        default=[14, 17, 20],
        help="--device: F = 2^k features per sample (batch 16)",
    )
    p.add_argument("--max-elements", type=int, default=2**31, help="--device: skip cells larger than this")
    p.add_argument("--cell-budget", type=float, default=1.0, help="--device: seconds of timed iterations per cell")
    p.add_argument(
        "--neuron-budget",
        type=float,
        default=30.0,
        help="--device: seconds of timed iterations per neuron over all its cells",
    )
    p.add_argument("--gpu-child", default=None, help=argparse.SUPPRESS)  # internal: one neuron's GPU cells
    p.add_argument("--cell", default=None, help=argparse.SUPPRESS)  # internal: run one cell, print JSON
    p.add_argument("--cell-mode", choices=["time", "mem"], default="time", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.device is not None:
        if args.T == [16, 128, 512, 2048]:
            args.T = GPU_T
        if args.repeats == 5:
            args.repeats = 20
        args.out = args.out or DEFAULT_OUT.with_name("neurons_cuda.json")
        if args.gpu_child:
            run_gpu_neuron(args.gpu_child, args)
            return 0
        return gpu_main(args)
    args.out = args.out or DEFAULT_OUT
    if args.cell is not None:
        (T,) = args.T
        res = run_cell(args.cell, T, args.repeats, args.budget, args.warmup, args.cell_mode == "mem")
        print(CELL_MARK + json.dumps(res), flush=True)
        return 0

    if args.cell_max_rss_gib is None:
        import psutil

        args.cell_max_rss_gib = round(0.6 * psutil.virtual_memory().total / 2**30, 1)
    if args.quick:
        args.T = [16, 128]
        args.repeats = 2
    neurons = args.only or NEURONS
    import torch

    t_all = time.monotonic()
    digest_start = _fsnn_digest()
    rows = []
    for T in args.T:
        for name in neurons:
            r = launch_cell(name, T, args)
            tries = 1
            while r.get("contended") and tries <= args.retry_busy:
                print(
                    f"[{time.monotonic() - t_all:7.1f}s] {name:<16} T={T:<5} contended "
                    f"({r['other_load_cores']:.1f} cores used by others, {r['median_ms']:.2f} ms); retrying",
                    flush=True,
                )
                r = launch_cell(name, T, args)
                tries += 1
            r["attempts"] = tries
            rows.append(r)
            if r["status"] != "ok":
                msg = r["status"]
            else:
                peak = "-" if r.get("peak_mib") is None else f"{r['peak_mib']:.1f}"
                msg = f"{r['median_ms']:.2f} ms, peak +{peak} MiB" + (
                    f" (memory pass: {r['memory_status']})" if r.get("memory_status") else ""
                )
            eng = f", engine={r['engine']}" if r.get("engine") else ""
            print(f"[{time.monotonic() - t_all:7.1f}s] {name:<16} T={T:<5} {msg}{eng}", flush=True)

    ref = {r["T"]: r for r in rows if r["neuron"] == REFERENCE and r["status"] == "ok"}
    for r in rows:
        base = ref.get(r["T"])
        ok = r["status"] == "ok" and base is not None
        r["time_ratio_vs_sj"] = r["median_ms"] / base["median_ms"] if ok and base["median_ms"] else None
        r["mem_ratio_vs_sj"] = (
            r["peak_mib"] / base["peak_mib"] if ok and r.get("peak_mib") is not None and base.get("peak_mib") else None
        )
    total = time.monotonic() - t_all
    digest_end = _fsnn_digest()

    print()
    print(
        f"torch {torch.__version__}, {THREADS} threads, CPU: {cpu_model()}; "
        f"model Linear({FEATURES},{FEATURES}) + neuron on [T,{BATCH},{FEATURES}], fwd+bwd; "
        f"ratios vs {REFERENCE} at the same T"
    )
    print_table(rows)
    resolved = [
        (r["neuron"], r["T"], r["engine"])
        for r in rows
        if r.get("engine") and r["neuron"] in ("fsnn_auto", "fsnn_window16")
    ]
    for n, T, e in resolved:
        print(f"  {n} at T={T}: engine resolved to {e!r}")
    busy = [f"{r['neuron']}@T={r['T']}" for r in rows if r.get("contended")]
    if busy:
        print(
            f"WARNING: other processes used >= {args.busy_threshold} cores during {len(busy)} cell(s): "
            + ", ".join(busy)
            + " -- their times are inflated; rerun on a quiet machine"
        )
    if digest_start != digest_end:
        print("WARNING: fsnn/*.py changed while the benchmark ran; fsnn rows may mix code versions")
    print(f"total wall time {total:.1f} s")

    payload = {
        "benchmark": "neurons",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "torch_version": torch.__version__,
        "threads": THREADS,
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "library_versions": package_versions(),
        "config": {
            "T": args.T,
            "batch": BATCH,
            "features": FEATURES,
            "repeats": args.repeats,
            "warmup": args.warmup,
            "budget_s": args.budget,
            "quick": args.quick,
            "neurons": neurons,
            "reference": REFERENCE,
            "loss": "spikes.sum()",
            "model": f"Linear({FEATURES},{FEATURES}) over T*{BATCH} rows -> neuron (multi-step)",
            "wait_idle_s": args.wait_idle,
            "retry_busy": args.retry_busy,
            "busy_threshold_cores": args.busy_threshold,
            "memory": "peak RSS increase during a fwd+bwd over the RSS just before it, max of up to 3 "
            "iterations in a separate fresh process (VmHWM reset via /proc/self/clear_refs; "
            f"MALLOC_MMAP_THRESHOLD_={MMAP_THRESHOLD}; malloc_trim(0) before each iteration; "
            "mlockall(MCL_CURRENT) after warm-up). Per-time-step 32 KiB tensors are page-rounded "
            "to 36 KiB, so step-by-step implementations read up to 12.5% high",
            "timing": "median of timed fwd+bwd iterations after warm-up, default allocator, torch.set_num_threads(2)",
        },
        "total_wall_s": total,
        "fsnn_source_sha256_16": {"start": digest_start, "end": digest_end},
        "results": rows,
    }
    write_json_atomic(args.out, payload)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
