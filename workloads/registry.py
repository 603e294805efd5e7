"""Workload registry: the reference workloads, entry points (group ``hpubench.workloads``) and files.

Adding a workload is one new module that defines a ``Workload`` subclass decorated with ``register``
(``workloads.register``; the built-ins import it from here, so they never import the package that imports
them).
Classes are checked when they register, not when a benchmark first touches them, so a broken third-party
workload is reported once, up front, instead of failing every cell that names it.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.metadata
import importlib.util
import inspect
import os
import re
import sys
import traceback
import types
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType

from hpubench.errors import UsageError
from hpubench.plan.extrawork import HARNESS_OPTIONS
from hpubench.plan.modeldirs import is_lightning_source
from workloads import hf, lightning
from workloads.base import SizeSpec, Workload

ENTRY_POINT_GROUP = "hpubench.workloads"
BUILTIN_SIZES = ("tiny", "standard")
# Names end up in "/"-joined cell keys, file names and table cells, so keep them to plain words.
# One "family:" prefix is allowed (hf:gpt2): a family's workloads run only when named, never under "all".
_NAME_RE = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9_.-]*:)?[A-Za-z0-9][A-Za-z0-9_.-]*")
_FILE_FIX = "fix the file or drop --workloads-from"
_FILE_MODULE_PREFIX = "hpubench_workload_file_"

_REGISTRY: dict[str, type[Workload]] = {}


class InvalidWorkload(ValueError):
    """A class that cannot be registered; a ValueError so plain callers need not know this type."""


def register(cls: type[Workload]) -> type[Workload]:
    """Class decorator adding a workload to the registry after checking it is usable.

    Re-registering the same class, or a class of the same qualified name (a file loaded again), replaces
    the entry; a different class taking an existing name is refused so a plugin cannot shadow a built-in.
    """
    _validate(cls)
    existing = _REGISTRY.get(cls.name)
    if existing is not None and _identity(existing) != _identity(cls):
        raise InvalidWorkload(
            f"workload name {cls.name!r} of {_qualname(cls)} is already taken by {_qualname(existing)}"
        )
    _REGISTRY[cls.name] = cls
    return cls


def get(name: str, options: Mapping[str, str] | None = None) -> Workload:
    """An instance of workload ``name``; ``options``: the cell's option values, as ``instance.options``."""
    try:
        cls = _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(names())}") from None
    instance = cls()
    if options:
        instance.options = MappingProxyType({str(k): str(v) for k, v in options.items()})
    return instance


def names() -> list[str]:
    return sorted(_REGISTRY)


def catalog() -> dict[str, tuple[str, ...]]:
    """Workload name -> its sizes: the pure facts the matrix validates against."""
    return {n: tuple(_REGISTRY[n].sizes) for n in names()}


def option_catalog() -> dict[str, list[str]]:
    """Workload name -> every option name a cell of it accepts: the harness's and its own."""
    return {
        n: sorted(set(HARNESS_OPTIONS) | set(getattr(_REGISTRY[n], "workload_options", {}) or {}))
        for n in names()
    }


def unavailable() -> dict[str, str]:
    """Workload name -> why it cannot run here (``Workload.unavailable``), for those that cannot."""
    return {n: str(_REGISTRY[n].unavailable) for n in names() if _REGISTRY[n].unavailable}


def load_config_dir(path: str | os.PathLike[str]) -> list[str]:
    """Register the transformers model of a directory holding a ``config.json`` as ``hf:<dir name>``."""
    shown = os.fspath(path)
    try:
        cls = hf.class_for_directory(shown)
    except ValueError as exc:
        fix = "give a directory holding a transformers config.json"
        raise UsageError(f"model directory {shown!r}: {exc}; {fix}") from None
    existing = _REGISTRY.get(cls.name)
    if existing is not None and getattr(existing, "config_dir", None) != cls.config_dir:
        raise UsageError(
            f"model directory {shown!r} would be workload {cls.name!r}, already taken by "
            f"{getattr(existing, 'config_dir', None) or _qualname(existing)}; rename one directory"
        )
    cls.unavailable = hf.transformers_missing()
    _REGISTRY[cls.name] = cls
    return [cls.name]


