"""Workloads: the registry (``workloads.registry``), the base class (``workloads.base``) and the built-ins.

``workloads.register``, ``workloads.get`` and the rest are the registry's; importing this package
registers the reference workloads (bert, gpt, mlp, resnet).
"""

from __future__ import annotations

from workloads import bert, gpt, mlp, resnet  # noqa: F401  (the built-ins register on import)
from workloads.registry import (
    BUILTIN_SIZES,
    ENTRY_POINT_GROUP,
    InvalidWorkload,
    catalog,
    get,
    load_entry_points,
    load_file,
    names,
    option_catalog,
    register,
)

__all__ = [
    "BUILTIN_SIZES",
    "ENTRY_POINT_GROUP",
    "InvalidWorkload",
    "catalog",
    "get",
    "load_entry_points",
    "load_file",
    "names",
    "option_catalog",
    "register",
]
