"""Cell keys are how stored runs, baselines and comparisons find each other: they must not change.

``data/golden_cells.json`` was written by the code before dimensions were declared in one place
(hpubench/plan/dimensions.py): every cell of the ``smoke`` and ``full`` presets on four fixed machines, in
expansion order, with its key, match key and skip reason, and a few hand-made cells (options, device
indices, a batch size, auto steps). Old result directories keep loading and resuming only while these
stay byte-identical; cells added to a preset later come after them, with keys of their own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpubench.plan import matrix
from hpubench.plan.cell import Cell
from tests.unit.test_matrix import CATALOG, CPU2, GAUDI2_8, GAUDI8, H100_1, KINDS

GOLDEN = json.loads((Path(__file__).parent / "data" / "golden_cells.json").read_text())
MACHINES = {"cpu2": CPU2, "gaudi8": GAUDI8, "gaudi2_8": GAUDI2_8, "h100_1": H100_1}


@pytest.mark.parametrize("name", sorted(GOLDEN["expanded"]))
def test_preset_cells_keep_their_keys_order_and_skip_reasons(name: str) -> None:
    preset, machine = name.split("@")
    planned = matrix.expand(matrix.preset(preset), MACHINES[machine], CATALOG, KINDS)
    got = [[p.cell.key, p.cell.match_key, p.skip_reason] for p in planned]
    golden = GOLDEN["expanded"][name]
    assert got[: len(golden)] == golden
    # Cells added to the presets since come after, each a new key: the plain condition's grids (issue 33).
    added = [key for key, _, _ in got[len(golden) :]]
    assert all(key.endswith("/condition=plain") for key in added), added


@pytest.mark.parametrize("sample", GOLDEN["cells"], ids=[s["key"] for s in GOLDEN["cells"]])
def test_a_cell_from_an_old_record_keeps_its_key(sample: dict) -> None:
    cell = Cell.from_dict(sample["cell"])
    assert cell.key == sample["key"]
    assert cell.match_key == sample["match_key"]
    assert Cell.from_dict(cell.to_dict()).key == sample["key"]
