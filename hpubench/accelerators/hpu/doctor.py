"""What ``hpubench doctor`` checks on Gaudi: the facts (gathered in doctor's child) and the rules (pure).

Kept out of ``hpu.py`` (the hook surface); ``HPUAccelerator.doctor_facts`` / ``doctor_findings`` call here.
This module imports neither torch nor habana at module level and does not import ``hpu.py`` (which
imports it). Facts from ``shared/hpu-api.md`` carry their ids: C2 autoload, C4 visible modules,
C5 one process per card, C6 the lazy-mode variable, C10 HLML handles, C11 hccl.

Versions nobody exposes through Python are read from the kernel driver's sysfs when it is there
(``/sys/module/habanalabs/version``; the firmware's ``cpucp_ver`` attribute, ``armcp_ver`` on older
kernels, under ``/sys/class/accel/accel*/device`` or ``/sys/class/habanalabs/hl*``) and are "unknown"
otherwise: the doctor never guesses a version.

The torch the bridge was built for (its ``required_version.txt``) and whether torch is Habana's build are
read before detection and without importing the bridge, since its import is what they make fail; the
rules for them and for the variables the bridge cannot read are in ``hpu_envcheck``.
"""

from __future__ import annotations

import contextlib
import glob
import importlib
import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from hpubench.accelerators.base import Accelerator
from hpubench.accelerators.hpu import device as hpu_device
from hpubench.accelerators.hpu import envcheck as hpu_envcheck
from hpubench.accelerators.hpu.rules import (
    AUTOLOAD_ENV,
    LAZY_MODE_ENV,
    MODULE_ID_ENV,
    VISIBLE_MODULES_ENV,
)
from hpubench.measure.doctor import FAIL, LEVELS, OK, WARN, DeviceFacts, Finding, device_findings

VISIBLE_ENV = VISIBLE_MODULES_ENV
SECTION = "hpu"
UNKNOWN = "unknown"

DRIVER_VERSION_FILES = ("/sys/module/habanalabs/version",)
FIRMWARE_VERSION_GLOBS = (
    "/sys/class/accel/accel*/device/cpucp_ver",
    "/sys/class/habanalabs/hl*/cpucp_ver",
    "/sys/class/accel/accel*/device/armcp_ver",
    "/sys/class/habanalabs/hl*/armcp_ver",
)
HLML_LIB = "HLML (pyhlml)"
HCCL_LIB = "hccl"
LIBRARY_FIXES = {
    HLML_LIB: "pip install habana-pyhlml and check the driver's /usr/lib/habanalabs/libhlml.so: "
    "without HLML no power or energy is recorded",
    HCCL_LIB: "install the Intel Gaudi software (habana-torch-plugin) matching this torch; multi-card cells "
    "need hccl (C11)",
}


# ---- facts (runtime: in doctor's child) -------------------------------------------------------------------
def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


def _read_first(paths: Sequence[str]) -> str:
    """The stripped content of the first readable file among ``paths`` (globs expanded), else unknown."""
    for pattern in paths:
        for path in sorted(glob.glob(pattern)):
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read().strip()
            except OSError:
                continue
            if text:
                return text.splitlines()[0]
    return UNKNOWN


def _torch_version() -> str | None:
    """The version the bridge compares (``torch.__version__``), without importing torch here."""
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__version__", None):
        return str(torch.__version__)
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def _double_build(facts: dict[str, Any]) -> None:
    """The test double's stand-ins for ``required_version.txt`` and torch's local label (its knobs)."""
    double = importlib.import_module("habana_frameworks._double")
    required = getattr(double, "required_torch_version", None)
    fork = getattr(double, "torch_is_fork", None)
    if callable(required):
        facts["required"] = str(required())
    if callable(fork):
        facts["fork"] = bool(fork())


def bridge_build_facts() -> dict[str, Any] | None:
    """The torch the installed bridge was built for and the torch that is here, read without importing
    the bridge (its import is what fails on a mismatch); None when no bridge is installed."""
    try:
        spec = importlib.util.find_spec("habana_frameworks")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    dirs = [os.path.join(loc, "torch") for loc in locations if os.path.isdir(os.path.join(loc, "torch"))]
    torch_version = _torch_version()
    if not dirs or torch_version is None:
        return None
    facts: dict[str, Any] = {"torch": torch_version, "required": None, "error": None, "fork": None}
    path = os.path.join(dirs[0], "required_version.txt")
    try:
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                facts["required"] = f.read()
        elif getattr(importlib.import_module("habana_frameworks"), "__hpubench_test_double__", False):
            _double_build(facts)
        else:
            facts["error"] = f"{path} does not exist"
    except Exception as exc:  # unreadable file, broken package: the bridge's import would fail the same way
        facts["error"] = _one_line(exc)
    return facts


