"""Loads the double's device runtime into torch: ``_native/hpu_runtime.cpp`` (see its header).

Stock CPU torch keeps a tensor on ``"hpu"`` only when a C++ device guard and the HPU hooks are registered,
as the real bridge's library does; torch has no Python API for either. So the double compiles that small
source once per torch build with the host C++ compiler (``$CXX``, else ``c++``; about 3 s, against torch's
own headers and libraries) into ``<tempdir>/hpubench-fake-hpu-<hash>/``, and every later process loads the
cached library. Concurrent first builds are serialised by a lock file; the library is renamed into place
only when complete.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import torch

from habana_frameworks import _cards

SOURCE = Path(__file__).resolve().parent / "_native" / "hpu_runtime.cpp"
CXX_ENV = "CXX"
_LOADED: ctypes.CDLL | None = None


def _library_path() -> Path:
    torch_dir = Path(torch.__file__).resolve().parent
    key = hashlib.sha1(
        SOURCE.read_bytes() + f"{torch.__version__}|{torch_dir}|{sys.platform}".encode()
    ).hexdigest()[:16]
    return _cards.lock_dir() / f"hpu_runtime-{key}.so"


def _compile(target: Path) -> None:
    torch_dir = Path(torch.__file__).resolve().parent
    cxx = os.environ.get(CXX_ENV) or "c++"
    if shutil.which(cxx) is None:
        raise RuntimeError(
            f"habana_frameworks test double: no C++ compiler ({cxx!r}) to build its HPU device runtime "
            f"from {SOURCE}; install one (e.g. g++) or set {CXX_ENV}"
        )
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    cmd = [
        cxx, "-std=c++20", "-O1", "-w", "-shared", "-fPIC", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
        f"-I{torch_dir / 'include'}", str(SOURCE), f"-L{torch_dir / 'lib'}", "-lc10", "-ltorch_cpu",
        f"-Wl,-rpath,{torch_dir / 'lib'}", "-o", str(partial),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(
            f"habana_frameworks test double: building its HPU device runtime failed:\n{done.stderr[-4000:]}"
        )
    partial.replace(target)


def load(device_count: int) -> None:
    """Build if needed, load once per process, and tell the runtime how many devices there are."""
    global _LOADED
    if _LOADED is None:
        target = _library_path()
        if not target.exists():
            with open(target.with_suffix(".lock"), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not target.exists():
                    _compile(target)
        _LOADED = ctypes.CDLL(str(target), mode=ctypes.RTLD_GLOBAL)
    _LOADED.hpubench_fake_hpu_set_device_count(ctypes.c_int(device_count))
    # Autograd runs a non-CPU device's backward on a per-device thread, made once per process at its
    # first backward for the devices counted then; the double's count may have been 0. With
    # multithreading off for this thread, backward runs in the calling thread instead. A backward
    # before this library loaded at all still breaks HPU autograd: tests/conftest.py loads it first.
    torch.autograd.set_multithreading_enabled(False)


def retire() -> None:
    """For tests that drop the double from a process: torch sees no HPU any more (the library cannot be
    unloaded; with no device it reports the HPU accelerator absent) and autograd threads as before."""
    if _LOADED is not None:
        _LOADED.hpubench_fake_hpu_set_device_count(ctypes.c_int(0))
        torch.autograd.set_multithreading_enabled(True)
