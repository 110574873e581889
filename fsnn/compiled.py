"""fsnn's compiled CPU extensions: C++ loops built on first use with PyTorch's C++ extension tools, then cached.

Two use it: the neurons' direct engine (:mod:`fsnn.neurons.cpu_kernels`) and the Poisson encoder's sampler
(:mod:`fsnn.models.poisson`). Each is one C++ file beside its Python module, built by
``torch.utils.cpp_extension.load`` (a C++ compiler and ninja; about a minute, once) into :meth:`CompiledExtension.
build_directory`. Where it cannot be built, its users fall back to torch code with one warning;
``FSNN_CPU_KERNELS=0`` turns every extension off.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import logging
import os
import struct
import sys
from pathlib import Path

import torch

from fsnn.atomic import file_digest, file_lock, write_json_atomic

# written into a build folder once its extension was built and loaded, with the size and SHA-256 of its shared library:
# later processes check the library against it and import it without a build
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

        A finished build is imported directly when its folder's ``built`` marker, written after
        ``torch.utils.cpp_extension.load`` returned, records the size and SHA-256 of the shared library and the file
        still has them: ``load`` takes the folder's lock and runs ninja to check the build at every call, a second or
        more at every process start, and a damaged library (a truncated copy, a full disk) would kill the process
        that maps it with SIGBUS, not raise. Anything else is built again from scratch, with a warning naming the
        file. Concurrent processes check and build under one lock (an OS lock, released if its holder is killed)."""
        folder = self.build_directory()
        library = folder / f"{self.name}.so"
        try:
            with file_lock(folder / ".fsnn.lock"):
                return self._verified_or_built(folder, library)
        except OSError as error:  # a build folder this process cannot write: import a verified build, or say why
            if _build_problem(folder, library) is None:
                return _import(self.name, library)
            return error

    def _verified_or_built(self, folder: Path, library: Path):
        problem = _build_problem(folder, library)
        if problem is None:
            try:
                return _import(self.name, library)
            except ImportError as error:  # a build from another torch ABI: built again below
                problem = f"it does not import ({error})"
        if (folder / BUILT).exists():
            log.warning("fsnn's compiled kernels %s: %s; building them again (about a minute)", library, problem)
        for stale in [folder / BUILT, *folder.glob("*.so"), *folder.glob("*.o")]:  # ninja would trust them
            stale.unlink(missing_ok=True)
        try:
            extension_log = logging.getLogger("torch.utils.cpp_extension")
            if extension_log.level == logging.NOTSET:  # its import warns "No CUDA runtime is found" on CPU machines
                extension_log.setLevel(logging.ERROR)
            from torch.utils import cpp_extension

            # compiled from a copy inside the folder: ninja's build file names the source's path, and a path that
            # changed (another checkout of the same code) would rebuild the extension under a running process
            source = folder / self.source.name
            if not source.exists():
                partial = source.with_suffix(f".{os.getpid()}.partial")
                partial.write_bytes(self.source.read_bytes())
                partial.replace(source)
            log.info("building fsnn's CPU kernels %s in %s (once, about a minute)", self.name, folder)
            module = cpp_extension.load(
                name=self.name, sources=[str(source)], extra_cflags=["-O3"], build_directory=str(folder), verbose=False
            )
        except Exception as error:  # noqa: BLE001 - no compiler, no ninja, a failed build: all mean "use torch"
            return error
        _write_marker(folder, library)
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


def _build_problem(folder: Path, library: Path) -> str | None:
    """Why the build in ``folder`` cannot be imported as it is (``None``: it can): no ``built`` marker, or a library
    that no longer has the size and SHA-256 its marker records. A marker without them is taken
    when the library is a whole ELF file (every segment and section table inside it), and rewritten with them."""
    try:
        text = (folder / BUILT).read_text()
    except OSError:
        return "no finished build"
    if not library.is_file():
        return "its library is missing"
    try:
        marker = json.loads(text)
    except ValueError:
        marker = None
    if not isinstance(marker, dict):  # written before markers recorded a checksum
        if not _whole_elf(library):
            return "the library is cut short (truncated or damaged)"
        with contextlib.suppress(OSError):  # a folder this process cannot write: checked again next time
            _write_marker(folder, library)
        return None
    if library.stat().st_size != marker.get("size"):
        return (
            f"the library has {library.stat().st_size} bytes where {marker.get('size')} were built (truncated or "
            "replaced)"
        )
    if file_digest(library) != marker.get("sha256"):
        return "the library's content changed since it was built (damaged or replaced)"
    return None


def _write_marker(folder: Path, library: Path) -> None:
    write_json_atomic(
        folder / BUILT, {"library": library.name, "size": library.stat().st_size, "sha256": file_digest(library)}
    )


def _whole_elf(path: Path) -> bool:
    """Whether ``path`` is an ELF file whose program segments and section table all lie inside it (a truncated copy's
    do not: mapping it would end in SIGBUS)."""
    data = path.read_bytes()
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        return False
    wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
    header = order + ("QQIHHHHHH" if wide else "IIIHHHHHH")
    phoff, shoff, _flags, _ehsize, phentsize, phnum, shentsize, shnum, _ = struct.unpack_from(
        header, data, 32 if wide else 28
    )
    if shoff + shentsize * shnum > len(data) or phoff + phentsize * phnum > len(data):
        return False
    for i in range(phnum):  # each program header's p_offset and p_filesz
        fields = struct.unpack_from(order + ("IIQQQQQQ" if wide else "IIIIIIII"), data, phoff + i * phentsize)
        offset, filesz = (fields[2], fields[5]) if wide else (fields[1], fields[4])
        if offset + filesz > len(data):
            return False
    return True


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