def _hlml_facts() -> dict[str, Any]:
    """Count, names, module ids and memory of every module HLML sees (C10: index is not the module id).

    ``hlmlDeviceGetModuleID`` is the contract's *inferred* name: without it the ids are the indices, and
    the facts say so.
    """
    import pyhlml  # deferred: optional (hpubench[hlml]); its absence is a fact the doctor reports

    pyhlml.hlmlInit()
    try:
        count = int(pyhlml.hlmlDeviceGetCount())
        module_id = getattr(pyhlml, "hlmlDeviceGetModuleID", None)
        names: list[str] = []
        ids: list[int] = []
        memory: list[tuple[str, int, int]] = []
        for i in range(count):
            h = pyhlml.hlmlDeviceGetHandleByIndex(i)
            name = pyhlml.hlmlDeviceGetName(h)
            names.append(name.decode(errors="replace") if isinstance(name, bytes) else str(name))
            mid = int(module_id(h)) if module_id is not None else i
            ids.append(mid)
            try:
                info = pyhlml.hlmlDeviceGetMemoryInfo(h)
                memory.append((f"module {mid}", int(info.free), int(info.total)))
            except Exception:  # memory is a nicety; the module still counts
                pass
        source = "hlmlDeviceGetModuleID" if module_id is not None else "HLML device indices"
        return {"count": count, "names": names, "module_ids": ids, "memory": memory, "source": source}
    finally:
        with contextlib.suppress(Exception):  # a failed shutdown changes no fact gathered above
            pyhlml.hlmlShutdown()


def _acquire(
    dev: Accelerator, environ: Mapping[str, str], memory: tuple[tuple[str, int, int], ...]
) -> tuple[str, tuple[tuple[str, int, int], ...], tuple[tuple[str, str], ...]]:
    """Acquire a card as a cell would (C5: one another live process holds fails) and read its name and
    memory. The bridge's ``get_device_name`` acquires too, so a card that cannot be acquired leaves the
    name unknown ("") and is reported as unavailable, instead of failing every other fact."""
    mine = f"module {environ[MODULE_ID_ENV]}" if MODULE_ID_ENV in environ else "the first free visible module"
    try:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        name = dev.device_name()
        hpu = hpu_device.hpu_api()
        torch.zeros(1, device=dev.torch_device()).add_(1)
        hpu.synchronize()
        if not memory and hasattr(hpu, "mem_get_info"):
            free, total = hpu.mem_get_info()
            memory = ((mine, int(free), int(total)),)
    except Exception as exc:
        return "", memory, ((mine, _one_line(exc)),)
    return name, memory, ()


def collect_facts(acc_cls: type[Accelerator]) -> DeviceFacts:
    """Everything doctor reports about Gaudi (``acc_cls``: the HPU accelerator), read in a throw-away child
    (importing the bridge fixes the mode). Call it before anything else in that process imports
    ``habana_frameworks``: whether ``import torch`` already loaded the bridge (autoload, C2) is read first."""
    environ = {
        k: os.environ[k] for k in (LAZY_MODE_ENV, AUTOLOAD_ENV, VISIBLE_ENV, MODULE_ID_ENV) if k in os.environ
    }
    extra: dict[str, Any] = {
        "environ": environ,
        "bridge_loaded_by_import_torch": "torch" in sys.modules and "habana_frameworks.torch" in sys.modules,
        # Before detection, and without importing the bridge: one that fails its import is still read.
        "bridge_build": bridge_build_facts(),
    }
    libraries: dict[str, str | None] = {}
    missing: tuple[str, ...] = ()
    hlml: dict[str, Any] | None = None
    try:
        hlml = _hlml_facts()
        libraries[HLML_LIB] = None
    except ImportError as exc:  # optional package (hpubench[hlml]) not installed
        libraries[HLML_LIB], missing = _one_line(exc), (HLML_LIB,)
    except Exception as exc:  # HLMLError at hlmlInit: libhlml.so missing; OSError: a broken install
        libraries[HLML_LIB] = _one_line(exc)
    if hlml is not None:
        extra["module_ids"] = hlml["module_ids"]
        extra["module_ids_source"] = hlml["source"]
    try:
        present = acc_cls.is_available()
        count = acc_cls.device_count() if present else 0
    except Exception as exc:  # a broken bridge: no HPU here, and say why
        present, count = False, 0
        extra["detect_error"] = _one_line(exc)
    if not present or count == 0:
        reason = extra.get("detect_error") or (
            "habana_frameworks is not installed"
            if "habana_frameworks" not in sys.modules
            else "no Gaudi module"
        )
        return DeviceFacts(SECTION, False, absent_reason=str(reason), extra=extra)
    try:
        hpu_device.register_hccl()  # C11: registers the backend
        libraries[HCCL_LIB] = None
    except Exception as exc:
        libraries[HCCL_LIB] = _one_line(exc)
    try:
        extra["lazy_in_force"] = hpu_device.is_lazy()
    except Exception as exc:
        extra["lazy_in_force_error"] = _one_line(exc)
    dev = acc_cls(0)
    versions = dict(dev.software_versions())
    versions["driver"] = _read_first(DRIVER_VERSION_FILES)
    versions["firmware"] = _read_first(FIRMWARE_VERSION_GLOBS)
    if hlml is not None:
        extra["hlml_names"] = hlml["names"]
    memory = tuple(hlml["memory"]) if hlml is not None else ()
    # The bridge's name is the one the matrix rules read (C9); HLML's product names go to the facts.
    name, memory, unavailable = _acquire(dev, environ, memory)
    names = (name,) * count
    return DeviceFacts(
        SECTION,
        True,
        count=count,
        names=names,
        versions=versions,
        libraries=libraries,
        optional_missing=missing,
        memory=memory,
        unavailable=unavailable,
        extra=extra,
    )


