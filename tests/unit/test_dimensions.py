"""The dimension declarations: what one declaration gives a new dimension, in process (the entry-point
path through the real CLI is tests/e2e/test_cli_new_dimension.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpubench.analysis.scaling import workload_identity
from hpubench.errors import UsageError
from hpubench.plan import dimensions, matrix
from hpubench.plan.cell import Cell
from hpubench.plan.cliparse import parse_dimensions
from hpubench.plan.dimensions import BadValue, Dimension
from hpubench.plan.grid import Grid
from tests.unit.test_matrix import CATALOG, CPU2, KINDS

BASE = "mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault"


def _parse_seq_len(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadValue("seq_len takes whole numbers >= 1, e.g. seq_len = 256")
    return value


def _too_long(cell: Cell, _inventory: object) -> str | None:
    n = cell.value("seq_len")
    return f"seq_len={n} is longer than mlp takes" if cell.workload == "mlp" and n > 1024 else None


@pytest.fixture
def seq_len():
    dim = dimensions.register(
        Dimension("seq_len", "Tokens per sample.", _parse_seq_len, 128, text=int, rules=(_too_long,))
    )
    yield dim
    dimensions.unregister("seq_len")


@pytest.mark.parametrize("dim", dimensions.BUILTIN, ids=lambda d: d.name)
def test_every_builtin_takes_its_default_and_names_its_flag(dim):
    assert dim.values((dim.default,)) == (dim.parse(dim.default),)
    assert dim.cli_flags[0] == "--" + ("option" if dim.name == "options" else dim.name.replace("_", "-"))


def test_a_registered_dimension_is_a_grid_key_a_file_key_a_flag_and_a_key_part(seq_len, tmp_path: Path):
    assert Grid(workload="mlp").seq_len == (128,)
    f = tmp_path / "m.toml"
    f.write_text('workload = "mlp"\naccelerator = "cpu"\nseq_len = [128, 512, 2048]\n')
    planned = matrix.expand(matrix.load_matrix_file(f), CPU2, CATALOG, KINDS)
    assert [(p.cell.key, p.skip_reason) for p in planned] == [
        (BASE, None),  # at its default the key is the one older results hold
        (f"{BASE}/seq_len=512", None),
        (f"{BASE}/seq_len=2048", "seq_len=2048 is longer than mlp takes"),
    ]
    assert planned[1].cell.value("seq_len") == 512 and planned[0].cell.extra == ()
    dims = parse_dimensions(workload=["mlp"], accelerator=["cpu"], seq_len=["256"])
    [planned_one] = matrix.expand(matrix.spec_from_options(**dims), CPU2, CATALOG, KINDS)
    assert planned_one.cell.key == f"{BASE}/seq_len=256"
    excluded = matrix.MatrixSpec(
        grids=(Grid(workload="mlp", seq_len=[128, 512]),), exclude=({"seq_len": 512},)
    )
    assert [p.cell.key for p in matrix.expand(excluded, CPU2, CATALOG, KINDS)] == [BASE]


def test_its_parser_refuses_alike_in_a_grid_a_file_and_on_the_command_line(seq_len, tmp_path: Path):
    with pytest.raises(UsageError, match="seq_len takes whole numbers"):
        Grid(seq_len=0)
    f = tmp_path / "m.toml"
    f.write_text("seq_len = 0\n")
    with pytest.raises(UsageError, match="seq_len = 0: seq_len takes whole numbers"):
        matrix.load_matrix_file(f)
    with pytest.raises(UsageError, match="--seq-len '0': seq_len takes whole numbers"):
        parse_dimensions(seq_len=["0"])


def test_a_record_with_a_dimension_this_machine_lacks_keeps_its_key():
    cell = Cell.from_dict({**Cell("mlp").to_dict(), "extra": {"seq_len": 512}})
    assert cell.key == f"{BASE}/seq_len=512"
    assert Cell.from_dict(cell.to_dict()) == cell
    assert "extra" not in Cell("mlp").to_dict()  # records without added dimensions are written as before


@pytest.mark.parametrize("name", ["steps", "extra", "Seq", "workload", "name"])
def test_a_dimension_cannot_take_a_used_name(name):
    with pytest.raises(ValueError):
        dimensions.register(Dimension(name, "", _parse_seq_len, 1))


def test_scaling_matches_an_added_dimension_too(seq_len):
    assert workload_identity(Cell("mlp", devices=2)) == workload_identity(Cell("mlp", nodes=2))
    longer = Cell("mlp", devices=2, extra=(("seq_len", 512),))
    assert workload_identity(longer) != workload_identity(Cell("mlp"))
