r"""Compiled CPU kernels for the fsnn-convention direct engine: forward and the adjoint recursion.

The torch engines (:mod:`fsnn.neurons.engines`) run a Python loop with a few small torch ops per time step. On
the CPU, for the small batches of training (a few hundred neurons), each op costs its dispatch, not its arithmetic:
about 80 microseconds a step forward at ``T = 100``. Here one C++ loop (``cpu_kernels.cpp`` beside this file) walks
the whole sequence for a tile of neurons, summing every lag of the kernel exactly (the ``direct`` engine's
arithmetic, in the engines' normalisation ``kappa_m = K_m / K_0``)::

    Y_k = U_init + sum_{m=1}^{min(k, L-1)} kappa_m gamma_{k-m}
    H_k = Y_k + (K_0/tau) (X_k + L_leak v_rest - L_leak V_{k-1}),   S_k = [H_k >= theta],   V_k = reset(H_k)
    gamma_k = V_k - Y_k

and backward, in reverse time, ``Gbar_k = sum_m kappa_m Hbar_{k+m}``, ``U_k = d_k + c_k (Gbar_k - L_leak (K_0/tau)
U_{k+1})``, ``Hbar_k = U_k - Gbar_k`` (``c_k, d_k`` of :func:`fsnn.neurons.dynamics.reset_adjoint_coefficients`).
``L = T`` for the whole history, ``memory + 1`` for a short-memory window.

The work is ``O(T^2 N)`` (``O(T M N)`` with a window), so ``engine="auto"`` uses it on the CPU up to
:data:`AUTO_MAX_STEPS` steps and the torch SOE engine beyond. It is built with PyTorch's C++ extension tools
(``torch.utils.cpp_extension.load``: a C++ compiler and ninja) the first time a neuron needs it, about a minute,
and cached (:func:`build_directory`). Where it cannot be built, ``auto`` falls back to the torch engines with one
warning; ``FSNN_CPU_KERNELS=0`` turns it off.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import time
from pathlib import Path

import torch

AUTO_MAX_STEPS = 256  # beyond it the O(T^2) sums cost more than the torch SOE engine's O(T) per-step loop
SOURCE = Path(__file__).with_name("cpu_kernels.cpp")
# a build takes about a minute; a lock file older than this was left by a build that was killed, and would make
# every later load wait for it forever (torch's FileBaton has no timeout)
STALE_LOCK_S = 900

log = logging.getLogger(__name__)


def disabled() -> bool:
    """Whether ``FSNN_CPU_KERNELS=0`` (or ``false``/``off``) turns the kernels off."""
    return os.environ.get("FSNN_CPU_KERNELS", "1").strip().lower() in ("0", "false", "off", "no")


def build_directory() -> Path:
    """Where the kernels are built and cached: ``TORCH_EXTENSIONS_DIR`` (by default ``~/.cache/torch_extensions``),
    then one folder per Python and torch version (an extension is bound to the torch it was built against, so a
    torch upgrade builds anew instead of failing to load the old build)."""
    from torch.utils import cpp_extension

    root = Path(os.environ.get("TORCH_EXTENSIONS_DIR") or cpp_extension.get_default_build_root())
    return root / f"py{sys.version_info.major}{sys.version_info.minor}-torch{torch.__version__}" / "fsnn_cpu_kernels"


def _clear_stale_lock(folder: Path) -> None:
    lock = folder / "lock"
    try:
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return
    if age > STALE_LOCK_S:
        log.warning("removing %s, left %d minutes ago by a build of fsnn's CPU kernels that did not finish", lock,
                    age // 60)
        lock.unlink(missing_ok=True)


@functools.cache
def _module():
    """The built extension, or the exception that stopped its build (cached: built once per process)."""
    try:
        extension_log = logging.getLogger("torch.utils.cpp_extension")
        if extension_log.level == logging.NOTSET:  # its import warns "No CUDA runtime is found" on CPU machines
            extension_log.setLevel(logging.ERROR)
        from torch.utils import cpp_extension

        folder = build_directory()
        folder.mkdir(parents=True, exist_ok=True)
        _clear_stale_lock(folder)
        if not any(folder.glob("*.so")):
            log.info("building fsnn's CPU kernels in %s (once, about a minute)", folder)
        return cpp_extension.load(name="fsnn_cpu_kernels", sources=[str(SOURCE)], extra_cflags=["-O3"],
                                  build_directory=str(folder), verbose=False)
    except Exception as error:  # noqa: BLE001 - no compiler, no ninja, a failed build: all mean "use torch"
        return error


def unavailable_reason() -> str | None:
    """Why the kernels cannot run here (``None`` if they can); builds them on the first call."""
    if disabled():
        return "FSNN_CPU_KERNELS=0 turns them off"
    built = _module()
    if isinstance(built, Exception):
        reason = f"their build failed ({type(built).__name__}: {str(built).strip().splitlines()[-1][:200]})"
        _warn_once(reason)
        return reason
    return None


@functools.cache
def _warn_once(reason: str) -> None:
    log.warning("fsnn's compiled CPU kernels are not used: %s; the torch engines run instead (slower on small "
                "batches)", reason)


def forward(x: torch.Tensor, kappa: torch.Tensor, *, drive: float, offset: float, c_leak: float, theta: float,
            hard: bool, v_reset: float, v_init: float, store_v: bool):
    """``(H, gamma, V)`` of ``x [T, N]`` (``V`` is ``[0, N]`` unless ``store_v``); ``kappa [L]``, ``kappa[0]``
    unused."""
    return _module().forward(x, kappa.contiguous(), drive, offset, c_leak, theta, hard, v_reset, v_init, store_v)


def backward(coef: torch.Tensor, drive: torch.Tensor, kappa: torch.Tensor, c_leak: float) -> None:
    """In place, reverse time: ``coef`` (``c_k``) becomes ``Hbar``, ``drive`` (``d_k``) becomes ``U``."""
    _module().backward(coef, drive, kappa.contiguous(), c_leak)