# ---- rules (pure) -----------------------------------------------------------------------------------------
def lazy_mode_finding(raw: str | None, lazy_in_force: bool | None) -> Finding:
    """C6: the bridge reads ``PT_HPU_LAZY_MODE`` once at import, "0" eager and anything else lazy."""
    check = "lazy mode"
    broken = hpu_envcheck.lazy_value_finding(raw)  # a value the bridge's import cannot even read
    if broken is not None:
        return broken
    in_force = {True: "lazy", False: "eager", None: UNKNOWN}[lazy_in_force]
    if raw is None:
        return Finding(
            SECTION, check, OK, f"{LAZY_MODE_ENV} unset: the release's default is in force ({in_force})"
        )
    if raw not in ("0", "1"):
        return Finding(
            SECTION,
            check,
            FAIL,
            f"{LAZY_MODE_ENV}={raw!r} is neither 0 nor 1; the bridge reads anything but 0 as lazy "
            f"(in force: {in_force})",
            f"export {LAZY_MODE_ENV}=1 (lazy) or {LAZY_MODE_ENV}=0 (eager, torch.compile), or unset it",
        )
    asked = "lazy" if raw == "1" else "eager"
    if lazy_in_force is not None and asked != in_force:
        return Finding(
            SECTION,
            check,
            WARN,
            f"{LAZY_MODE_ENV}={raw} asks for {asked} but the bridge runs {in_force}: this release ignores it",
            "check the release notes of this Intel Gaudi software for the mode it supports",
        )
    return Finding(SECTION, check, OK, f"{LAZY_MODE_ENV}={raw}: {in_force}")


def autoload_finding(raw: str | None, loaded_by_import_torch: bool) -> Finding:
    """C2: from 1.19 ``import torch`` loads the bridge unless ``PT_HPU_AUTOLOAD=0``."""
    check = "autoload"
    loaded = (
        "import torch loaded the bridge" if loaded_by_import_torch else "import torch did not load the bridge"
    )
    if raw is not None and raw not in ("0", "1"):
        return Finding(
            SECTION,
            check,
            WARN,
            f"{AUTOLOAD_ENV}={raw!r} is neither 0 nor 1 ({loaded})",
            f"export {AUTOLOAD_ENV}=0 (load the bridge only where it is imported) or 1, or unset it",
        )
    shown = f"{AUTOLOAD_ENV}={raw}" if raw is not None else f"{AUTOLOAD_ENV} unset"
    return Finding(SECTION, check, OK, f"{shown}: {loaded}")


def parse_modules(raw: str) -> list[int] | None:
    """``"4,5,6,7"`` -> [4, 5, 6, 7]; None when it is not a comma list of non-negative integers."""
    parts = [p.strip() for p in raw.split(",")]
    if not parts or not all(p.isdigit() for p in parts):
        return None
    return [int(p) for p in parts]


