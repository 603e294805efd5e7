"""Plausible hpubench mistakes on the Gaudi path, each one a patch the strict HPU double must catch.

``sitecustomize.py`` beside this file applies the mutant named by ``HPUBENCH_MUTANT`` in every Python
process that has this directory on its path (the test process, workers, ranks), right after the module it
patches is imported; ``tests/contract/test_mutations.py`` runs, per mutant, the tests said to catch it and
requires them to fail. The list and its results are in docs/hpu-contract.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

ENV = "HPUBENCH_MUTANT"
HPU = "hpubench.accelerators.hpu.accelerator"
TWO_RANKS = (
    "tests/contract/test_C13_import_side_effects.py::"
    "test_each_rank_imports_the_bridge_with_its_rank_variables_in_place"
)


@dataclass(frozen=True)
class Mutant:
    mistake: str
    module: str  # patched right after this module is imported
    patch: Callable[[ModuleType], None]
    caught_by: tuple[str, ...]  # test node ids that must fail with the mutant in place


def _cpu_tensor_barrier(strategies: ModuleType) -> None:
    import torch
    import torch.distributed as dist

    def barrier(self: Any) -> None:
        dist.all_reduce(torch.zeros(1))  # a host tensor in an hccl collective

    strategies.DDP.barrier = barrier


def _fork_after_detection(zygote: ModuleType) -> None:
    original = zygote.fork_and_wait

    def fork_and_wait(*args: Any, **kwargs: Any) -> Any:
        from hpubench.accelerators.hpu.accelerator import HPUAccelerator

        HPUAccelerator.is_available()  # the fork server detects, then forks the cell's child
        return original(*args, **kwargs)

    zygote.fork_and_wait = fork_and_wait


def _rank_index(hpu: ModuleType) -> None:
    hpu.HPUAccelerator.rank_device_index = classmethod(lambda cls, cell, local_rank: local_rank)


def _timing_event_in_step(hpu: ModuleType) -> None:
    original = hpu.HPUAccelerator.after_backward

    def after_backward(self: Any) -> None:
        from habana_frameworks.torch import hpu as bridge

        bridge.Event(enable_timing=True).record()  # a phase timer between backward and mark_step
        original(self)

    hpu.HPUAccelerator.after_backward = after_backward


def _no_rank_env(hpu: ModuleType) -> None:
    hpu.HPUAccelerator.rank_env = classmethod(lambda cls, cell, local_rank, environ: {})


def _trust_hbm(rules: ModuleType) -> None:
    rules.card_memory = lambda accelerator, name: (
        None
        if rules.gaudi_generation(name) is None
        else ({1: 32, 2: 96, 3: 128}[rules.gaudi_generation(name)] * 2**30, False)
    )


def _oom_words(hpu: ModuleType) -> None:
    hpu.HPUAccelerator.failure_reason = classmethod(
        lambda cls, exc: "out of device memory" if "out of memory" in str(exc) else None
    )


def _bridge_count(hpu: ModuleType) -> None:
    hpu.HPUAccelerator.device_count = classmethod(lambda cls: hpu.hpu_device.device_count())


def _silent_bridge_refusal(hpu: ModuleType) -> None:
    hpu.HPUAccelerator.unavailable_reason = classmethod(lambda cls: None)


def _cleanup_unset_device(device: ModuleType) -> None:
    def release(self: Any) -> None:
        if device.bridge_loaded():
            device.release_device()  # whether or not this process set the device up

    device.DeviceSession.release = release


MUTANTS: dict[str, Mutant] = {
    "cpu_tensor_in_hccl_collective": Mutant(
        "a barrier as an all-reduce of a host tensor in the hccl group",
        "hpubench.strategy.runtime",
        _cpu_tensor_barrier,
        (TWO_RANKS,),
    ),
    "fork_after_detection": Mutant(
        "the fork server detects devices before it forks a cell's child",
        "hpubench.run.forkserver.server",
        _fork_after_detection,
        ("tests/integration/test_hpu_fork_server.py",),
    ),
    "device_index_per_rank": Mutant(
        "rank i uses device index i in its process (hpu:1 on rank 1)",
        HPU,
        _rank_index,
        (TWO_RANKS,),
    ),
    "timing_event_inside_lazy_step": Mutant(
        "an hpu.Event recorded between backward and the optimizer's mark_step",
        HPU,
        _timing_event_in_step,
        (
            "tests/contract/test_C16_lazy_sync_points.py::test_hpubench_lazy_steps_cut_graphs_only_at_mark_step",
        ),
    ),
    "module_variables_left_to_the_bridge": Mutant(
        "no HLS_MODULE_ID / HABANA_VISIBLE_MODULES set per process before the bridge import",
        HPU,
        _no_rank_env,
        (
            "tests/contract/test_C4_visible_modules.py::"
            "test_a_single_device_cell_runs_on_the_module_of_its_device_index",
        ),
    ),
    "trust_the_hbm_size": Mutant(
        "planning against 32 / 96 / 128 GiB instead of the usable pool",
        "hpubench.accelerators.hpu.rules",
        _trust_hbm,
        (
            "tests/contract/test_C8_out_of_memory.py::test_limit_is_the_usable_pool_and_hpubench_plans_against_it",
        ),
    ),
    "match_out_of_memory_only": Mutant(
        'reading a device OOM by the words "out of memory" only',
        HPU,
        _oom_words,
        (
            "tests/contract/test_C8_out_of_memory.py::"
            "test_a_cell_that_does_not_fit_fails_as_out_of_device_memory_naming_the_size",
        ),
    ),
    "trust_the_bridge_count": Mutant(
        "planning with hpu.device_count() under HABANA_VISIBLE_MODULES",
        HPU,
        _bridge_count,
        ("tests/contract/test_C15_one_device_per_process.py::test_the_count_is_every_module_of_the_host",),
    ),
    "bridge_refusal_reads_as_no_device": Mutant(
        "a bridge that refuses to load (torch pin, lazy on stock torch) reported as plain 'no device'",
        HPU,
        _silent_bridge_refusal,
        ("tests/contract/test_C12_torch_pin.py::test_hpubench_skips_the_cell_with_the_bridges_words",),
    ),
    "cleanup_without_device": Mutant(
        "running the bridge's cleanup in a process that never initialised the device",
        "hpubench.accelerators.hpu.device",
        _cleanup_unset_device,
        (
            "tests/contract/test_C5_one_process_per_card.py::test_hpubench_never_cleans_up_a_device_it_did_not_set_up",
        ),
    ),
}


def apply(name: str, module: ModuleType) -> None:
    mutant = MUTANTS[name]
    if module.__name__ == mutant.module:
        mutant.patch(module)
