"""The HPU backend's fp8 and graph-compilation paths against the habana_frameworks test double
(tests/fakes), which follows hpu-api.md; each test imports the double fresh (``hpudouble.fresh_bridge``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from hpudouble import Load, fresh_bridge
from torch import nn

from hpubench.accelerators.hpu.accelerator import HPUAccelerator
from hpubench.errors import CellSkipped


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch) -> Iterator[Load]:
    yield from fresh_bridge(monkeypatch)


# ---- fp8 -------------------------------------------------------------------------------------------------
def _fp8_model() -> nn.Module:
    return nn.Sequential(
        nn.Linear(32, 64), nn.ReLU(), nn.Sequential(nn.Linear(64, 16, bias=False)), nn.Linear(16, 3)
    )


def test_prepare_fp8_swaps_aligned_linears(load: Load) -> None:
    core = load(name="GAUDI2")
    import habana_frameworks.torch.hpex.experimental.transformer_engine as te

    torch.manual_seed(0)
    model = _fp8_model()
    x = torch.randn(5, 32)
    expected = model(x)
    out_model, fp8_context = HPUAccelerator(0).prepare_fp8(model)
    assert out_model is model
    assert isinstance(model[0], te.Linear) and isinstance(model[2][0], te.Linear)
    assert model[2][0].bias is None
    assert type(model[3]) is nn.Linear  # 3 output features: not a multiple of 16
    with fp8_context():
        got = model(x)
    torch.testing.assert_close(got, expected)  # weights were copied
    assert ("te.fp8_autocast", "enabled=True recipe=DelayedScaling") in core.CALLS
    assert ("te.Linear.forward", "fp8=True") in core.CALLS


def test_prepare_fp8_refuses_on_first_gen(load: Load) -> None:
    load(name="GAUDI")
    import habana_frameworks.torch.hpex.experimental.transformer_engine as te

    with pytest.raises(CellSkipped, match="Gaudi2"):
        HPUAccelerator(0).prepare_fp8(_fp8_model())
    with pytest.raises(RuntimeError), te.fp8_autocast(enabled=True):
        pass
    with pytest.raises(CellSkipped):
        HPUAccelerator(0).check_precision("fp8")


def test_prepare_fp8_refuses_when_nothing_aligns(load: Load) -> None:
    load(name="GAUDI3")
    with pytest.raises(CellSkipped, match="multiples of 16"):
        HPUAccelerator(0).prepare_fp8(nn.Sequential(nn.Linear(10, 3)))


# ---- metrics: graph compilations (hpu-api.md C7) ----------------------------------------------------------
def test_metrics_api_shape_and_unknown_names(load: Load) -> None:
    load(lazy_mode="1")
    from habana_frameworks.torch.hpu.metrics import MetricNotFound, metric_global, metric_localcontext

    gc = metric_global("graph_compilation")
    assert gc is not None and gc.name() == "graph_compilation"
    assert [tag for tag, _ in gc.stats()] == ["TotalNumber", "TotalTime", "AvgTime"]
    assert metric_global("cpu_fallback") is not None
    assert metric_global("recipe_cache") is None  # only with PT_HPU_ENABLE_CACHE_METRICS
    assert metric_global("no_such_metric") is None
    with pytest.raises(MetricNotFound), metric_localcontext("no_such_metric"):
        pass


def test_lazy_graphs_compile_once_per_input_shape_counted_from_the_bridge_import(load: Load) -> None:
    core = load(lazy_mode="1")
    model = nn.Linear(4, 2).to("hpu")  # ops on the device join the lazy graph; host ones do not

    def step(rows: int) -> None:
        model(torch.randn(rows, 4).to("hpu")).sum().backward()
        core.mark_step()

    step(3)  # before anything named the metrics module: the bridge's import started the metric (C19)
    from habana_frameworks.torch.hpu.metrics import metric_global, metric_localcontext

    gc = metric_global("graph_compilation")
    step(3)
    assert dict(gc.stats())["TotalNumber"] == 1  # same shape: the cached graph runs
    with metric_localcontext("graph_compilation") as local:
        step(5)  # a new shape compiles a new graph
        step(5)
    assert dict(local.stats())["TotalNumber"] == 1
    step(7)
    assert dict(gc.stats())["TotalNumber"] == 3
    assert dict(local.stats())["TotalNumber"] == 1  # stopped at the end of its block


def test_eager_mode_has_no_lazy_graphs_but_hpu_backend_compiles_count(load: Load) -> None:
    core = load(lazy_mode="0")
    from habana_frameworks.torch.hpu.metrics import metric_global

    gc = metric_global("graph_compilation")
    model = nn.Linear(4, 2)
    model(torch.randn(3, 4)).sum().backward()
    core.mark_step()
    assert dict(gc.stats())["TotalNumber"] == 0
    compiled = torch.compile(model, backend="hpu_backend")
    try:
        compiled(torch.randn(3, 4))
        compiled(torch.randn(3, 4))
    finally:
        torch._dynamo.reset()
    assert dict(gc.stats())["TotalNumber"] == 1


def test_module_cacher_captures_count_as_compilations(load: Load) -> None:
    load(lazy_mode="1")
    from habana_frameworks.torch import hpu
    from habana_frameworks.torch.hpu.metrics import metric_localcontext

    model = hpu.ModuleCacher(max_graphs=10)(model=nn.Linear(4, 2), inplace=True)
    with metric_localcontext("graph_compilation") as local:
        model(torch.randn(3, 4))  # capture (and the forward's shapes, for the lazy graph at mark_step)
        model(torch.randn(3, 4))  # replay
    assert dict(local.stats())["TotalNumber"] == 1


def test_accelerator_counts_bridge_compilations_in_a_window(load: Load) -> None:
    core = load(lazy_mode="1")
    from hpubench.measure.compilecount import CompileWindow

    window = CompileWindow(HPUAccelerator(0).compile_counters())
    model = nn.Linear(4, 2).to("hpu")
    window.start()
    for rows in (3, 3, 5):
        model(torch.randn(rows, 4).to("hpu")).sum().backward()
        core.mark_step()
    window.stop()
    result = window.result()
    assert result is not None
    assert result.detail["hpu_graph_compilations"] == 2
    assert result.compiles == 2
    assert 'metric_global("graph_compilation")' in result.counter