def _machine_module_finding(var: str, raw: str, have: list[int] | None, have_text: str) -> Finding:
    """``raw`` (a ``HABANA_VISIBLE_MODULES`` or ``HLS_MODULE_ID`` value) against the machine's modules."""
    ids = parse_modules(raw)
    if ids is None or (var == MODULE_ID_ENV and len(ids) != 1):
        want = "one module id" if var == MODULE_ID_ENV else "a comma list of module ids like 4,5,6,7"
        fix = f"set {var} to {want}, or unset it"
        return Finding(SECTION, var, FAIL, f"{var}={raw!r} is not {want}", fix)
    if have is None:
        return Finding(
            SECTION,
            var,
            WARN,
            f"{var}={raw}: cannot check it, the machine's module ids are unknown (HLML did not load)",
            "fix HLML (see above) so the module ids can be read",
        )
    missing = [i for i in ids if i not in have]
    if missing:
        return Finding(
            SECTION,
            var,
            FAIL,
            f"{var}={raw} names module {','.join(map(str, missing))}, which does not exist: "
            f"this machine has modules {have_text}",
            f"set {var} to ids among {have_text}, or unset it",
        )
    if len(set(ids)) != len(ids):
        return Finding(SECTION, var, WARN, f"{var}={raw} repeats a module", f"list each module once in {var}")
    return Finding(SECTION, var, OK, f"{var}={raw} (machine: {have_text})")


def visible_modules_findings(environ: Mapping[str, str], module_ids: Sequence[int] | None) -> list[Finding]:
    """C4: ``HABANA_VISIBLE_MODULES`` / ``HLS_MODULE_ID`` must name modules this machine has, and be what
    the bridge can read (``hpu_envcheck``): one verdict per variable, the worse of the two, the bridge's
    words where both say the same.

    ``module_ids``: the machine's modules (from HLML); None when unknown (then nothing can be checked).
    """
    out: list[Finding] = []
    have = sorted(set(module_ids)) if module_ids is not None else None
    have_text = ",".join(map(str, have)) if have is not None else UNKNOWN
    visible = environ.get(VISIBLE_ENV)
    if visible is None:
        every = f"{VISIBLE_ENV} unset: every module ({have_text})"
        out.append(Finding(SECTION, "visible modules", OK, every))
    else:
        unreadable = hpu_envcheck.visible_value_finding(visible)
        out.append(unreadable or _machine_module_finding(VISIBLE_ENV, visible, have, have_text))
    module = environ.get(MODULE_ID_ENV)
    if module is not None:
        bridge = hpu_envcheck.module_id_findings(environ)[0]  # the worse: FAIL, else the WARN
        mine = _machine_module_finding(MODULE_ID_ENV, module, have, have_text) if module.strip() else None
        rank = {level: i for i, level in enumerate(LEVELS)}
        out.append(mine if mine is not None and rank[mine.level] > rank[bridge.level] else bridge)
    return out


def bridge_build_findings(build: Mapping[str, Any] | None, environ: Mapping[str, str]) -> list[Finding]:
    """The torch pin and the torch build (``hpu_envcheck``) from ``bridge_build_facts``; none without a
    bridge."""
    if not build:
        return []
    torch_version = str(build["torch"])
    found = (
        hpu_envcheck.torch_pin_finding(build.get("required"), torch_version, build.get("error")),
        hpu_envcheck.torch_build_finding(torch_version, build.get("fork"), environ.get(LAZY_MODE_ENV)),
    )
    return [f for f in found if f is not None]


def findings(facts: DeviceFacts) -> list[Finding]:
    """Every Gaudi finding: the shared device checks, then the bridge's build and settings."""
    out = device_findings(facts, LIBRARY_FIXES)
    environ: Mapping[str, str] = facts.extra.get("environ", {})
    raw_ids = facts.extra.get("module_ids")
    ids = None if raw_ids is None else [int(i) for i in raw_ids]
    build = bridge_build_findings(facts.extra.get("bridge_build"), environ)
    if not facts.present:
        # Settings for a bridge that is not here matter little, but a broken one is still worth saying,
        # above all when it is why no module is visible (HABANA_VISIBLE_MODULES naming only absent ones, a
        # torch the bridge refuses at import, a PT_HPU_LAZY_MODE its import cannot read).
        lazy = hpu_envcheck.lazy_value_finding(environ.get(LAZY_MODE_ENV))
        return (
            out
            + [f for f in build if f.level != OK]
            + ([lazy] if lazy is not None else [])
            + [f for f in visible_modules_findings(environ, ids) if f.level == FAIL]
        )
    lazy_in_force = facts.extra.get("lazy_in_force")
    return [
        *out,
        *build,
        lazy_mode_finding(environ.get(LAZY_MODE_ENV), None if lazy_in_force is None else bool(lazy_in_force)),
        autoload_finding(environ.get(AUTOLOAD_ENV), bool(facts.extra.get("bridge_loaded_by_import_torch"))),
        *visible_modules_findings(environ, ids),
    ]
