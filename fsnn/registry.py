"""One registry API for every kind of component (timm style): neurons, backbones, datasets, tasks, corruptions and
post-training studies are each a :class:`Registry`, looked up, listed, built and validated the same way.

- ``register(name, entry=None, *, options=(), **meta)`` adds an entry (a decorator when ``entry`` is left out) with
  its metadata (a neuron's ``label``, a backbone's ``supports``, a dataset's ``kind``). A registry that declares its
  metadata as a dataclass (``Registry(..., meta=NeuronMeta)``, timm's ``PretrainedCfg``) builds it from ``**meta``
  there, so a missing or unknown field is refused at registration with one error naming the entry and the field;
  ``lazy(name, "module:attribute", extra=...)`` lists one now and imports it when first used (optional libraries).
  Every registry takes the same names, identifiers (:data:`NAME_RULE`: a name becomes a config group's option, a
  ``conf/`` file name and part of a run folder's name), and entries of one kind (a callable unless the registry
  says otherwise); anything else is refused where it is registered;
- ``names("sj_*", supports="graph")``: the registered names, with shell wildcards and metadata filters;
- ``get(name)`` (or ``registry[name]``): the entry; an unknown name is an :class:`UnknownNameError` that names the
  closest registered ones ("did you mean 'flif'?");
- ``create(name, **kwargs)``: ``entry(**kwargs)``; an argument the entry does not take is a ``ValueError`` naming it
  and the closest argument it takes;
- ``schema(name)``: the entry's options as a strict pydantic model, read from the annotated signature of the entry
  (or of the ``options`` sources given at registration; :mod:`fsnn.checks` has the option types). The config layer
  validates a config group with it, so an option is declared once: by the component that takes it. A source with a
  ``check_options(options)`` also refuses combinations there (an :class:`fsnn.checks.OptionError` naming the option),
  and one with ``mode_options`` an option of one mode given under another (:func:`fsnn.checks.check_mode_options`).

Each registry lives beside the components that fill it (:data:`fsnn.neurons.registry.NEURONS`,
:data:`fsnn.models.registry.BACKBONES`, ...); whoever checks names imports that package.

A component that needs an optional library imports it with :func:`require`; without it the user reads one
line naming the ``fsnn[extra]`` to install (:class:`MissingExtraError`).
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import functools
import importlib
import inspect
import re
import typing
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from fsnn.checks import check_mode_options, foreign_option, option_check

#: what every registry's names must be: they become config values, ``conf/<group>/<name>.yaml`` files and parts of run
#: folders' names, where a ``/``, a ``..``, a space or an empty name would escape or break them
NAME_RULE = "an identifier (ASCII letters, digits and _, not starting with a digit)"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def did_you_mean(word, choices: Collection) -> str:
    """``"; did you mean 'x'?"`` for the names of ``choices`` closest to ``word`` (``""`` when none is close)."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=2, cutoff=0.6)
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?" if close else ""


class MissingExtraError(ImportError):
    """An optional library is not installed; the message is one line ending in the ``pip install 'fsnn[extra]'``
    that installs it."""

    def __init__(self, what: str, missing: str, extra: str):
        super().__init__(
            f"{what} needs the optional libraries of fsnn[{extra}] ({missing} is not installed); install "
            f"them with: pip install 'fsnn[{extra}]'"
        )


