"""Name -> factory registries (neurons, backbones): one decorator, one error for an unknown name or argument.

An entry is a class or a function; :meth:`Registry.lazy` registers ``"module:attribute"`` instead, imported on
first use, so a name stays listed while the library behind it is optional (SpikingJelly, snnTorch). A component that
needs an optional library imports it with :func:`require`; without it the user reads one line naming the
``fsnn[extra]`` to install (:class:`MissingExtraError`).
"""

from __future__ import annotations

import importlib
import inspect
from typing import Callable


class MissingExtraError(ImportError):
    """An optional library is not installed; the message is one line ending in the ``pip install 'fsnn[extra]'``
    that installs it."""

    def __init__(self, what: str, missing: str, extra: str):
        super().__init__(f"{what} needs the optional libraries of fsnn[{extra}] ({missing} is not installed); install "
                         f"them with: pip install 'fsnn[{extra}]'")


def require(module: str, what: str, extra: str):
    """Import and return the optional library ``module`` that ``what`` (e.g. ``"backbone 'spikformer'"``) needs;
    :class:`MissingExtraError` naming ``fsnn[extra]`` when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtraError(what, (error.name or module).split(".")[0], extra) from None


class _Lazy:
    def __init__(self, target: str, extra: str):
        self.target, self.extra = target, extra


class Registry(dict):
    """``name -> factory`` for one kind of component; ``what`` ("neuron", "backbone") names it in messages."""

    def __init__(self, what: str):
        super().__init__()
        self.what = what

    def register(self, name: str):
        """Decorator adding ``factory`` under ``name``; a second, different factory for a name is refused."""

        def wrap(factory):
            if name in self and self[name] is not factory:
                raise ValueError(f"{self.what} {name!r} is already registered")
            self[name] = factory
            return factory

        return wrap

    def lazy(self, name: str, target: str, extra: str) -> None:
        """Register ``target`` (``"package.module:attribute"``), imported when ``name`` is first built; without
        its library the build fails with one message naming the ``fsnn[extra]`` to install."""
        self[name] = _Lazy(target, extra)

    def names(self) -> list[str]:
        return sorted(self)

    def factory(self, name: str) -> Callable:
        """The factory of ``name`` (importing a lazy one); ``ValueError`` listing the names otherwise."""
        if name not in self:
            raise ValueError(f"{self.what} must be one of {self.names()}, got {name!r}")
        entry = self[name]
        if isinstance(entry, _Lazy):
            module, attribute = entry.target.split(":")
            entry = getattr(require(module, f"{self.what} {name!r}", entry.extra), attribute)
            self[name] = entry
        return entry

    def params(self, name: str) -> set[str] | None:
        """Keyword arguments the factory of ``name`` takes, or ``None`` when it takes any (see :func:`accepted`)."""
        return accepted(self.factory(name))

    def build(self, name: str, **kwargs):
        """``factory(**kwargs)``; an argument the factory does not take is a ``ValueError`` naming it."""
        factory = self.factory(name)
        allowed = accepted(factory)
        unknown = sorted(set(kwargs) - allowed) if allowed is not None else []
        if unknown:
            raise ValueError(f"{self.what} {name!r} does not take {unknown}; it accepts {sorted(allowed)}")
        return factory(**kwargs)


def accepted(factory: Callable) -> set[str] | None:
    """Keyword arguments of ``factory`` (a function, or a class's ``__init__``; a wrapper declares what it wraps
    with ``__wrapped__``), following the ``**kwargs`` a class hands to its base class's ``__init__``; ``None`` when
    it takes any keyword."""
    factory = inspect.unwrap(factory)
    if inspect.isclass(factory):
        targets = [c.__init__ for c in factory.__mro__ if "__init__" in vars(c) and c is not object]
    else:
        targets = [factory]
    names: set[str] = set()
    for target in targets:
        params = inspect.signature(target).parameters
        names |= {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - {"self"}
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            return names
    return None
