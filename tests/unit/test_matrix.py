"""Expanding a matrix: the presets, accelerators and devices, validation, order, excludes, explain."""

import itertools
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpubench import accelerators
from hpubench.errors import UsageError
from hpubench.plan import matrix
from hpubench.plan.autosteps import AutoSteps
from hpubench.plan.cell import MODES, PRECISIONS
from hpubench.plan.matrix import Grid, MatrixSpec, expand, explain
from tests.unit.matrixcases import (
    CATALOG,
    CPU2,
    GAUDI2_8,
    GAUDI8,
    H100_1,
    KINDS,
    SMOKE_ON_CPU2,
    assert_one_line_usage_error,
    keyed,
    one,
)

# ---- the smoke preset on a 2-core CPU-only machine ------------------------------------------------


def test_smoke_on_cpu_only_machine_runs_a_to_c_f_to_h_and_skips_the_rest_with_reasons():
    planned = expand(matrix.preset("smoke"), CPU2, CATALOG, KINDS)
    assert [p.cell.key for p in planned] == list(SMOKE_ON_CPU2)
    for p in planned:
        expected = SMOKE_ON_CPU2[p.cell.key]
        if expected is None:
            assert p.runnable, (p.cell.key, p.skip_reason)
        else:
            assert p.skip_reason and expected in p.skip_reason, (p.cell.key, p.skip_reason)
    assert all(p.cell.warmup_steps == 3 and p.cell.steps is None for p in planned)  # --steps auto
    two_ranks = "mlp/tiny/cpu/2x1/32-true/eager/nographs/bsdefault"
    assert {p.cell.auto_steps for p in planned if p.cell.key != two_ranks} == {
        AutoSteps(min_time_s=0.2, max_time_s=1.0)
    }
    # the two-rank cell measures longer: its steps spread more (hpubench/plan/matrix.py, grid f)
    assert next(p.cell.auto_steps for p in planned if p.cell.key == two_ranks) == AutoSteps(
        min_time_s=0.2, max_time_s=2.5
    )


def test_smoke_on_gaudi2_runs_lazy_and_graphs_on_hpu():
    planned = keyed(expand(matrix.preset("smoke"), GAUDI2_8, CATALOG, KINDS))
    assert planned["mlp/tiny/hpu/1x1/32-true/lazy/nographs/bsdefault"] is None
    assert planned["mlp/tiny/hpu/1x1/32-true/lazy/graphs/bsdefault"] is None
    assert planned["mlp/tiny/hpu/2x1/32-true/eager/nographs/bsdefault"] is None
    assert all("/hpu/" in k for k in planned)


def test_full_preset_counts_on_cpu_only_machine():
    planned = expand(matrix.preset("full"), CPU2, CATALOG, KINDS)
    # 4 workloads x 5 precisions x 3 modes x 2 graphs x devices (1, auto=2), then the plain condition of
    # 4 workloads x (32-true, bf16-mixed) on one device, eager, without graphs
    assert len(planned) == 4 * len(PRECISIONS) * len(MODES) * 2 * 2 + 4 * 2
    plain = [p.cell for p in planned if p.cell.value("condition") == "plain"]
    assert len(plain) == 8 and {(c.devices, c.mode, c.graphs) for c in plain} == {(1, "eager", False)}
    assert {p.cell.size for p in planned} == {"standard"}
    assert {p.cell.devices for p in planned} == {1, 2}
    assert all(p.cell.warmup_steps == 5 and p.cell.steps is None for p in planned)
    assert {p.cell.auto_steps for p in planned} == {AutoSteps()}


def test_unknown_preset_lists_presets():
    with pytest.raises(UsageError) as e:
        matrix.preset("huge")
    assert_one_line_usage_error(e, "huge", "smoke", "full")


# ---- accelerator and device resolution -------------------------------------------------------------


@pytest.mark.parametrize(
    ("inv", "acc"), [(CPU2, "cpu"), (GAUDI8, "hpu"), (GAUDI2_8, "hpu"), (H100_1, "cuda")]
)
def test_auto_picks_the_highest_priority_present_accelerator(inv, acc):
    planned = one(Grid(workload=("mlp",)), inv)
    assert [p.cell.accelerator for p in planned] == [acc]
    assert planned[0].runnable