def load_lightning(source: str) -> list[str]:
    """Register the LightningModule of a source ``lightning:/abs/FILE.py:CLASS`` as ``lightning:CLASS``."""
    cls = lightning.load(source)
    existing = _REGISTRY.get(cls.name)
    if existing is not None and getattr(existing, "source", None) != cls.source:
        raise UsageError(f"{source} would be workload {cls.name!r}, already taken by {_qualname(existing)}")
    _validate(cls)
    _REGISTRY[cls.name] = cls
    return [cls.name]


def load_entry_points() -> list[str]:
    """Register the workloads that installed packages advertise; returns the names added.

    An entry point names either a ``Workload`` subclass or a module whose import registers workloads.
    A broken plugin raises ``UsageError`` rather than being skipped: a silently missing workload would
    only show up later as an "unknown workload" with no hint of why.
    """
    added: list[str] = []
    before = dict(_REGISTRY)
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = f"workload entry point {ep.name!r} ({ep.value})"
        fix = "fix or uninstall the package that provides it"
        with _recording() as new:
            try:
                obj = ep.load()
                if inspect.isclass(obj):
                    if not issubclass(obj, Workload):
                        raise InvalidWorkload(f"{_qualname(obj)} is not a Workload subclass")
                    if _REGISTRY.get(getattr(obj, "name", None)) is not obj:
                        register(obj)
                elif not isinstance(obj, types.ModuleType):
                    kind = type(obj).__name__
                    raise InvalidWorkload(f"it resolves to a {kind}, not a Workload class or module")
            except InvalidWorkload as exc:
                _restore(before)
                raise UsageError(f"{where} is invalid: {_one_line(str(exc))}; {fix}") from exc
            except Exception as exc:
                _restore(before)
                raise UsageError(f"{where} failed to load: {_describe(exc, None)}; {fix}") from exc
        added += new
    return sorted(set(added))


def load_file(path: str | os.PathLike[str]) -> list[str]:
    """Import a Python file so its ``@register`` classes become available; returns the names added.

    The module name is derived from the absolute path: unique per file, yet stable, so loading the same
    file twice replaces its workloads instead of colliding with them. Any failure leaves the registry as
    it was and raises ``UsageError`` with one line naming the file, the problem and the fix. A directory
    holding a transformers ``config.json`` registers its model instead (:func:`load_config_dir`).
    """
    shown = os.fspath(path)
    if is_lightning_source(shown):  # -w lightning:FILE.py:CLASS, as hpubench.plan.modeldirs passes it
        return load_lightning(shown)
    where = f"workload file {shown!r}"
    full = os.path.abspath(shown)
    if os.path.isfile(os.path.join(full, "config.json")):  # a transformers model directory
        return load_config_dir(full)
    if not os.path.isfile(full):
        problem = "is not a file" if os.path.exists(full) else "does not exist"
        raise UsageError(f"{where} {problem}; check the path or drop --workloads-from")
    digest = hashlib.sha1(full.encode()).hexdigest()[:12]
    mod_name = f"{_FILE_MODULE_PREFIX}{digest}"
    loader = importlib.machinery.SourceFileLoader(mod_name, full)
    spec = importlib.util.spec_from_file_location(mod_name, full, loader=loader)
    assert spec is not None  # an explicit loader always yields a spec
    module = importlib.util.module_from_spec(spec)
    before = dict(_REGISTRY)
    previous_module = sys.modules.get(mod_name)
    sys.modules[mod_name] = module  # dataclasses and pickling look classes up here while importing

    def fail(message: str) -> UsageError:
        _restore(before)
        if previous_module is None:
            sys.modules.pop(mod_name, None)
        else:
            sys.modules[mod_name] = previous_module
        return UsageError(f"{where} {message}")

    with _recording() as added:
        try:
            loader.exec_module(module)
        except SyntaxError as exc:
            if exc.filename and os.path.abspath(exc.filename) != full:  # raised by a module it imports
                raise fail(f"failed to import: {_describe(exc, None)}; {_FILE_FIX}") from exc
            problem = f"has a syntax error: {_one_line(str(exc.msg))} (line {exc.lineno})"
            raise fail(f"{problem}; {_FILE_FIX}") from exc
        except InvalidWorkload as exc:
            raise fail(f"defines an invalid workload: {_one_line(str(exc))}; {_FILE_FIX}") from exc
        except (Exception, SystemExit) as exc:
            raise fail(f"failed to import: {_describe(exc, full)}; {_FILE_FIX}") from exc
    if not added:
        unregistered = [
            n
            for n, obj in vars(module).items()
            if inspect.isclass(obj) and issubclass(obj, Workload) and obj.__module__ == mod_name
        ]
        hint = f" (it defines {', '.join(unregistered)} without @register)" if unregistered else ""
        raise fail(
            f"registers no workload{hint}; decorate a Workload subclass with @workloads.register "
            "or drop --workloads-from"
        )
    for name in added:
        if "tiny" not in _REGISTRY[name].sizes:
            raise fail(
                f"defines workload {name!r} without a 'tiny' size, which the default matrix runs; "
                f"add sizes['tiny'] or drop --workloads-from"
            )
    return sorted(added)


