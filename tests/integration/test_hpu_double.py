"""The HPU backend against the habana_frameworks test double (tests/fakes), which follows hpu-api.md.

Each test imports the double fresh, because the bridge fixes the execution mode at import: a test asks
for its ``PT_HPU_LAZY_MODE`` and gets a process state as if it had just started with that environment.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from hpudouble import DOUBLE_ENV, FAKES, Load, fresh_bridge, purge_double
from torch import nn

from hpubench.accelerators.hpu.accelerator import HPUAccelerator
from hpubench.errors import CellSkipped
from hpubench.plan.cell import Cell

GRAPH_APIS = ("wrap_in_hpu_graph", "ModuleCacher", "make_graphed_callables", "HPUGraph", "graph")


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch) -> Iterator[Load]:
    """Import the double fresh with the given mode and knobs (``hpudouble.fresh_bridge``)."""
    yield from fresh_bridge(monkeypatch)


def _calls(core: ModuleType, *names: str) -> list[str]:
    return [name for name, _detail in core.CALLS if not names or name in names]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- detection -----------------------------------------------------------------------------------------
def test_not_available_without_the_double() -> None:
    purge_double()
    if importlib.util.find_spec("habana_frameworks") is not None:
        pytest.skip("a habana_frameworks package is importable here")
    assert HPUAccelerator.is_available() is False
    assert HPUAccelerator.device_count() == 0


@pytest.mark.parametrize(("name", "count"), [("GAUDI2", 8), ("GAUDI3", 4), ("GAUDI", 1), ("GAUDI2C", 2)])
def test_detection_reads_the_knobs(load: Load, name: str, count: int) -> None:
    load(name=name, count=count)
    assert HPUAccelerator.is_available() is True
    assert HPUAccelerator.device_count() == count
    assert HPUAccelerator(0).device_name() == name


def test_no_device_means_unavailable(load: Load) -> None:
    load(count=0)
    assert HPUAccelerator.is_available() is False
    assert HPUAccelerator.device_count() == 0
    assert HPUAccelerator(0).device_name() == ""


def test_core_import_registers_torch_hpu(load: Load) -> None:
    load()
    from habana_frameworks.torch import hpu

    assert torch.hpu is hpu
    assert sys.modules["torch.hpu"] is hpu


def test_setup_selects_the_device(load: Load) -> None:
    """One device per process (C15): hpubench's processes use device 0, the module chosen by
    ``HLS_MODULE_ID``; the bridge refuses any other index where it can tell."""
    core = load(count=2)
    HPUAccelerator(0).setup()
    assert ("hpu.set_device", "0") in core.CALLS
    with pytest.raises(AssertionError, match="the only supported device idx is 0"):
        HPUAccelerator(1).setup()


def test_torch_device_is_the_hpu_device_the_double_owns(load: Load) -> None:
    """hpubench's own device, unpatched; the double keeps tensors there (host data inside)."""
    load()
    device = HPUAccelerator(0).torch_device()
    assert device == torch.device("hpu", 0)
    t = torch.zeros(2, device=device)
    assert t.device == device
    assert (t + 1).device == device and (t + 1).cpu().device == torch.device("cpu")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        t + torch.ones(2)
    with pytest.raises(RuntimeError, match="habana active device: 3 != 0"):
        torch.zeros(2, device=HPUAccelerator(3).torch_device())


# ---- memory and timing -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "limit_gib"), [("GAUDI", 29.85), ("GAUDI2", 94.62), ("GAUDI3", 126.06)])
def test_memory_stats_keys_and_mapping(load: Load, name: str, limit_gib: float) -> None:
    load(name=name)
    # Imported here: this file also runs as a script in a subprocess, where tests/ is not on the path.
    from habana_frameworks.torch import hpu
    from hpudata import HPU_MEMORY_KEYS

    acc = HPUAccelerator(0)
    acc.reset_peak_memory_stats()
    stats = acc.memory_stats()
    assert set(stats.raw) == HPU_MEMORY_KEYS
    assert all(isinstance(v, int) for v in stats.raw.values())
    assert stats.source == "hpu.memory_stats"
    assert stats.limit_bytes == stats.raw["Limit"] == int(limit_gib * 1024**3)
    assert stats.in_use_bytes == stats.raw["InUse"] > 0
    assert stats.peak_allocated_bytes == stats.raw["MaxInUse"] >= stats.raw["InUse"]
    assert (stats.num_allocs, stats.num_frees) == (stats.raw["NumAllocs"], stats.raw["NumFrees"])
    free, total = hpu.mem_get_info()
    assert total == hpu.memory_reserved() == stats.raw["Limit"]
    assert 0 < free < total
    assert hpu.max_memory_allocated() >= hpu.memory_allocated() > 0


def test_event_elapsed_time_in_ms(load: Load) -> None:
    load()
    from habana_frameworks.torch import hpu

    start, end = hpu.Event(enable_timing=True), hpu.Event(enable_timing=True)
    start.record()
    torch.ones(64, 64) @ torch.ones(64, 64)
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0
    with pytest.raises(RuntimeError):
        hpu.Event().elapsed_time(end)