def test_all_expands_to_every_present_accelerator_in_priority_order():
    assert [p.cell.accelerator for p in one(Grid(workload=("mlp",), accelerator=("all",)), H100_1)] == [
        "cuda",
        "cpu",
    ]
    assert [p.cell.accelerator for p in one(Grid(workload=("mlp",), accelerator=("all",)), CPU2)] == ["cpu"]


def test_auto_and_explicit_duplicates_collapse():
    planned = one(Grid(workload=("mlp",), accelerator=("auto", "cpu")), CPU2)
    assert len(planned) == 1


def test_absent_accelerator_is_skipped_not_an_error():
    planned = one(Grid(workload=("mlp",), accelerator=("cuda",)), CPU2)
    assert planned[0].skip_reason == "no cuda device on this machine"
    planned = one(Grid(workload=("mlp",), accelerator=("hpu",), devices=("auto",)), CPU2)
    assert planned[0].cell.devices == 1
    assert planned[0].skip_reason == "no hpu device on this machine"


def test_more_devices_than_present_is_skipped_with_counts():
    assert one(Grid(workload=("mlp",), devices=(4,)))[0].skip_reason == (
        "devices=4 but this machine has 2 cpu devices"
    )
    planned = one(Grid(workload=("mlp",), accelerator=("cuda",), devices=(2,)), H100_1)
    assert planned[0].skip_reason == "devices=2 but this machine has 1 cuda device"


def test_devices_auto_means_all_present():
    assert one(Grid(workload=("mlp",), devices=("auto",)), GAUDI2_8)[0].cell.devices == 8
    assert one(Grid(workload=("mlp",), devices=("auto",)), CPU2)[0].cell.devices == 2


def test_device_index_lists():
    ok = one(Grid(workload=("mlp",), devices=((0, 1),)))[0]
    assert ok.runnable and ok.cell.devices == 2 and ok.cell.device_ids == (0, 1)
    out_of_range = one(Grid(workload=("mlp",), devices=((0, 3),)))[0]
    assert out_of_range.skip_reason is not None
    assert "device index 3" in out_of_range.skip_reason and "2 cpu devices" in out_of_range.skip_reason
    too_many = one(Grid(workload=("mlp",), devices=((0, 1, 2),)))[0]
    assert too_many.skip_reason == "devices=3 but this machine has 2 cpu devices"


def test_accelerator_rules_come_from_the_accelerator_class():
    hpu = accelerators.get("hpu")
    grid = Grid(workload=("mlp",), precision=("16-mixed", "bf16-mixed"), mode=("eager", "lazy"))
    first_gen = keyed(one(grid, GAUDI8))
    second_gen = keyed(one(grid, GAUDI2_8))
    assert first_gen["mlp/tiny/hpu/1x1/bf16-mixed/lazy/nographs/bsdefault"] is None
    assert first_gen["mlp/tiny/hpu/1x1/16-mixed/eager/nographs/bsdefault"] is not None
    assert second_gen["mlp/tiny/hpu/1x1/16-mixed/eager/nographs/bsdefault"] is None
    for p in one(grid, GAUDI8):
        assert p.skip_reason == hpu.skip_reason(p.cell, "GAUDI")


def test_cuda_rules_apply_on_the_h100():
    planned = keyed(one(Grid(workload=("mlp",), mode=("lazy", "eager"), graphs=(True,)), H100_1))
    assert "lazy" in (planned["mlp/tiny/cuda/1x1/32-true/lazy/graphs/bsdefault"] or "")
    assert planned["mlp/tiny/cuda/1x1/32-true/eager/graphs/bsdefault"] is None


# ---- validation: one line, valid choices listed --------------------------------------------------


def test_unknown_workload_lists_valid_workloads():
    with pytest.raises(UsageError) as e:
        one(Grid(workload=("llama",)))
    assert_one_line_usage_error(e, "llama", "mlp", "bert")


def test_size_the_workload_does_not_offer():
    with pytest.raises(UsageError) as e:
        one(Grid(workload=("mlp",), size=("huge",)))
    assert_one_line_usage_error(e, "huge", "tiny, standard")


