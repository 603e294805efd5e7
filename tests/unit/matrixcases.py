"""The matrix tests' shared inventories, catalog and helpers (test_matrix.py, test_matrix_files.py)."""

import pytest

from hpubench import accelerators
from hpubench.plan.cell import PlannedCell
from hpubench.plan.inventory import DeviceInfo, Inventory
from hpubench.plan.matrix import Grid, MatrixSpec, expand

CATALOG = {
    "mlp": ("tiny", "standard"),
    "resnet": ("tiny", "standard"),
    "gpt": ("tiny", "standard"),
    "bert": ("tiny", "standard"),
}
KINDS = accelerators.kinds()
CPU2 = Inventory((DeviceInfo("cpu", 2, "Intel(R) Xeon(R) CPU @ 2.20GHz"),))
GAUDI8 = Inventory((DeviceInfo("hpu", 8, "GAUDI"), DeviceInfo("cpu", 96, "Intel(R) Xeon(R) Platinum 8275CL")))
GAUDI2_8 = Inventory(
    (DeviceInfo("hpu", 8, "GAUDI2"), DeviceInfo("cpu", 160, "Intel(R) Xeon(R) Platinum 8380"))
)
H100_1 = Inventory((DeviceInfo("cuda", 1, "NVIDIA H100 80GB HBM3"), DeviceInfo("cpu", 26, "AMD EPYC 9554")))


def one(spec: MatrixSpec | Grid, inv: Inventory = CPU2, catalog=CATALOG) -> list[PlannedCell]:
    if isinstance(spec, Grid):
        spec = MatrixSpec(grids=(spec,))
    return expand(spec, inv, catalog, KINDS)


def keyed(planned: list[PlannedCell]) -> dict[str, str | None]:
    return {p.cell.key: p.skip_reason for p in planned}


def assert_one_line_usage_error(excinfo: pytest.ExceptionInfo, *needles: str) -> str:
    msg = str(excinfo.value)
    assert "\n" not in msg, msg
    for needle in needles:
        assert needle in msg, msg
    return msg


SMOKE_ON_CPU2 = {
    # (a) every workload, fp32 eager
    "mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault": None,
    "resnet/tiny/cpu/1x1/32-true/eager/nographs/bsdefault": None,
    "gpt/tiny/cpu/1x1/32-true/eager/nographs/bsdefault": None,
    "bert/tiny/cpu/1x1/32-true/eager/nographs/bsdefault": None,
    # (b) every precision on mlp (32-true already came from (a))
    "mlp/tiny/cpu/1x1/bf16-mixed/eager/nographs/bsdefault": None,
    "mlp/tiny/cpu/1x1/16-mixed/eager/nographs/bsdefault": None,
    "mlp/tiny/cpu/1x1/bf16-true/eager/nographs/bsdefault": None,
    "mlp/tiny/cpu/1x1/fp8/eager/nographs/bsdefault": "fp8",
    # (c) compile
    "mlp/tiny/cpu/1x1/32-true/compile/nographs/bsdefault": None,
    "gpt/tiny/cpu/1x1/32-true/compile/nographs/bsdefault": None,
    # (d) lazy
    "mlp/tiny/cpu/1x1/32-true/lazy/nographs/bsdefault": "lazy",
    # (e) graphs in eager and lazy
    "mlp/tiny/cpu/1x1/32-true/eager/graphs/bsdefault": "graph",
    "mlp/tiny/cpu/1x1/32-true/lazy/graphs/bsdefault": "lazy",
    # (f) two devices
    "mlp/tiny/cpu/2x1/32-true/eager/nographs/bsdefault": None,
    # (g) bf16-mixed transformer
    "gpt/tiny/cpu/1x1/bf16-mixed/eager/nographs/bsdefault": None,
    # (h) what a plain script gets
    "mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault/condition=plain": None,
    "gpt/tiny/cpu/1x1/32-true/eager/nographs/bsdefault/condition=plain": None,
}
