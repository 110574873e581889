"""fsnn's compiled CPU extensions: C++ loops built on first use with PyTorch's C++ extension tools, then cached.

Two use it: the neurons' direct engine (:mod:`fsnn.neurons.cpu_kernels`) and the Poisson encoder's sampler
(:mod:`fsnn.models.poisson`). Each is one C++ file beside its Python module, built by
``torch.utils.cpp_extension.load`` (a C++ compiler and ninja; about a minute, once) into :meth:`CompiledExtension.
build_directory`. Where it cannot be built, its users fall back to torch code with one warning;
``FSNN_CPU_KERNELS=0`` turns every extension off.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import sys
import time
from pathlib import Path

import torch

# a build takes about a minute; a lock file older than this was left by a build that was killed, and would make
# every later load wait for it forever (torch's FileBaton has no timeout)
STALE_LOCK_S = 900

log = logging.getLogger(__name__)


def disabled() -> bool:
    """Whether ``FSNN_CPU_KERNELS=0`` (or ``false``/``off``/``no``) turns the compiled extensions off."""
    return os.environ.get("FSNN_CPU_KERNELS", "1").strip().lower() in ("0", "false", "off", "no")


def clear_stale_lock(folder: Path) -> None:
    """Remove ``folder/lock`` if a build that was killed left it more than :data:`STALE_LOCK_S` seconds ago."""
    lock = folder / "lock"
    try:
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return
    if age > STALE_LOCK_S:
        log.warning("removing %s, left %d minutes ago by a build of fsnn's CPU kernels that did not finish", lock,
                    age // 60)
        lock.unlink(missing_ok=True)


class CompiledExtension:
    """The C++ file ``source``, compiled as the Python extension ``name`` the first time :meth:`module` is called
    (once per process; a failed build is remembered as its exception)."""

    def __init__(self, name: str, source: Path):
        self.name, self.source = name, Path(source)

    def build_directory(self) -> Path:
        """``TORCH_EXTENSIONS_DIR`` (by default ``~/.cache/torch_extensions``), then one folder per Python and torch
        version (an extension is bound to the torch it was built against: an upgrade builds anew), then one per
        extension and version of its source (``<name>-<hash>``): two checkouts of the same code share one build,
        two versions of it never rebuild each other's."""
        from torch.utils import cpp_extension

        root = Path(os.environ.get("TORCH_EXTENSIONS_DIR") or cpp_extension.get_default_build_root())
        digest = hashlib.sha256(self.source.read_bytes()).hexdigest()[:12]
        version = f"py{sys.version_info.major}{sys.version_info.minor}-torch{torch.__version__}"
        return root / version / f"{self.name}-{digest}"

    @functools.cache  # noqa: B019 - one build per extension and process; extensions live as long as the process
    def module(self):
        """The built extension, or the exception that stopped its build."""
        try:
            extension_log = logging.getLogger("torch.utils.cpp_extension")
            if extension_log.level == logging.NOTSET:  # its import warns "No CUDA runtime is found" on CPU machines
                extension_log.setLevel(logging.ERROR)
            from torch.utils import cpp_extension

            folder = self.build_directory()
            folder.mkdir(parents=True, exist_ok=True)
            clear_stale_lock(folder)
            # compiled from a copy inside the folder: ninja's build file names the source's path, and a path that
            # changed (another checkout of the same code) would rebuild the extension under a running process
            source = folder / self.source.name
            if not source.exists():
                partial = source.with_suffix(f".{os.getpid()}.partial")
                partial.write_bytes(self.source.read_bytes())
                partial.replace(source)
            if not any(folder.glob("*.so")):
                log.info("building fsnn's CPU kernels %s in %s (once, about a minute)", self.name, folder)
            return cpp_extension.load(name=self.name, sources=[str(source)], extra_cflags=["-O3"],
                                      build_directory=str(folder), verbose=False)
        except Exception as error:  # noqa: BLE001 - no compiler, no ninja, a failed build: all mean "use torch"
            return error

    def unavailable_reason(self) -> str | None:
        """Why the extension cannot run here (``None`` if it can); builds it on the first call."""
        if disabled():
            return "FSNN_CPU_KERNELS=0 turns them off"
        built = self.module()
        if isinstance(built, Exception):
            reason = f"their build failed ({type(built).__name__}: {str(built).strip().splitlines()[-1][:200]})"
            _warn_once(self.name, reason)
            return reason
        return None


@functools.cache
def _warn_once(name: str, reason: str) -> None:
    log.warning("fsnn's compiled CPU kernels (%s) are not used: %s; torch code runs instead (slower)", name, reason)