def test_unknown_accelerator_lists_registry_names():
    with pytest.raises(UsageError) as e:
        one(Grid(workload=("mlp",), accelerator=("tpu",)))
    assert_one_line_usage_error(e, "tpu", "auto", "hpu", "cuda", "cpu")


def test_all_workloads_keeps_only_those_offering_the_size():
    catalog = {**CATALOG, "llama": ("tiny", "standard", "large")}
    planned = one(Grid(workload=("all",), size=("large",)), catalog=catalog)
    assert [p.cell.workload for p in planned] == ["llama"]
    with pytest.raises(UsageError) as e:
        one(Grid(workload=("all",), size=("xl",)), catalog=catalog)
    assert_one_line_usage_error(e, "xl", "large")


def test_all_workloads_expand_in_catalog_order():
    assert [p.cell.workload for p in one(Grid())] == list(CATALOG)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"precision": ("bf16",)}, "32-true, bf16-mixed"),
        ({"mode": ("graph",)}, "eager, lazy, compile"),
        ({"devices": (0,)}, "devices"),
        ({"nodes": (0,)}, "nodes"),
        ({"batch_size": (-1,)}, "batch_size"),
        ({"graphs": ("yes",)}, "true or false"),
        ({"workload": ()}, "empty list"),
        ({"steps": 1}, "steps"),
        ({"warmup_steps": 0}, "warmup_steps"),
        ({"devices": ((0, 0),)}, "twice"),
    ],
)
def test_grid_rejects_bad_values(kwargs, needle):
    with pytest.raises(UsageError) as e:
        Grid(**kwargs)
    assert_one_line_usage_error(e, needle)


def test_grid_accepts_scalars_and_lists():
    g = Grid(workload="mlp", devices=[1, "auto", [0, 2]], batch_size=[None, "default", 8])
    assert g.workload == ("mlp",)
    assert g.devices == (1, "auto", (0, 2))
    assert g.batch_size == (None, 8)


def test_spec_needs_a_grid():
    with pytest.raises(UsageError):
        MatrixSpec(grids=())


# ---- determinism, dedupe, excludes ------------------------------------------------------------------


def test_expansion_is_deterministic():
    spec = matrix.preset("full")
    a = expand(spec, GAUDI2_8, CATALOG, KINDS)
    b = expand(matrix.preset("full"), GAUDI2_8, dict(CATALOG), KINDS)
    assert a == b
    assert len({p.cell.key for p in a}) == len(a)


def test_product_order_is_workload_outermost():
    planned = one(Grid(workload=("mlp", "gpt"), precision=("32-true", "bf16-mixed")))
    assert [(p.cell.workload, p.cell.precision) for p in planned] == [
        ("mlp", "32-true"),
        ("mlp", "bf16-mixed"),
        ("gpt", "32-true"),
        ("gpt", "bf16-mixed"),
    ]


def test_duplicates_across_grids_keep_the_first():
    spec = MatrixSpec(
        grids=(
            Grid(workload=("mlp",), steps=10),
            Grid(workload=("mlp", "gpt"), steps=99),
        )
    )
    planned = expand(spec, CPU2, CATALOG, KINDS)
    assert [(p.cell.workload, p.cell.steps) for p in planned] == [("mlp", 10), ("gpt", 99)]


def test_excludes_drop_matching_cells_entirely():
    spec = MatrixSpec(
        grids=(
            Grid(workload=("mlp", "gpt"), mode=("eager", "compile"), precision=("32-true", "bf16-mixed")),
        ),
        exclude=({"workload": "gpt", "mode": "compile"}, {"precision": ["bf16-mixed"], "workload": ["mlp"]}),
    )
    keys = [p.cell.key for p in expand(spec, CPU2, CATALOG, KINDS)]
    assert keys == [
        "mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault",
        "mlp/tiny/cpu/1x1/32-true/compile/nographs/bsdefault",
        "gpt/tiny/cpu/1x1/32-true/eager/nographs/bsdefault",
        "gpt/tiny/cpu/1x1/bf16-mixed/eager/nographs/bsdefault",
    ]


