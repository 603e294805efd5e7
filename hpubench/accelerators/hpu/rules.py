"""Gaudi's rules and settings that need no device: generations, precision refusals (C9), the cells Gaudi
refuses, visible modules and each rank's module (C4), the telemetry module id (C10), op-list variables.
Pure: no torch, no bridge import, so the planner and the doctor can ask them on any machine; ``hpu.py``
(the hook surface) and ``hpu_doctor.py`` use them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from hpubench.errors import UsageError
from hpubench.plan.cell import Cell

LAZY_MODE_ENV = "PT_HPU_LAZY_MODE"
AUTOLOAD_ENV = "PT_HPU_AUTOLOAD"
# ``PT_HPU_AUTOLOAD=0`` in every fork server: its ``import torch`` must not load the bridge. From 1.19
# ``import torch`` loads the bridge (contract C2), so without this every cell child (and the detection and
# probe children) would be forked from a process with the bridge loaded. C3: a child forked after the
# bridge initialised the device cannot use it, and whether a bridge that was only loaded survives a fork
# is not confirmed. With autoload off the bridge is first imported in the forked child
# (``torch_device``/``setup``/detection import it explicitly), so forking is safe under either reading and
# cells keep the fork server's start-up (a fresh interpreter per HPU cell, spawn isolation, would pay
# ``import torch`` and the bridge each time for no safety gained). Spawned workers and distributed ranks
# get the variable too and import the bridge the same way, after their ``env_before_import`` /
# ``rank_env`` variables are set. A user's ``PT_HPU_AUTOLOAD`` is overridden for hpubench's workers only.
FORK_SERVER_ENV: Mapping[str, str] = {AUTOLOAD_ENV: "0"}
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


def cell_refusal(cell: Cell, device_name: str) -> str | None:
    """Combinations Gaudi cannot run; an unknown generation (``""``) is never refused on its grounds.

    The base rules are not reused: they refuse lazy mode and fp8, which exist precisely on HPU. Refusing
    on an unknown name would hide cells that may well run; the live device check (``check_precision``,
    ``graphed_step``) still catches them in the worker.
    """
    first_gen = gaudi_generation(device_name) == 1
    refused = precision_refusal(cell.precision, device_name)
    if refused is not None:
        return refused
    if cell.graphs:
        if cell.mode == "compile":
            return (
                "HPU graphs cannot be combined with torch.compile: HPU graphs for training need lazy "
                "mode, torch.compile needs eager mode (PT_HPU_LAZY_MODE=0)"
            )
        if cell.mode != "lazy":
            return (
                f"HPU graphs for training (ModuleCacher) need lazy mode; mode {cell.mode} runs with "
                "PT_HPU_LAZY_MODE=0, where the graph APIs do not exist"
            )
        if first_gen:
            return (
                f"HPU graphs for training are disabled on first-generation Gaudi ({device_name}), "
                "as in Habana's Model-References"
            )
    return None


GIB = 1024**3
# ``memory_stats()["Limit"]``: the bridge allocator's pool, what a cell can use, below the HBM (32 / 96 /
# 128 GiB). As optimum-habana logs it (bytes / 1024**3, 2 places): Gaudi 29.85 (optimum-habana PR #89),
# Gaudi2 94.62 (ray's intel_gaudi llama example), Gaudi3 126.06 (Intel Gaudi docs 1.23, IBM Cloud quick
# start). docs/hpu-contract.md C8.
USABLE_GIB_BY_GENERATION = {1: 29.85, 2: 94.62, 3: 126.06}
# The bridge's out-of-memory errors (``device_memory.cpp``; ``device.cpp`` for the workspace): no "out of
# memory" in either text, so matching that phrase alone misses every Gaudi OOM (C8).
DEVMEM_FAILED = re.compile(r"MODULE:PT_DEVMEM Allocation failed for size::(\d+)")
WORKSPACE_FAILED = re.compile(r"MODULE:PT_SYNHELPER workspace Allocation of size ::(\d+) failed")


def card_memory(accelerator: str, device_name: str) -> tuple[int, bool] | None:
    """What a cell may allocate on one card of this generation: the allocator's usable pool (C8), from
    the name. Read at detection, which must not acquire a card (C5: the detection child would hold it
    while the cells start). None for a name of no known generation."""
    generation = gaudi_generation(device_name)
    if generation is None:
        return None
    return int(USABLE_GIB_BY_GENERATION[generation] * GIB), False


def device_oom_reason(text: str) -> str | None:
    """A cell's failure text read as the bridge's device out-of-memory error, naming the size asked; None
    when it is not one."""
    for pattern, what in ((DEVMEM_FAILED, "an allocation"), (WORKSPACE_FAILED, "a workspace")):
        found = pattern.search(text)
        if found:
            size = int(found.group(1))
            return (
                f"out of device memory: the card refused {what} of {size} bytes ({size / 2**20:.6g} MiB) "
                f"[{found.group(0)}]; use a smaller size or batch, more cards, or a lower precision"
            )
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


def usable_module_count(host_count: int, environ: Mapping[str, str]) -> int:
    """How many modules a run may use: the bridge's count is every module on the host (C15), so a user's
    ``HABANA_VISIBLE_MODULES`` narrows it (ids beyond the host's count cannot be acquired either)."""
    visible = visible_modules(environ)
    if not visible:
        return host_count
    return sum(1 for module in visible if module < host_count)


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


def rank_module_env(cell: Cell, local_rank: int, environ: Mapping[str, str]) -> dict[str, str]:
    """``HLS_MODULE_ID`` picks this rank's module (contract C4).

    The cell's device indices count the visible modules: with a user's ``HABANA_VISIBLE_MODULES`` (e.g.
    ``4,5,6,7``) index i is the i-th listed module, and their list stays as it is. Without one, index i
    is module i and the process is limited to the cell's modules.
    """
    indices = cell.device_ids if cell.device_ids else tuple(range(cell.devices))
    if visible_modules(environ):
        return {MODULE_ID_ENV: str(module_for(indices[local_rank], environ))}
    return {
        MODULE_ID_ENV: str(indices[local_rank]),
        VISIBLE_MODULES_ENV: ",".join(str(m) for m in indices),
    }


def telemetry_module_id(device_index: int, environ: Mapping[str, str]) -> int:
    """This process's module id, which HLML telemetry looks up (contract C10): the ``HLS_MODULE_ID``
    hpubench gave the process, else the first visible module, else the device index."""
    chosen = environ.get(MODULE_ID_ENV, "").strip()
    if chosen.isdigit():
        return int(chosen)
    visible = visible_modules(environ)
    return visible[0] if visible else device_index


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
