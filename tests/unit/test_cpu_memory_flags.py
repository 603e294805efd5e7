"""A CPU cell's peak memory is its peak RSS, which glibc's allocator settings move (fsdp vs ddp on gpt
standard read a 0.43 GiB saving by default, 1.01 GiB with MALLOC_MMAP_THRESHOLD_=131072): records say which
were set."""

from __future__ import annotations

import pytest

from hpubench.accelerators.cpu import CPUAccelerator


def test_allocator_settings_in_force_are_recorded_with_the_thread_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "131072")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MALLOCATOR_UNRELATED", "x")
    flags = CPUAccelerator().env_flags()
    assert flags["MALLOC_MMAP_THRESHOLD_"] == "131072"
    assert flags["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2"
    assert flags["OMP_NUM_THREADS"] == "1"
    assert "MALLOCATOR_UNRELATED" not in flags
    assert "torch_num_threads" in flags


def test_without_allocator_settings_none_is_invented(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_ARENA_MAX", "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)
    flags = CPUAccelerator().env_flags()
    assert not [k for k in flags if k.startswith("MALLOC") or k == "GLIBC_TUNABLES"]