# ---- execution modes -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("env", "requested", "in_force"),
    [
        (None, "lazy", "lazy"),
        (None, "eager", "lazy"),  # 1.19 default is lazy: an unset variable must show as a mismatch
        ("1", "lazy", "lazy"),
        ("1", "compile", "lazy"),
        ("0", "eager", "eager"),
        ("0", "lazy", "eager"),  # requested lazy, got eager: visible, not assumed
        ("0", "compile", "compile"),
    ],
)
def test_mode_in_force_reads_the_bridge(load: Load, env: str | None, requested: str, in_force: str) -> None:
    load(lazy_mode=env)
    assert HPUAccelerator(0).mode_in_force(requested) == in_force


def test_mode_is_fixed_at_import(load: Load) -> None:
    core = load(lazy_mode="1")
    os.environ["PT_HPU_LAZY_MODE"] = "0"
    assert core.is_lazy() is True
    assert HPUAccelerator(0).mode_in_force("eager") == "lazy"


def test_env_before_import_gives_the_mode_in_force(load: Load) -> None:
    for mode in ("lazy", "eager", "compile"):
        env = HPUAccelerator.env_before_import(Cell(workload="mlp", accelerator="hpu", mode=mode))
        load(lazy_mode=env["PT_HPU_LAZY_MODE"])
        assert HPUAccelerator(0).mode_in_force(mode) == mode


def test_lazy_hooks_mark_step(load: Load) -> None:
    core = load(lazy_mode="1")
    acc = HPUAccelerator(0)
    acc.setup()
    acc.after_backward()
    acc.after_optimizer_step()
    assert _calls(core, "core.mark_step") == ["core.mark_step", "core.mark_step"]
    # The mode is read once in setup, not on every step.
    assert _calls(core, "core.is_lazy") == ["core.is_lazy"]


def test_eager_never_marks_step_and_has_no_graph_apis(load: Load) -> None:
    core = load(lazy_mode="0")
    from habana_frameworks.torch import hpu

    acc = HPUAccelerator(0)
    acc.setup()
    acc.after_backward()
    acc.after_optimizer_step()
    assert "core.mark_step" not in _calls(core)
    assert core.mark_step() is None
    for api in GRAPH_APIS:
        assert not hasattr(hpu, api), api
    model = nn.Linear(4, 2)
    with pytest.raises(CellSkipped, match="lazy mode"):
        acc.graph_module(model)


def test_lazy_graphed_step_uses_module_cacher(load: Load) -> None:
    core = load(lazy_mode="1")
    from habana_frameworks.torch import hpu

    assert all(hasattr(hpu, api) for api in GRAPH_APIS)
    acc = HPUAccelerator(0)
    acc.setup()
    model = nn.Linear(4, 2)
    seen: list[nn.Module] = []

    def make_step(m: nn.Module) -> Callable[[tuple[torch.Tensor, ...]], torch.Tensor]:
        seen.append(m)

        def step(batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
            loss = m(batch[0]).sum()
            loss.backward()
            return loss

        return step

    cached = acc.graph_module(model)  # before any strategy wraps it (C17)
    step = acc.graphed_step(make_step, cached, (torch.zeros(3, 4),))
    assert cached is model and seen == [model]  # in place: the model the worker holds is the cached one
    assert ("hpu.ModuleCacher", "max_graphs=10") in core.CALLS
    assert ("hpu.ModuleCacher.__call__", "inplace=True") in core.CALLS
    for _ in range(3):
        step((torch.randn(3, 4),))
    details = [d for n, d in core.CALLS if n == "hpu.cached_forward"]
    assert details == ["capture", "replay", "replay"]


def test_compile_backend_is_provided_by_the_bridge(load: Load) -> None:
    core = load(lazy_mode="0")
    acc = HPUAccelerator(0)
    assert acc.compile_options(graphs=False) == {"backend": "hpu_backend"}
    model = nn.Linear(4, 2)
    compiled = torch.compile(model, **acc.compile_options(graphs=False))
    try:
        x = torch.randn(3, 4)
        torch.testing.assert_close(compiled(x), model(x))
    finally:
        torch._dynamo.reset()
    assert "dynamo.hpu_backend" in _calls(core)
    assert acc.mode_in_force("compile") == "compile"


def test_double_refuses_to_replay_a_raw_graph(load: Load) -> None:
    load(lazy_mode="1")
    from habana_frameworks.torch import hpu

    g = hpu.HPUGraph()
    with hpu.graph(g):
        pass
    with pytest.raises(NotImplementedError, match="test double"):
        g.replay()


# ---- distributed -----------------------------------------------------------------------------------------
def test_hccl_maps_open_mpi_env(load: Load) -> None:
    for var in ("LOCAL_RANK", "WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT"):
        os.environ.pop(var, None)
    load(OMPI_COMM_WORLD_LOCAL_RANK="1", OMPI_COMM_WORLD_SIZE="4", OMPI_COMM_WORLD_RANK="3")
    import habana_frameworks.torch.distributed.hccl  # noqa: F401

    # The bridge copies all three when torch's are not all set (C13), then defaults the rendezvous.
    assert (os.environ["LOCAL_RANK"], os.environ["WORLD_SIZE"], os.environ["RANK"]) == ("1", "4", "3")
    assert (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]) == ("localhost", "12345")


