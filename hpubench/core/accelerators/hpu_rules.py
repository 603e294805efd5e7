"""Gaudi's rules and settings that need no device: generations, precision refusals (C9), visible modules
(C4), op-list variables. Pure: no torch, no bridge import, so the planner and the doctor can ask them on
any machine; ``hpu.py`` (the runtime half) and ``hpu_doctor.py`` use them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from hpubench.errors import UsageError

LOWER_LIST_ENV = "PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST"
FP32_LIST_ENV = "PT_HPU_AUTOCAST_FP32_OPS_LIST"
# The bridge's variable -> the spelling Lightning's docs use. The bridge's own spelling wins when a user
# sets both, because it is the one the library actually reads.
OP_LIST_ALIASES: dict[str, str] = {LOWER_LIST_ENV: "LOWER_LIST", FP32_LIST_ENV: "FP32_LIST"}

ENV_FLAG_PREFIXES: tuple[str, ...] = ("PT_HPU_", "HABANA_", "HLS_")
HABANA_PROFILE_ENV = "HABANA_PROFILE"
HABANA_PROFILE_DEFAULT = "profile_api_light"  # what the bridge sets when HABANA_PROFILE is unset
VISIBLE_MODULES_ENV = "HABANA_VISIBLE_MODULES"
MODULE_ID_ENV = "HLS_MODULE_ID"


def gaudi_generation(device_name: str) -> int | None:
    """1, 2 or 3 from a name like ``"GAUDI2C"``; None when the name says nothing (e.g. ``""``).

    Matched with ``startswith`` from the newest generation down, because ``"GAUDI2B"`` starts with
    ``"GAUDI"`` too and variants (B/C/D suffixes) keep appearing.
    """
    name = device_name.strip().upper()
    if name.startswith("GAUDI3"):
        return 3
    if name.startswith("GAUDI2"):
        return 2
    if name.startswith("GAUDI"):
        return 1
    return None


def precision_refusal(precision: str, device_name: str) -> str | None:
    """Why ``precision`` cannot run on a Gaudi named ``device_name``, or None (C9).

    fp16 and fp8 are refused on first-generation Gaudi; fp8 runs through transformer_engine on Gaudi2+.
    A name that says nothing (``""``) is never refused: the live device decides. One reason for the
    planner's rule and the worker's live checks alike.
    """
    if gaudi_generation(device_name) != 1:
        return None
    if precision == "fp8":
        return (
            f"fp8 training needs Gaudi2 or newer (transformer_engine); {device_name} is a "
            "first-generation Gaudi"
        )
    if precision == "16-mixed":
        return f"fp16 (16-mixed) is not available on first-generation Gaudi ({device_name}); use bf16-mixed"
    return None


def visible_modules(environ: Mapping[str, str]) -> tuple[int, ...]:
    """The module ids ``HABANA_VISIBLE_MODULES`` lists, in order; empty when unset (every module)."""
    raw = environ.get(VISIBLE_MODULES_ENV, "").strip()
    if not raw:
        return ()
    try:
        ids = tuple(int(part) for part in raw.split(",") if part.strip())
    except ValueError:
        ids = ()
    if not ids or any(i < 0 for i in ids) or len(set(ids)) != len(ids):
        raise UsageError(
            f"{VISIBLE_MODULES_ENV}={raw!r} is not a list of distinct module ids; "
            "write e.g. 4,5,6,7 or unset it"
        )
    return ids


def module_for(device_index: int, environ: Mapping[str, str]) -> int:
    """The module id behind device index ``device_index`` (contract C4): the index-th visible module."""
    visible = visible_modules(environ)
    if not visible:
        return device_index
    if not 0 <= device_index < len(visible):
        raise UsageError(
            f"device index {device_index} is out of range: {VISIBLE_MODULES_ENV} names {len(visible)} "
            f"module(s) ({','.join(map(str, visible))}); use indices below {len(visible)} or widen the list"
        )
    return visible[device_index]


def op_list_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The autocast op-list variables to hand to a worker, under the names the bridge reads.

    Paths become absolute so a worker started in another directory still finds the files.
    """
    out: dict[str, str] = {}
    for target, alias in OP_LIST_ALIASES.items():
        value = environ.get(target) or environ.get(alias)
        if value:
            out[target] = os.path.abspath(value)
    return out


def validate_op_list_env(environ: Mapping[str, str] | None = None) -> None:
    """Fail before any worker starts when an op-list file cannot be used.

    The bridge reads these files once at library load inside each worker; a bad path there would show up
    as a crash (or a silently ignored list) in every HPU cell instead of one clear message up front.
    """
    env = os.environ if environ is None else environ
    for target, alias in OP_LIST_ALIASES.items():
        if env.get(target) and env.get(alias) and env[target] != env[alias]:
            raise UsageError(
                f"both {target} and {alias} are set, to different files ({env[target]} and {env[alias]}); "
                f"they name the same op list: unset one of them"
            )
        var = target if env.get(target) else alias
        path = env.get(var)
        if not path:
            continue
        fix = f"point {var} at a text file with one op name per line, or unset it"
        if not os.path.isfile(path):
            raise UsageError(f"{var}={path}: op-list file does not exist; {fix}")
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{var}={path}: op-list file is unreadable ({exc}); {fix}") from None
        if not text.strip():
            raise UsageError(f"{var}={path}: op-list file is empty; {fix}")


def habana_profile_in_force(value: str | None) -> tuple[str, str | None]:
    """The Gaudi profiler in force given ``HABANA_PROFILE`` as this process reads it, and a note when it
    is the bridge's default.

    The bridge sets the variable to its default when it is unset at load (hpu-api.md), so a cell, which
    reads it after the bridge loaded, sees the default rather than "unset"; where the bridge's setting
    does not reach ``os.environ`` the variable still reads unset. Both mean the default is in force.
    """
    if value is None or value == HABANA_PROFILE_DEFAULT:
        return HABANA_PROFILE_DEFAULT, (
            f"HABANA_PROFILE={HABANA_PROFILE_DEFAULT}: the bridge's default Gaudi profiler is in force "
            "(the one it sets when HABANA_PROFILE is unset); set HABANA_PROFILE to choose another"
        )
    return value, None
