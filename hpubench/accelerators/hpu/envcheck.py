"""Settings that stop Intel Gaudi's PyTorch bridge before any cell runs, as ``hpubench doctor`` rules.

Pure: strings and mappings in, findings out; no torch, no bridge. ``hpu_doctor`` gathers the facts (the
torch version, the bridge's ``required_version.txt``, the environment) and merges these findings with
its own. What each rule matches is what the 1.19.0 bridge does at import or at device acquire
(gaudi-pytorch-bridge ``habana_frameworks/torch/__init__.py``, ``hpu/_utils.py``, ``hpu/__init__.py``,
``distributed/hccl/__init__.py``): an AssertionError, ValueError or AttributeError there ends every HPU
cell the same way, so the doctor names it with its fix first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from hpubench.accelerators.hpu.rules import LAZY_MODE_ENV, MODULE_ID_ENV, VISIBLE_MODULES_ENV
from hpubench.measure.doctor import FAIL, OK, WARN, Finding

SECTION = "hpu"
PIN_CHECK = "torch pin"
BUILD_CHECK = "torch build"
LAZY_CHECK = "lazy mode"  # the same check as hpu_doctor.lazy_mode_finding: one line per variable
MAX_VISIBLE_MODULES = 8  # the bridge asserts len(HABANA_VISIBLE_MODULES) <= 8 (hpu/_utils.py)
GAUDI_TORCH = (
    "install the torch the Intel Gaudi software release ships "
    "(Habana's build, versioned like 2.5.1a0+git354fc07)"
)

# PEP 440 as far as the bridge reads it (packaging's Version: major, minor, local label), without
# depending on packaging, which neither hpubench nor torch requires.
_VERSION = re.compile(
    r"^\s*v?(?:\d+!)?(?P<release>\d+(?:\.\d+)*)[^+\s]*(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$",
    re.IGNORECASE,
)


class TorchVersion(NamedTuple):
    """The parts of a torch version the bridge compares: the pin reads major.minor, the build the label."""

    major: int
    minor: int
    local: str | None  # normalised as packaging does: lower case, "-" and "_" read as "."


def parse_version(text: str) -> TorchVersion | None:
    """Major, minor and local label of a PEP 440 version (``"2.5.1a0+git354fc07"``), None when it is not
    one: the bridge compares only these, and tells Habana's torch by a local label starting with "git"."""
    m = _VERSION.match(text)
    if m is None:
        return None
    release = [int(p) for p in m["release"].split(".")]
    local = m["local"].lower().replace("-", ".").replace("_", ".") if m["local"] else None
    return TorchVersion(release[0], release[1] if len(release) > 1 else 0, local)


def lazy_requested(raw: str | None) -> bool:
    """The bridge's ``is_lazy()``: anything but exactly "0" is lazy, unset included (the default "1")."""
    return raw != "0"


# ---- the torch the bridge was built for --------------------------------------------------------------------
def torch_pin_finding(required: str | None, torch_version: str, error: str | None = None) -> Finding | None:
    """The bridge asserts at import that torch's major.minor is the one it was built for
    (``required_version.txt``): any other torch fails every HPU process. None when nothing is known."""
    if error is not None:
        return Finding(
            SECTION,
            PIN_CHECK,
            FAIL,
            f"the bridge's required torch version cannot be read ({error}): its import opens that file",
            "reinstall the Intel Gaudi software (habana-torch-plugin): habana_frameworks/torch/"
            "required_version.txt is part of it",
        )
    if required is None:
        return None
    want, have = parse_version(required), parse_version(torch_version)
    if want is None or have is None:
        bad = (
            f"required_version.txt holds {required.strip()!r}" if want is None else f"torch {torch_version!r}"
        )
        return Finding(
            SECTION,
            PIN_CHECK,
            FAIL,
            f"{bad} is not a version: the bridge's import raises InvalidVersion",
            f"{GAUDI_TORCH}, and reinstall the Intel Gaudi software that matches it",
        )
    shown = required.strip()
    if (want.major, want.minor) != (have.major, have.minor):
        return Finding(
            SECTION,
            PIN_CHECK,
            FAIL,
            f"the bridge was built for torch {shown} but torch {torch_version} is installed: its import "
            f'asserts "Error: Compile-time major/minor PyTorch version {shown} differs from run-time '
            f'{torch_version}."',
            f"install the torch this Intel Gaudi software release ships (torch {want.major}.{want.minor}, "
            f"Habana's build), or the Intel Gaudi software release built for torch {have.major}.{have.minor}",
        )
    return Finding(SECTION, PIN_CHECK, OK, f"the bridge was built for torch {shown}: torch {torch_version}")