def test_exclude_on_accelerator_and_devices():
    spec = MatrixSpec(
        grids=(Grid(workload=("mlp",), accelerator=("all",), devices=(1, 2, (0, 1))),),
        exclude=({"accelerator": "cpu", "devices": 2},),
    )
    planned = expand(spec, H100_1, CATALOG, KINDS)
    assert [(p.cell.accelerator, p.cell.devices) for p in planned] == [("cuda", 1), ("cuda", 2), ("cpu", 1)]
    # index-list excludes compare with the cell's device indices
    spec = MatrixSpec(grids=(Grid(workload=("mlp",), devices=(2, (0, 1))),), exclude=({"devices": [[0, 1]]},))
    assert expand(spec, CPU2, CATALOG, KINDS) == []


@pytest.mark.parametrize(
    ("exclude", "needle"),
    [({}, "empty exclude"), ({"accelerator": "auto"}, "concrete"), ({"colour": "red"}, "unknown key")],
)
def test_bad_excludes(exclude, needle):
    with pytest.raises(UsageError) as e:
        MatrixSpec(grids=(Grid(),), exclude=(exclude,))
    assert_one_line_usage_error(e, needle)


_DIMS = {
    "workload": st.lists(st.sampled_from(list(CATALOG)), min_size=1, max_size=4, unique=True),
    "size": st.lists(st.sampled_from(["tiny", "standard"]), min_size=1, unique=True),
    "devices": st.lists(st.sampled_from([1, 2, 3]), min_size=1, unique=True),
    "nodes": st.lists(st.sampled_from([1, 2]), min_size=1, unique=True),
    "precision": st.lists(st.sampled_from(PRECISIONS), min_size=1, unique=True),
    "mode": st.lists(st.sampled_from(MODES), min_size=1, unique=True),
    "graphs": st.lists(st.booleans(), min_size=1, unique=True),
    "batch_size": st.lists(st.sampled_from([None, 8, 16]), min_size=1, unique=True),
}


@settings(max_examples=60, deadline=None)
@given(
    grid_kwargs=st.fixed_dictionaries(_DIMS),
    exclude=st.fixed_dictionaries({}, optional={k: v for k, v in _DIMS.items() if k != "size"}),
)
def test_single_grid_size_is_product_minus_excluded(grid_kwargs, exclude):
    grid = Grid(**grid_kwargs)
    spec = MatrixSpec(grids=(grid,), exclude=(exclude,) if exclude else ())
    planned = expand(spec, CPU2, CATALOG, KINDS)
    product = 1
    for key in matrix.DIMENSIONS:
        product *= len(getattr(grid, key))
    excluded = 0
    if exclude:
        excluded = 1
        for key in matrix.DIMENSIONS:
            values = getattr(grid, key)
            excluded *= len([v for v in values if v in exclude[key]]) if key in exclude else len(values)
    assert grid.combinations() == product
    assert len(planned) == product - excluded
    assert len({p.cell.key for p in planned}) == len(planned)


# ---- explain -----------------------------------------------------------------------------------------


def test_explain_counts():
    summary = explain(expand(matrix.preset("smoke"), CPU2, CATALOG, KINDS))
    assert (summary.total, summary.runnable, summary.skipped) == (17, 13, 4)
    assert summary.reasons[0] == ("lazy mode exists only on HPU, not on cpu", 2)
    assert summary.by_accelerator == (("cpu", 13),)
    assert summary.lines()[0] == "17 cells: 13 runnable, 4 skipped"


def test_matrix_stays_pure():
    code = (
        "import sys\n"
        "from hpubench import accelerators\n"
        "from hpubench.plan import matrix\nfrom hpubench.analysis import peaks\n"
        "from hpubench.analysis.stats import summary\n"
        "from hpubench.plan.inventory import DeviceInfo, Inventory\n"
        "inv = Inventory((DeviceInfo('cpu', 2, 'x'),))\n"
        "matrix.expand(matrix.preset('smoke'), inv, {w: ('tiny',) for w in ('mlp','resnet','gpt','bert')}, "
        "accelerators.kinds())\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_product_helper_matches_itertools():
    g = Grid(workload=("mlp", "gpt"), precision=PRECISIONS, graphs=(False, True))
    assert g.combinations() == len(list(itertools.product(g.workload, g.precision, g.graphs)))