def test_hccl_forms_a_real_process_group(load: Load) -> None:
    import torch.distributed as dist

    core = load()
    import habana_frameworks.torch.distributed.hccl  # noqa: F401

    assert HPUAccelerator.dist_backend == "hccl"
    dist.init_process_group(
        backend="hccl", world_size=1, rank=0, init_method=f"tcp://127.0.0.1:{_free_port()}"
    )
    try:
        assert dist.get_backend() == "hccl"
        t = torch.tensor([1.0, 2.0], device="hpu")  # hccl takes HPU tensors only (C14)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        torch.testing.assert_close(t.cpu(), torch.tensor([1.0, 2.0]))
    finally:
        dist.destroy_process_group()
    assert ("hccl.create_backend", "rank=0 world_size=1 (gloo underneath)") in core.CALLS


# ---- provenance ------------------------------------------------------------------------------------------
def test_software_versions_mark_the_double(load: Load) -> None:
    load()
    versions = HPUAccelerator(0).software_versions()
    assert versions["torch"] == torch.__version__
    assert versions["habana_frameworks"] == "1.19.0+testdouble (test double)"


def test_env_flags(load: Load) -> None:
    load(lazy_mode="0", HABANA_VISIBLE_MODULES="0,1", HLS_MODULE_ID="1", OTHER_FLAG="x")
    flags = HPUAccelerator(0).env_flags()
    assert flags["PT_HPU_LAZY_MODE"] == "0"
    assert (flags["HABANA_VISIBLE_MODULES"], flags["HLS_MODULE_ID"]) == ("0,1", "1")
    assert flags["lazy_mode_in_force"] == "False"
    assert "OTHER_FLAG" not in flags and "HPUBENCH_FAKE_HPU_NAME" not in flags


# ---- a real training step through the hooks ----------------------------------------------------------------
def _train(acc: HPUAccelerator, record: Callable[[str], Any], steps: int) -> list[float]:
    """The order a worker must follow in lazy mode; the worker itself lives in hpubench/run/worker.py."""
    torch.manual_seed(0)
    device = acc.torch_device()
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    # The first layer's weight gets its gradient last: backward is complete when this fires.
    model[0].weight.register_post_accumulate_grad_hook(lambda _p: record("test.backward"))
    opt.register_step_post_hook(lambda *_: record("test.optimizer_step"))
    x = torch.randn(32, 8, device=device)
    y = x.sum(dim=1, keepdim=True)
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        acc.after_backward()
        opt.step()
        acc.after_optimizer_step()
        acc.synchronize()
        losses.append(loss.item())
    return losses


STEP_ORDER = ["test.backward", "core.mark_step", "test.optimizer_step", "core.mark_step"]


def test_call_order_across_processes(tmp_path: Path) -> None:
    """A worker process sees the double through PYTHONPATH alone, its tensors on the HPU device, and a lazy
    training step calls the bridge in the order a worker must follow. In a fresh interpreter: torch settles
    which accelerator it has at its first use (a CPU backward, or ``torch.accelerator`` asked), and a process
    that used it before the double loaded sees no HPU (found running this file after one that trains)."""
    log = tmp_path / "calls.tsv"
    script = tmp_path / "worker.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[1])!r}]
            import torch
            from hpubench.accelerators.hpu.accelerator import HPUAccelerator
            from habana_frameworks import _double
            from test_hpu_double import _train

            acc = HPUAccelerator(0)
            acc.setup()
            assert acc.torch_device() == torch.device("hpu", 0)  # the real device, the double's tensors
            losses = _train(acc, _double.record, steps=3)
            assert losses[-1] < losses[0], losses
            print(acc.mode_in_force("lazy"), acc.software_versions()["habana_frameworks"])
            """
        )
    )
    env = {k: v for k, v in os.environ.items() if k not in DOUBLE_ENV}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FAKES), env.get("PYTHONPATH")]))
    env["HPUBENCH_FAKE_HPU_CALL_LOG"] = str(log)
    out = subprocess.run(
        [sys.executable, str(script)], env=env, check=True, timeout=120, capture_output=True, text=True
    ).stdout
    assert out.strip() == "lazy 1.19.0+testdouble (test double)"
    lines = [line.split("\t") for line in log.read_text().splitlines()]
    assert all(len(parts) == 2 for parts in lines)
    assert lines[0] == ["core.import", "PT_HPU_LAZY_MODE=None lazy=True"]
    order = [n for n, _ in lines if n in ("test.backward", "core.mark_step", "test.optimizer_step")]
    assert order == STEP_ORDER * 3
