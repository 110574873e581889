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
import importlib.util
import logging
import os
import sys
from pathlib import Path

import torch

# written into a build folder once its extension was built and loaded: later processes import it without a build
BUILT = "built"

log = logging.getLogger(__name__)


def disabled() -> bool:
    """Whether ``FSNN_CPU_KERNELS=0`` (or ``false``/``off``/``no``) turns the compiled extensions off."""
    return os.environ.get("FSNN_CPU_KERNELS", "1").strip().lower() in ("0", "false", "off", "no")


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
        """The built extension, or the exception that stopped its build.

        A finished build (its folder's ``built`` marker, written after ``torch.utils.cpp_extension.load`` returned)
        is imported directly: ``load`` takes the folder's lock and runs ninja to check the build at every call, a
        second or more at every process start. Concurrent builds wait for each other on that lock (an OS lock,
        released if its holder is killed)."""
        folder = self.build_directory()
        if (folder / BUILT).exists():
            try:
                return _import(self.name, folder / f"{self.name}.so")
            except ImportError:  # a build from another torch ABI or a damaged file: build it again below
                pass
        try:
            extension_log = logging.getLogger("torch.utils.cpp_extension")
            if extension_log.level == logging.NOTSET:  # its import warns "No CUDA runtime is found" on CPU machines
                extension_log.setLevel(logging.ERROR)
            from torch.utils import cpp_extension

            folder.mkdir(parents=True, exist_ok=True)
            # compiled from a copy inside the folder: ninja's build file names the source's path, and a path that
            # changed (another checkout of the same code) would rebuild the extension under a running process
            source = folder / self.source.name
            if not source.exists():
                partial = source.with_suffix(f".{os.getpid()}.partial")
                partial.write_bytes(self.source.read_bytes())
                partial.replace(source)
            if not any(folder.glob("*.so")):
                log.info("building fsnn's CPU kernels %s in %s (once, about a minute)", self.name, folder)
            module = cpp_extension.load(name=self.name, sources=[str(source)], extra_cflags=["-O3"],
                                        build_directory=str(folder), verbose=False)
        except Exception as error:  # noqa: BLE001 - no compiler, no ninja, a failed build: all mean "use torch"
            return error
        (folder / BUILT).touch()
        return module

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


def _import(name: str, path: Path):
    """The compiled extension module ``name`` from the shared library ``path``."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or not path.exists():
        raise ImportError(f"no extension at {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def _warn_once(name: str, reason: str) -> None:
    log.warning("fsnn's compiled CPU kernels (%s) are not used: %s; torch code runs instead (slower)", name, reason)
