"""The double's box of Gaudi modules: which are visible to a process (C4) and who holds each (C5).

- ``HPUBENCH_FAKE_HPU_COUNT`` modules (ids ``0..N-1``) are in the box.
- ``HABANA_VISIBLE_MODULES`` (comma list of module ids) limits a process to those modules, in that order:
  ``device_count()`` is how many of them exist.
- ``HLS_MODULE_ID`` picks the process's module; it must be a visible module. Without it a process gets
  the first visible module no other process holds.
- One process per card: the process acquires its module the first time it touches the device
  (``set_device``, ``synchronize``, memory queries, ``mark_step``, ``Event.record``, an hccl group).
  The hold is an exclusive ``flock`` on a file per module, in a directory under the system temp dir keyed
  by where this double lives (each checkout its own box), so it ends when the process exits (``os._exit``
  and crashes included) or calls ``release()``. Acquiring a module another live process holds raises
  the bridge-like ``RuntimeError`` ("Device acquire failed").

``held_modules()`` answers "which cards are held, by which pid"; it and ``release()`` are the double's own
API, not the bridge's.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
from pathlib import Path
from typing import IO

from habana_frameworks import _lifecycle
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
    """The visible module ids in order, as listed (ids not in the box included: acquiring them fails)."""
    raw = os.environ.get(VISIBLE_ENV, "").strip()
    if not raw:
        return box_modules()
    try:
        return [int(part) for part in raw.split(",") if part.strip()]
    except ValueError:
        raise RuntimeError(f"{VISIBLE_ENV}={raw!r} is not a comma list of module ids") from None


def visible_count() -> int:
    box = set(box_modules())
    return sum(1 for m in visible_modules() if m in box)


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


def acquire() -> int:
    """This process's module, acquiring it on first use; raises RuntimeError as the bridge does."""
    current = held_module()
    if current is not None:
        return current
    visible = visible_modules()
    box = set(box_modules())
    wanted = os.environ.get(MODULE_ENV, "").strip()
    if wanted:
        try:
            module = int(wanted)
        except ValueError:
            raise RuntimeError(f"{ACQUIRE_FAILED} {MODULE_ENV}={wanted!r} is not a module id") from None
        if module not in visible or module not in box:
            raise RuntimeError(
                f"{ACQUIRE_FAILED} {MODULE_ENV}={module} is not one of the visible modules "
                f"{[m for m in visible if m in box]}"
            )
        f = _try_lock(module)
        if f is None:
            raise RuntimeError(f"{ACQUIRE_FAILED} module {module} is held by process {_holder(module)}")
    else:
        candidates = [m for m in visible if m in box]
        f, module = None, -1
        for module in candidates:
            f = _try_lock(module)
            if f is not None:
                break
        if f is None:
            raise RuntimeError(f"{ACQUIRE_FAILED} no free module among the visible modules {candidates}")
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


# The bridge's cleanup (``_hpu_C.cleanup``, what hpubench's ``Accelerator.release`` calls before its
# workers' ``os._exit``) gives the card back before the process ends.
_lifecycle.on_release(release)
