"""Where this hpubench's source lives, for the processes it starts: they must run this very copy.

A worker or probe process runs ``python -m hpubench...``; with the folder that holds ``hpubench/`` and
``workloads/`` first on its ``PYTHONPATH`` it imports this copy (a clone run without installing, or
beside another installed version). Only that folder: a subpackage's folder there would put modules named
``worker``, ``launch`` or ``matrix`` at top level, shadowing any package of the same name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

SOURCE_ROOT = str(Path(__file__).resolve().parents[2])


def with_source_root(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with :data:`SOURCE_ROOT` first on ``PYTHONPATH`` (once), the rest of the path kept."""
    out = dict(env)
    paths = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p and p != SOURCE_ROOT]
    out["PYTHONPATH"] = os.pathsep.join([SOURCE_ROOT, *paths])
    return out