def _validate(cls: type[Workload]) -> None:
    if not (inspect.isclass(cls) and issubclass(cls, Workload)):
        raise InvalidWorkload(f"{cls!r} is not a Workload subclass")
    where = f"workload class {_qualname(cls)}"
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise InvalidWorkload(f"{where} needs a name of letters, digits, '_', '.' or '-', got {name!r}")
    sizes = getattr(cls, "sizes", None)
    if not isinstance(sizes, dict) or not sizes:
        raise InvalidWorkload(f"{where} needs sizes, a non-empty dict of size name -> SizeSpec")
    for size, spec in sizes.items():
        if not isinstance(size, str) or not isinstance(spec, SizeSpec) or spec.batch_size < 1:
            raise InvalidWorkload(f"{where} has a bad size {size!r}: need a SizeSpec with batch_size >= 1")
        if not _NAME_RE.fullmatch(size):  # sizes are part of cell keys, which "/" separates
            raise InvalidWorkload(f"{where} has a size name {size!r}; use letters, digits, '_', '.' or '-'")
    if _is_builtin(cls):
        missing = [s for s in BUILTIN_SIZES if s not in sizes]
        if missing:
            raise InvalidWorkload(f"{where} is built in and lacks size(s) {', '.join(missing)}")
    if inspect.isabstract(cls):
        todo = ", ".join(sorted(cls.__abstractmethods__))
        raise InvalidWorkload(f"{where} does not implement {todo}")


def _is_builtin(cls: type) -> bool:
    return cls.__module__.split(".")[0] == __name__.split(".")[0]  # defined in the workloads package


def _identity(cls: type) -> tuple[str, str]:
    return cls.__module__, cls.__qualname__


def _qualname(cls: type) -> str:
    """``module.Class``, or ``file.py:Class`` for a class from a loaded file (its module name is a hash)."""
    if cls.__module__.startswith(_FILE_MODULE_PREFIX):
        file = getattr(sys.modules.get(cls.__module__), "__file__", None)
        if file:
            return f"{os.path.basename(file)}:{cls.__qualname__}"
    return f"{cls.__module__}.{cls.__qualname__}"


@contextmanager
def _recording() -> Iterator[list[str]]:
    """Collect the names whose registry entry changed inside the block (new or replaced)."""
    before = dict(_REGISTRY)
    added: list[str] = []
    try:
        yield added
    finally:
        added += sorted(n for n, c in _REGISTRY.items() if before.get(n) is not c)


def _restore(snapshot: dict[str, type[Workload]]) -> None:
    _REGISTRY.clear()
    _REGISTRY.update(snapshot)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _describe(exc: BaseException, filename: str | None) -> str:
    """``Type: message``, plus the line in ``filename`` where it was raised when there is one."""
    message = _one_line(str(exc))
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    if filename is not None:
        lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
        if lines:
            text += f" (line {lines[-1]})"
    return text
