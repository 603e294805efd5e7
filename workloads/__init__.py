"""Workloads: the registry (``workloads.registry``), the base class (``workloads.base``) and the built-ins.

``workloads.register``, ``workloads.get`` and the rest are the registry's; importing this package
registers the reference workloads (bert, gpt, llama, mlp, resnet) and the ``hf:`` family, and offers
``workloads.wrap`` (any ``nn.Module`` and a batch function as a workload).
"""

from __future__ import annotations

from workloads import bert, gpt, hf, llama, mlp, resnet  # noqa: F401  (the built-ins register on import)
from workloads.registry import (
    BUILTIN_SIZES,
    ENTRY_POINT_GROUP,
    InvalidWorkload,
    catalog,
    get,
    load_config_dir,
    load_entry_points,
    load_file,
    names,
    option_catalog,
    register,
    unavailable,
)
from workloads.wrapped import wrap

for _cls in hf.builtin_classes():
    _cls.unavailable = hf.transformers_missing()
    register(_cls)

__all__ = [
    "BUILTIN_SIZES",
    "ENTRY_POINT_GROUP",
    "InvalidWorkload",
    "catalog",
    "get",
    "load_config_dir",
    "load_entry_points",
    "load_file",
    "names",
    "option_catalog",
    "register",
    "unavailable",
    "wrap",
]
