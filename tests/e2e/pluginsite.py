"""Installing a plugin package the way pip leaves one, for the tests of each entry-point group: its module
and a ``.dist-info`` (METADATA and entry_points.txt) in a folder put on a child's ``PYTHONPATH``."""

from __future__ import annotations

import os
from pathlib import Path


def install(site: Path, module: str, source: str | None, group: str, entries: str) -> dict[str, str]:
    """Lay ``module`` (its ``source``, unless written already) and its distribution info out in ``site``,
    advertising ``entries`` ("name = module:object" lines) under ``group``; the environment that installs
    it for a ``python -m hpubench`` child."""
    info = site / f"{module}-0.1.dist-info"
    info.mkdir(parents=True)
    if source is not None:
        (site / f"{module}.py").write_text(source)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entries}\n")
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)}
