"""The double's box of Gaudi modules: which a process may take (C4, C15) and who holds each (C5).

- ``HPUBENCH_FAKE_HPU_COUNT`` modules (ids ``0..N-1``) are in the box; ``device_count()`` is all of them,
  as the bridge's ``synDeviceGetCount`` is: ``HABANA_VISIBLE_MODULES`` does not narrow it (C15).
- A process acquires one module on its first device use (the bridge's ``device::create``):
  ``HLS_MODULE_ID`` set: that module (it must be in the box, free, and listed in
  ``HABANA_VISIBLE_MODULES`` when that is set). If it cannot be had and ``HABANA_VISIBLE_MODULES`` is
  unset (and the box has at least ``WORLD_SIZE`` modules), the bridge warns "Proceeding without moduleid"
  and takes any free module instead: a process can end up on another card than it asked for, and the
  call log says ``card.acquire module=N``. ``HLS_MODULE_ID`` unset: the first free module (among
  ``HABANA_VISIBLE_MODULES`` when set). Otherwise ``RuntimeError("... Device acquire failed.")``.
- One process per card: the hold is an exclusive ``flock`` on a file per module, in a directory under
  the system temp dir keyed by where this double lives (each checkout its own box), so it ends only when
  the process exits (``os._exit`` and crashes included; a forked child inherits it while it lives).

``held_modules()`` answers "which cards are held, by which pid"; it and ``release()`` (what process exit
does, for tests that acquire a card in their own process) are the double's own API, not the bridge's.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
from pathlib import Path
from typing import IO

from habana_frameworks._double import device_count as box_count
from habana_frameworks._double import record

VISIBLE_ENV = "HABANA_VISIBLE_MODULES"
MODULE_ENV = "HLS_MODULE_ID"
ACQUIRE_FAILED = "synStatus=8 [Device not found] Device acquire failed."

_held: dict[str, object] = {}  # "module" -> int, "file" -> the locked file object


def lock_dir() -> Path:
    key = hashlib.sha1(str(Path(__file__).resolve().parent).encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"hpubench-fake-hpu-{key}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def box_modules() -> list[int]:
    return list(range(box_count()))


def visible_modules() -> list[int]:
    """``HABANA_VISIBLE_MODULES`` parsed as the bridge's ``_get_available_modules_from_environ`` does:
    default ``0,...,7``; more than 8 entries assert; an entry that is not an integer raises ValueError."""
    raw = os.environ.get(VISIBLE_ENV, ",".join(str(i) for i in range(8)))
    modules = [int(part) for part in raw.split(",")]
    assert 0 < len(modules) <= 8, f"{VISIBLE_ENV} does not have valid value."
    return modules


def _world_size() -> int:
    raw = os.environ.get("WORLD_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE") or "1"
    return int(raw)


def _lock_path(module: int) -> Path:
    return lock_dir() / f"module-{module}.lock"


def _try_lock(module: int) -> IO[str] | None:
    f = open(_lock_path(module), "a+", encoding="utf-8")  # noqa: SIM115  (held open while the card is)
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        return None
    f.seek(0)
    f.truncate()
    f.write(str(os.getpid()))
    f.flush()
    return f


def _holder(module: int) -> str:
    with contextlib.suppress(OSError):
        return _lock_path(module).read_text(encoding="utf-8").strip() or "?"
    return "?"


def held_module() -> int | None:
    """The module this process holds, if any."""
    module = _held.get("module")
    return module if isinstance(module, int) else None


def _first_free(candidates: list[int]) -> tuple[IO[str] | None, int]:
    for module in candidates:
        f = _try_lock(module)
        if f is not None:
            return f, module
    return None, -1


def acquire() -> int:
    """This process's module, acquiring it on first use; raises RuntimeError as the bridge does."""
    current = held_module()
    if current is not None:
        return current
    box = box_modules()
    restricted = VISIBLE_ENV in os.environ
    allowed = [m for m in visible_modules() if m in box] if restricted else box
    wanted = os.environ.get(MODULE_ENV, "").strip()
    f, module = None, -1
    if wanted:
        module = int(wanted)  # the bridge's std::stoul
        if module in allowed:
            f = _try_lock(module)
        if f is None:
            why = (
                f"module {module} is held by process {_holder(module)}"
                if module in allowed
                else (
                    f"module {module} is not in the box {box}"
                    + (f" or not among {VISIBLE_ENV}" if restricted else "")
                )
            )
            if restricted or len(box) < _world_size():
                raise RuntimeError(f"{ACQUIRE_FAILED} {MODULE_ENV}={module}: {why}")
            record(
                "bridge.warn",
                f"Device acquire failed for hls_mod_id: {module} ({why}). Proceeding without moduleid.",
            )
            f, module = _first_free(box)
    else:
        f, module = _first_free(allowed)
    if f is None:
        raise RuntimeError(f"{ACQUIRE_FAILED} no free module among {allowed}")
    _held.update(module=module, file=f)
    record("card.acquire", f"module={module}")
    return module


def release() -> None:
    """Give the card back (what process exit does too)."""
    f = _held.pop("file", None)
    module = _held.pop("module", None)
    if f is not None:
        with contextlib.suppress(OSError):
            fcntl.flock(f, fcntl.LOCK_UN)  # type: ignore[arg-type]
        f.close()  # type: ignore[attr-defined]
        record("card.release", f"module={module}")


def held_modules() -> dict[int, str]:
    """Module id -> pid of the process holding it, for every module of the box held right now."""
    out: dict[int, str] = {}
    for module in box_modules():
        if module == held_module():
            out[module] = str(os.getpid())
            continue
        f = _try_lock(module)
        if f is None:
            out[module] = _holder(module)
        else:
            fcntl.flock(f, fcntl.LOCK_UN)
            f.close()
    return out
