"""``-w hf:/path/to/dir`` and ``-w lightning:FILE.py:CLASS``: a model named on the command line by a path.

Cell keys are "/"-joined, so a path cannot be a workload name. A value of ``--workload`` that is ``hf:``
followed by a path (it holds "/" or starts with "." or "~") becomes the workload ``hf:<directory name>``,
and the directory joins the ``--workloads-from`` sources, which every process that builds models loads
(``workloads.load_config_dir``). A ``lightning:FILE.py:CLASS`` value becomes the workload
``lightning:CLASS`` and the source ``lightning:/absolute/FILE.py:CLASS`` (``workloads.lightning.load``).
Pure: no torch, no transformers, no Lightning.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from hpubench.errors import UsageError

PREFIX = "hf:"
LIGHTNING_PREFIX = "lightning:"
_CLASS_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def directory_name(path: str) -> str:
    """The name part of a model directory's workload ``hf:<name>``: its base name, in the characters
    workload names may hold."""
    base = os.path.basename(os.path.normpath(path)) or "config"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", base).lstrip("_.-") or "config"


def is_path(value: str) -> bool:
    rest = value[len(PREFIX) :]
    return value.startswith(PREFIX) and ("/" in rest or rest.startswith((".", "~")))


def split_model_dirs(workload_flags: list[str] | None) -> tuple[list[str] | None, list[Path]]:
    """``--workload`` values with each ``hf:<path>`` replaced by ``hf:<name>`` (each ``lightning:FILE:CLASS``
    by ``lightning:CLASS``), and the directories (and Lightning sources) to load.

    A directory without a ``config.json`` is refused (UsageError naming it and the fix), as are two
    directories that would share a name.
    """
    if not workload_flags:
        return workload_flags, []
    values: list[str] = []
    dirs: dict[str, Path] = {}
    for flag in workload_flags:
        for value in (v.strip() for v in flag.split(",")):
            if value.startswith(LIGHTNING_PREFIX):
                name, source = lightning_source(value)
                other = dirs.get(name)
                if other is not None and str(other) != source:
                    raise UsageError(
                        f"--workload {value}: {other} and {source} would both be workload {name}; "
                        "rename one class"
                    )
                values.append(name)
                dirs[name] = Path(source)
                continue
            if not is_path(value):
                values.append(value)
                continue
            path = Path(os.path.expanduser(value[len(PREFIX) :]))
            if not (path / "config.json").is_file():
                raise UsageError(
                    f"--workload {value}: {str(path)!r} holds no config.json; give a directory holding a "
                    "transformers config.json, or a model type such as hf:gpt2"
                )
            name = directory_name(str(path))
            other = dirs.get(name)
            if other is not None and other.resolve() != path.resolve():
                raise UsageError(
                    f"--workload {value}: {str(path)!r} and {str(other)!r} would both be workload "
                    f"{PREFIX}{name}; rename one directory"
                )
            dirs[name] = path
            values.append(PREFIX + name)
    return values, list(dirs.values())


def with_model_dirs(
    dims: dict[str, list[str] | None] | None, workloads_from: list[Path] | None
) -> tuple[dict[str, list[str] | None], list[Path]]:
    """A command's dimension flags and ``--workloads-from`` with every ``-w hf:<path>`` applied."""
    dims = dict(dims or {})
    dims["workload"], dirs = split_model_dirs(dims.get("workload"))
    return dims, [*(workloads_from or []), *dirs]


def lightning_source(value: str) -> tuple[str, str]:
    """``lightning:FILE.py:CLASS`` -> (workload ``lightning:CLASS``, source ``lightning:/abs/FILE.py:CLASS``);
    UsageError naming the fix where it is not of that form or the file does not exist."""
    rest = value[len(LIGHTNING_PREFIX) :]
    path, _, cls = rest.rpartition(":")
    if not path.endswith(".py") or not _CLASS_RE.fullmatch(cls):
        raise UsageError(
            f"--workload {value}: give lightning:FILE.py:CLASS, the Python file and the LightningModule "
            "class it defines, e.g. lightning:models/lit.py:LitModel"
        )
    full = os.path.abspath(os.path.expanduser(path))
    if not os.path.isfile(full):
        raise UsageError(f"--workload {value}: {path!r} does not exist; give the file that defines {cls}")
    return LIGHTNING_PREFIX + cls, f"{LIGHTNING_PREFIX}{full}:{cls}"


def split_lightning_source(source: str) -> tuple[str, str]:
    """A source ``lightning:/abs/FILE.py:CLASS`` as (path, class)."""
    path, _, cls = source[len(LIGHTNING_PREFIX) :].rpartition(":")
    return path, cls


def is_lightning_source(source: str) -> bool:
    return source.startswith(LIGHTNING_PREFIX)