def torch_build_finding(torch_version: str, is_fork: bool | None, lazy_raw: str | None) -> Finding | None:
    """Lazy mode needs Habana's torch build: with stock torch the bridge's import asserts in lazy mode, the
    default. ``is_fork`` None: decide as the bridge does, by a local label starting with "git"."""
    if is_fork is None:
        parsed = parse_version(torch_version)
        if parsed is None:
            return None  # torch_pin_finding says so
        if parsed.local is None:
            return Finding(
                SECTION,
                BUILD_CHECK,
                FAIL,
                f"torch {torch_version} has no local version label: the bridge's import raises "
                "AttributeError ('NoneType' object has no attribute 'startswith') in either mode",
                GAUDI_TORCH,
            )
        is_fork = parsed.local.startswith("git")
    if is_fork:
        return Finding(
            SECTION, BUILD_CHECK, OK, f"torch {torch_version} is Habana's build: lazy, eager and compile run"
        )
    if lazy_requested(lazy_raw):
        mode = (
            f"{LAZY_MODE_ENV} unset (lazy, the default)"
            if lazy_raw is None
            else f"{LAZY_MODE_ENV}={lazy_raw!r}"
        )
        return Finding(
            SECTION,
            BUILD_CHECK,
            FAIL,
            f"{mode} with stock torch {torch_version}: the bridge's import asserts "
            f'"Stock PyTorch version {torch_version} is not supported in Lazy mode."',
            f"export {LAZY_MODE_ENV}=0 to run eager and torch.compile cells on this torch; hpubench's lazy "
            f"cells need Habana's build: {GAUDI_TORCH}",
        )
    return Finding(
        SECTION,
        BUILD_CHECK,
        WARN,
        f"stock torch {torch_version}: eager and compile cells run, lazy cells fail (the bridge asserts "
        f'"Stock PyTorch version {torch_version} is not supported in Lazy mode.")',
        f"to run lazy cells: {GAUDI_TORCH}; otherwise leave lazy mode out of the matrix",
    )


# ---- the environment -------------------------------------------------------------------------------------
def lazy_value_finding(raw: str | None) -> Finding | None:
    """Any import of the bridge runs ``int(PT_HPU_LAZY_MODE)`` (its hccl module): a non-integer value
    fails it with ValueError, detection included. None for an integer or unset value."""
    if raw is None:
        return None
    try:
        int(raw)
    except ValueError:
        return Finding(
            SECTION,
            LAZY_CHECK,
            FAIL,
            f"{LAZY_MODE_ENV}={raw!r} is not an integer: any import of the bridge raises ValueError "
            f"(its hccl module reads int({LAZY_MODE_ENV}))",
            f"export {LAZY_MODE_ENV}=1 (lazy) or {LAZY_MODE_ENV}=0 (eager, torch.compile), or unset it",
        )
    return None


def _bridge_ints(raw: str) -> list[int] | None:
    """``HABANA_VISIBLE_MODULES`` as the bridge reads it (``int`` of each comma-separated part)."""
    try:
        return [int(part) for part in raw.split(",")]
    except ValueError:
        return None


def visible_value_finding(raw: str) -> Finding | None:
    """What the bridge's ``_get_available_modules_from_environ`` raises for this value, as a FAIL."""
    fix = (
        f"unset {VISIBLE_MODULES_ENV} (every module) or list up to {MAX_VISIBLE_MODULES} module ids "
        "like 4,5,6,7"
    )
    ids = _bridge_ints(raw)
    if not raw.strip():
        detail = f"{VISIBLE_MODULES_ENV} is set but empty: the bridge raises ValueError (int(''))"
    elif ids is None:
        detail = (
            f"{VISIBLE_MODULES_ENV}={raw!r} has an entry that is not an integer: the bridge raises ValueError"
        )
    elif len(ids) > MAX_VISIBLE_MODULES:
        detail = (
            f"{VISIBLE_MODULES_ENV}={raw} lists {len(ids)} modules: the bridge asserts "
            f'"{VISIBLE_MODULES_ENV} does not have valid value." (at most {MAX_VISIBLE_MODULES})'
        )
    else:
        return None
    return Finding(SECTION, VISIBLE_MODULES_ENV, FAIL, detail, fix)


def module_id_findings(environ: Mapping[str, str]) -> list[Finding]:
    """An ``HLS_MODULE_ID`` outside ``HABANA_VISIBLE_MODULES`` (the device acquire fails), then any
    ``HLS_MODULE_ID`` at all: hpubench picks each process's module itself, and a user's value would pin
    every process that inherits it to one module. The worse comes first."""
    module_raw = environ.get(MODULE_ID_ENV)
    if module_raw is None:
        return []
    visible_raw = environ.get(VISIBLE_MODULES_ENV)
    visible = None
    if visible_raw is not None and visible_value_finding(visible_raw) is None:
        visible = _bridge_ints(visible_raw)
    try:
        module = int(module_raw)
    except ValueError:
        module = None  # hpu_doctor.visible_modules_findings fails it: not one module id
    out: list[Finding] = []
    if module is not None and visible is not None and module not in visible:
        shown = ",".join(map(str, visible))
        out.append(
            Finding(
                SECTION,
                MODULE_ID_ENV,
                FAIL,
                f"{MODULE_ID_ENV}={module_raw} is not among {VISIBLE_MODULES_ENV}={visible_raw}: "
                'acquiring the device fails ("Device acquire failed.") or set_device asserts '
                f'"Requested module_id=... is different from current_module_id={module_raw}"',
                f"unset {MODULE_ID_ENV} (hpubench gives each process a module among {shown}), or set it to "
                f"one of {shown}",
            )
        )
    out.append(
        Finding(
            SECTION,
            MODULE_ID_ENV,
            WARN,
            f"{MODULE_ID_ENV}={module_raw!r} is set in this environment: every process that inherits it "
            "takes that one module (the bridge never replaces a set one)",
            f"unset {MODULE_ID_ENV}: hpubench sets it per process itself; choose the modules with "
            f"{VISIBLE_MODULES_ENV} (e.g. 4,5,6,7)",
        )
    )
    return out


def module_env_findings(environ: Mapping[str, str]) -> list[Finding]:
    """``HABANA_VISIBLE_MODULES`` values the bridge rejects, then ``module_id_findings``."""
    raw = environ.get(VISIBLE_MODULES_ENV)
    bad = visible_value_finding(raw) if raw is not None else None
    return ([bad] if bad is not None else []) + module_id_findings(environ)
