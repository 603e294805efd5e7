"""The heap policy's pure half: which malloc thresholds a cell's process gets, and when the user's win."""

from __future__ import annotations

import pytest

from hpubench.errors import UsageError
from hpubench.measure.heap import (
    DEFAULT_HEAP_POLICY,
    HEAP_ENV,
    MMAP_THRESHOLD,
    STEADY_ENV,
    TRIM_THRESHOLD,
    HeapPlan,
    check_heap_env,
    heap_policy,
    plan_heap,
    user_allocator,
)


def test_steady_is_the_default_and_holds_both_thresholds() -> None:
    assert heap_policy({}) == DEFAULT_HEAP_POLICY == "steady"
    assert heap_policy({HEAP_ENV: "  "}) == "steady"
    assert plan_heap("steady", {}) == HeapPlan("steady", TRIM_THRESHOLD, MMAP_THRESHOLD)


def test_the_tip_a_user_exports_holds_what_steady_holds() -> None:
    # doctor and the report tell users to export STEADY_ENV: it must set the thresholds the tuned cells ran at
    steady = plan_heap("steady", {})
    assert {name: int(value) for name, value in STEADY_ENV.items()} == {
        "MALLOC_MMAP_THRESHOLD_": steady.mmap_threshold,
        "MALLOC_TRIM_THRESHOLD_": steady.trim_threshold,
    }


def test_system_sets_nothing() -> None:
    assert heap_policy({HEAP_ENV: "system"}) == "system"
    assert plan_heap("system", {}) == HeapPlan("system")


@pytest.mark.parametrize("value", ["Steady", "fixed", "1", "jemalloc"])
def test_an_unknown_policy_names_the_variable_and_the_choices(value: str) -> None:
    with pytest.raises(ValueError, match=rf"{HEAP_ENV}='{value}'.*steady, system"):
        heap_policy({HEAP_ENV: value})
    with pytest.raises(UsageError, match=HEAP_ENV):
        check_heap_env({HEAP_ENV: value})
    with pytest.raises(ValueError, match="unknown heap policy"):
        plan_heap(value, {})


@pytest.mark.parametrize(
    ("env", "shown"),
    [
        ({"MALLOC_TRIM_THRESHOLD_": "100000"}, "MALLOC_TRIM_THRESHOLD_=100000"),
        ({"MALLOC_MMAP_THRESHOLD_": "65536"}, "MALLOC_MMAP_THRESHOLD_=65536"),
        ({"MALLOC_TOP_PAD_": "0"}, "MALLOC_TOP_PAD_=0"),
        ({"MALLOC_MMAP_MAX_": "0"}, "MALLOC_MMAP_MAX_=0"),
        ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1"}, "GLIBC_TUNABLES=glibc.malloc.trim_threshold=1"),
        ({"LD_PRELOAD": "/usr/lib/libjemalloc.so.2"}, "LD_PRELOAD=/usr/lib/libjemalloc.so.2"),
        ({"LD_PRELOAD": "libtcmalloc_minimal.so"}, "LD_PRELOAD=libtcmalloc_minimal.so"),
    ],
)
def test_a_users_own_allocator_setting_wins_over_either_policy(env: dict[str, str], shown: str) -> None:
    assert user_allocator(env) == shown
    for policy in ("steady", "system"):
        assert plan_heap(policy, env) == HeapPlan(f"user: {shown}")


@pytest.mark.parametrize(
    "env",
    [
        {"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2"},  # a tunable, but not malloc's
        {"LD_PRELOAD": "/usr/lib/libgomp.so.1"},  # a preload, but not an allocator
        {"MALLOC_ARENA_MAX": "2"},  # arenas, not the thresholds
        {"MALLOC_TRIM_THRESHOLD_": ""},
    ],
)
def test_settings_that_leave_the_thresholds_alone_do_not_count_as_the_users(env: dict[str, str]) -> None:
    assert user_allocator(env) is None
    assert plan_heap("steady", env) == HeapPlan("steady", TRIM_THRESHOLD, MMAP_THRESHOLD)
