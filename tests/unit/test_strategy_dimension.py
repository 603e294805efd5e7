"""The ``strategy`` dimension: single, ddp or fsdp; by default single on one device and ddp on several.

A cell at the default for its layout keeps the key it had before the dimension existed (old result
directories keep loading and resuming); any other value is one more key part, ``strategy=<value>``.
Combinations that cannot run are skipped cells with a reason.
"""

from __future__ import annotations

import pytest

from hpubench.plan.cell import Cell
from hpubench.plan.inventory import DeviceInfo, Inventory
from hpubench.plan.matrix import Grid, MatrixSpec, expand
from hpubench.strategy.spec import strategy_of
from tests.unit.test_matrix import CATALOG, CPU2, GAUDI2_8, KINDS

DDP_KEY = "gpt/tiny/cpu/2x1/32-true/eager/nographs/bsdefault"
CUDA2 = Inventory((DeviceInfo("cuda", 2, "NVIDIA H100 80GB HBM3"), DeviceInfo("cpu", 26, "AMD EPYC 9554")))


def planned(inv: Inventory = CPU2, exclude: tuple = (), **grid: object) -> list:
    return expand(MatrixSpec(grids=(Grid(**grid),), exclude=exclude), inv, CATALOG, KINDS)


def test_ddp_on_two_devices_keeps_the_old_key_and_fsdp_adds_a_part():
    cells = planned(workload="gpt", accelerator="cpu", devices=2, strategy=["ddp", "fsdp"])
    assert [(p.cell.key, p.skip_reason) for p in cells] == [
        (DDP_KEY, None),
        (DDP_KEY + "/strategy=fsdp", None),
    ]
    assert [strategy_of(p.cell) for p in cells] == ["ddp", "fsdp"]


def test_the_default_for_the_layout_is_one_cell_whichever_way_it_is_named():
    two = planned(workload="gpt", accelerator="cpu", devices=2, strategy=["auto", "ddp"])
    assert [p.cell.key for p in two] == [DDP_KEY]
    one = planned(workload="gpt", accelerator="cpu", devices=1, strategy=["auto", "single"])
    assert [p.cell.key for p in one] == ["gpt/tiny/cpu/1x1/32-true/eager/nographs/bsdefault"]
    assert strategy_of(one[0].cell) == "single"
    # a record written before the dimension existed reads as the default for its layout
    assert strategy_of(Cell("gpt", devices=2)) == "ddp" and strategy_of(Cell("gpt", nodes=2)) == "ddp"


@pytest.mark.parametrize(
    ("devices", "strategy", "reason"),
    [
        (2, "single", "strategy single runs one process, but devices=2 x nodes=1 makes 2; use ddp or fsdp"),
        (
            1,
            "ddp",
            "strategy ddp needs several processes, but devices=1 x nodes=1 makes one; use devices >= 2",
        ),
        (
            1,
            "fsdp",
            "strategy fsdp needs several processes, but devices=1 x nodes=1 makes one; use devices >= 2",
        ),
    ],
)
def test_a_strategy_that_does_not_fit_the_layout_is_skipped_with_its_reason(devices, strategy, reason):
    (p,) = planned(workload="gpt", accelerator="cpu", devices=devices, strategy=strategy)
    assert p.cell.key.endswith(f"/strategy={strategy}")
    assert p.skip_reason == reason


def test_fsdp_with_graph_capture_is_skipped_and_ddp_keeps_its_wording():
    cells = planned(
        CUDA2, workload="gpt", accelerator="cuda", devices=2, graphs=True, strategy=["ddp", "fsdp"]
    )
    assert [p.skip_reason for p in cells] == [
        "graph capture is not combined with data-parallel (DDP) cells: the all-reduce would have to be "
        "captured inside the graph",
        "graph capture is not combined with FSDP cells: the all-gathers and reduce-scatters would have to "
        "be captured inside the graph",
    ]


def test_fsdp_with_fp8_is_skipped_where_fp8_itself_runs():
    (p,) = planned(GAUDI2_8, workload="gpt", accelerator="hpu", devices=2, precision="fp8", strategy="fsdp")
    assert p.skip_reason == (
        "fp8 is not combined with FSDP cells: transformer_engine's fp8 layers keep scaling state that "
        "fully_shard does not shard; untested, so not run"
    )
    (ddp,) = planned(GAUDI2_8, workload="gpt", accelerator="hpu", devices=2, precision="fp8")
    assert ddp.skip_reason is None


def test_an_exclude_names_the_strategy_in_force():
    cells = planned(
        workload="gpt",
        accelerator="cpu",
        devices=2,
        strategy=["ddp", "fsdp"],
        exclude=({"strategy": ("ddp",)},),
    )
    assert [strategy_of(p.cell) for p in cells] == ["fsdp"]


def test_an_unknown_strategy_is_refused_with_the_valid_ones():
    from hpubench.errors import UsageError

    with pytest.raises(UsageError, match="unknown strategy; valid: single, ddp, fsdp, auto"):
        Grid(workload="gpt", strategy="zero3")