def require(module: str, what: str, extra: str):
    """Import and return the optional library ``module`` that ``what`` (e.g. ``"backbone 'spikformer'"``) needs;
    :class:`MissingExtraError` naming ``fsnn[extra]`` when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtraError(what, (error.name or module).split(".")[0], extra) from None


class UnknownNameError(KeyError, ValueError):
    """A name no entry of a registry has; ``what``, ``name`` and ``choices`` let a caller reword it."""

    def __init__(self, what: str, name, choices: Collection):
        self.what, self.name, self.choices = what, name, sorted(choices)
        self.suggestion = did_you_mean(name, self.choices)
        super().__init__(f"{what} must be one of {', '.join(self.choices)}, got {name!r}{self.suggestion}")

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


def build_meta(what: str, name: str, meta_type: type, fields: Mapping) -> Any:
    """``meta_type(**fields)``, the metadata of the entry ``name`` of the registry of ``what``; a field ``meta_type``
    does not declare, or one it needs that ``fields`` lacks, is a ``TypeError`` naming the entry, the field and the
    fields it declares (an invalid value is the ``ValueError`` of its ``__post_init__``)."""
    declared = {f.name: f for f in dataclasses.fields(meta_type) if f.init}
    unknown = sorted(set(fields) - set(declared))
    needed = sorted(
        key
        for key, f in declared.items()
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and key not in fields
    )
    if unknown or needed:
        problem = (
            f"has no metadata field {unknown[0]!r}{did_you_mean(unknown[0], declared)}"
            if unknown
            else f"is registered without its {', '.join(map(repr, needed))}"
        )
        raise TypeError(f"{what} {name!r} {problem}; {meta_type.__name__} declares {', '.join(declared)}")
    return meta_type(**fields)


@dataclass
class _Entry:
    obj: Any = None  # None while a lazy entry is not imported
    target: str | None = None  # a lazy entry's "module:attribute"
    extra: str | None = None  # the fsnn extra that installs a lazy entry's library
    meta: Any = field(default_factory=dict)  # the registry's metadata dataclass, or a dict where it declares none
    options: tuple = ()  # where its options are declared, when not in the entry's own signature


class Registry(Mapping):
    """``name -> entry`` for one kind of component; ``what`` names it in messages. ``supplied``: arguments the code
    that builds an entry passes itself (a backbone's ``num_classes``), which are therefore no options of its config.
    ``entries``: what an entry must be, ``(words, test)``; default: a callable (a class or a factory). ``meta``: the
    dataclass every entry's metadata is (:func:`build_meta`), or ``None`` (default: free keywords, kept as a dict). A
    name is registered as an identifier (:data:`NAME_RULE`) and looked up as written or with ``-`` for ``_`` and any
    case (``ogbn-arxiv``)."""

    def __init__(
        self,
        what: str,
        *,
        supplied: Collection[str] = (),
        entries: tuple[str, Callable[[Any], bool]] = ("callable (a class or a function)", callable),
        meta: type | None = None,
    ):
        self.what, self.supplied, self.meta_type = what, frozenset(supplied), meta
        self.entry_rule, self._entry_test = entries
        self._entries: dict[str, _Entry] = {}
        self._schemas: dict[str, type] = {}

    @staticmethod
    def key(name) -> str:
        return str(name).strip().lower().replace("-", "_")

    # -- adding ---------------------------------------------------------------------------------------------------
    def check_name(self, name) -> str:
        """``name`` if it is one this registry takes (:data:`NAME_RULE`), else a ``ValueError`` naming the registry,
        the name and the rule."""
        if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
            raise ValueError(f"a {self.what} name must be {NAME_RULE}, got {name!r}")
        return name

    def check_entry(self, name: str, entry):
        """``entry`` if it is what this registry holds (``entries`` of the constructor), else a ``TypeError`` naming
        the registry, the name and what an entry must be."""
        if not self._entry_test(entry):
            raise TypeError(f"{self.what} {name!r} must be {self.entry_rule}, got {entry!r}")
        return entry

    def _meta(self, name: str, fields: dict):
        return dict(fields) if self.meta_type is None else build_meta(self.what, name, self.meta_type, fields)

    def register(self, name: str, entry=None, /, *, options: Collection = (), **meta):
        """Add ``entry`` under ``name`` (as a decorator without ``entry``); a second, different entry for a name is
        refused.

        Args:
            name: the name to register, an identifier (:data:`NAME_RULE`; a ``ValueError`` otherwise); looked up in
                any case and with ``-`` for ``_``.
            entry: the class or factory (what the registry holds, a ``TypeError`` otherwise); default ``None``:
                returns a decorator that registers what it decorates.
            options: the annotated callables or classes that declare its options, when its own signature does not;
                default ``()`` (its signature).
            **meta: the fields of its metadata (the registry's ``meta`` dataclass), what :meth:`names` filters on
                and :meth:`meta` returns (a backbone's ``supports``, ...); a missing or unknown one is a
                ``TypeError`` naming ``name`` and the field.
        """

        self.check_name(name)

        def add(obj):
            self.check_entry(name, obj)
            built = self._meta(name, meta)
            key = self.key(name)
            old = self._entries.get(key)
            if old is not None and old.obj is not obj:
                raise ValueError(f"{self.what} {name!r} is already registered")
            self._entries[key] = _Entry(obj, meta=built, options=tuple(options))
            self._schemas.pop(key, None)
            return obj

        return add if entry is None else add(entry)

    def lazy(self, name: str, target: str, *, extra: str, **meta) -> None:
        """Register ``target`` (``"package.module:attribute"``), imported when ``name`` is first used; without its
        library that use fails with one message naming the ``fsnn[extra]`` to install. ``name`` follows
        :data:`NAME_RULE`; ``meta`` as in :meth:`register`."""
        self.check_name(name)
        meta = self._meta(name, meta)
        module, _, attribute = str(target).partition(":")
        if not module or not attribute:
            raise ValueError(f"{self.what} {name!r}: target must be 'package.module:attribute', got {target!r}")
        self._entries[self.key(name)] = _Entry(target=target, extra=extra, meta=meta)

    # -- looking up -----------------------------------------------------------------------------------------------
    def names(self, pattern: str = "*", **meta) -> list[str]:
        """Registered names matching the shell wildcard ``pattern`` whose metadata match ``meta`` (a collection
        matches when it holds the value asked for: ``names(supports="graph")``); a field the registry's ``meta``
        dataclass does not declare is a ``ValueError`` naming it."""

        def fits(have, want) -> bool:
            return want in have if isinstance(have, (set, frozenset, tuple, list)) else have == want

        if self.meta_type is not None:
            declared = [f.name for f in dataclasses.fields(self.meta_type)]
            for key in meta:
                if key not in declared:
                    raise ValueError(
                        f"{self.what} metadata has no field {key!r}{did_you_mean(key, declared)}; "
                        f"{self.meta_type.__name__} declares {', '.join(declared)}"
                    )

        def field_of(entry: _Entry, key: str):
            return entry.meta.get(key) if isinstance(entry.meta, dict) else getattr(entry.meta, key, None)

        return sorted(
            name
            for name, entry in self._entries.items()
            if fnmatch.fnmatchcase(name, pattern) and all(fits(field_of(entry, k), v) for k, v in meta.items())
        )

    def _entry(self, name) -> _Entry:
        entry = self._entries.get(self.key(name))
        if entry is None:
            raise UnknownNameError(self.what, name, self._entries)
        return entry

    def meta(self, name):
        """The metadata ``name`` was registered with: an instance of the registry's ``meta`` dataclass, or a copy of
        the dict of its keywords where the registry declares none."""
        meta = self._entry(name).meta
        return dict(meta) if isinstance(meta, dict) else meta

    def get(self, name):
        """The entry of ``name``, imported if it is lazy; :class:`UnknownNameError` for an unknown name."""
        entry = self._entry(name)
        if entry.obj is None:
            module, attribute = entry.target.split(":")
            found = getattr(require(module, f"{self.what} {self.key(name)!r}", entry.extra), attribute)
            entry.obj = self.check_entry(self.key(name), found)
        return entry.obj

    def loaded(self) -> dict:
        """``{name: entry}`` of the entries already imported (lazy ones are left alone)."""
        return {name: entry.obj for name, entry in self._entries.items() if entry.obj is not None}

    __getitem__ = get

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name) -> bool:
        return self.key(name) in self._entries

    # -- building and validating ----------------------------------------------------------------------------------
    def params(self, name) -> set[str] | None:
        """Keyword arguments the entry of ``name`` takes, or ``None`` when it takes any (see :func:`accepted`)."""
        return accepted(self.get(name))

    def create(self, name, **kwargs):
        """``entry(**kwargs)``; an argument the entry does not take is a ``ValueError`` naming it."""
        factory = self.get(name)
        for key, value in kwargs.items():
            if (hint := foreign_option(factory, key, value)) is not None:
                raise ValueError(f"{self.what} {self.key(name)!r}: {key}={value!r}: {hint}")
        allowed = accepted(factory)
        unknown = sorted(set(kwargs) - allowed) if allowed is not None else []
        if unknown:
            raise ValueError(
                f"{self.what} {self.key(name)!r} does not take {unknown}"
                f"{did_you_mean(unknown[0], allowed)}; it takes {sorted(allowed)}"
            )
        return factory(**kwargs)

    def schema(self, name) -> type:
        """A strict pydantic model of the options of ``name`` (without those in ``supplied``): a key it does not list,
        a value of the wrong type, or one its option type refuses, fails validation."""
        key = self.key(name)
        if key not in self._schemas:
            entry = self._entry(key)
            self._schemas[key] = options_model(f"{self.what}:{key}", entry.options or (self.get(key),), self.supplied)
        return self._schemas[key]


def _targets(source) -> list[Callable]:
    """The functions whose parameters are ``source``'s options: a function itself, or a class's ``__init__``
    followed through the ``**kwargs`` it hands to its bases' (a wrapper declares what it wraps with
    ``__wrapped__`` or ``__signature__``)."""
    source = inspect.unwrap(source)
    if not inspect.isclass(source):
        return [source]
    return [c.__init__ for c in source.__mro__ if "__init__" in vars(c) and c is not object]


def accepted(factory: Callable) -> set[str] | None:
    """Keyword arguments of ``factory`` (a function, or a class's ``__init__`` and those of the bases its
    ``**kwargs`` reach); ``None`` when it takes any keyword."""
    names: set[str] = set()
    for target in _targets(factory):
        params = inspect.signature(target).parameters
        names |= {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - {"self"}
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            return names
    return None


#: the default of an option declared without one (a parameter without a default, an attribute of an options record
#: without a value): a config must give it
REQUIRED = inspect.Parameter.empty


def option_fields(source) -> dict[str, tuple[Any, Any]]:
    """``{option: (annotation, default)}`` of a callable (as :func:`accepted` reads it) or of a plain class that
    only annotates its attributes (an options record); the default is :data:`REQUIRED` where none is declared."""
    if inspect.isclass(source) and source.__init__ is object.__init__:
        hints = typing.get_type_hints(source, include_extras=True)
        return {name: (hint, getattr(source, name, REQUIRED)) for name, hint in hints.items()}
    fields: dict[str, tuple[Any, Any]] = {}
    for target in _targets(source):
        for name, p in inspect.signature(target, eval_str=True).parameters.items():
            if name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name not in fields:
                fields[name] = (Any if p.annotation is p.empty else p.annotation, p.default)
    return fields


def options_model(title: str, sources, exclude: Collection[str] = ()) -> type:
    """A strict pydantic model of the options of ``sources`` (merged, the first declaration of a name wins), less
    ``exclude``: unknown keys are refused, ``"3"`` is not 3, ``true`` is not 1, NaN is no number, and an option
    declared without a default (:data:`REQUIRED`) must be given; each field's description is what its option type
    expects (what an error line prints)."""
    from pydantic import ConfigDict, Field, create_model, model_validator

    fields, defaults = {}, {}
    for source in sources:
        for name, (annotation, default) in option_fields(source).items():
            if name in exclude or name in fields:
                continue
            check, optional = option_check(annotation)
            expected = None if check is None else f"null or {check.expected}" if optional else check.expected
            fields[name] = (annotation, Field(... if default is REQUIRED else default, description=expected))
            defaults[name] = default
    config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, arbitrary_types_allowed=True)
    # a combination of options, or this machine, can rule out a value its type allows: a source's check_options, and
    # its mode_options (an option of one mode, given under another, fsnn.checks.check_mode_options)
    checks = [
        *(source.check_options for source in sources if hasattr(source, "check_options")),
        *(
            functools.partial(check_mode_options, source.mode_options, defaults=defaults)
            for source in sources
            if hasattr(source, "mode_options")
        ),
    ]

    def check_combination(model):
        for check in checks:
            check(dict(model))
        return model

    validators = {"check_options": model_validator(mode="after")(check_combination)} if checks else {}
    return create_model(title, __config__=config, __validators__=validators, **fields)
