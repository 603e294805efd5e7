"""An added dimension is a column of the exported frame and of the report's cell table, headed as its
declaration says, with no change to the report code; results without one keep their columns."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from reportdata import fake_result, table_rows, write_run

from hpubench.analysis.frame import COLUMNS, to_dataframe
from hpubench.plan import dimensions
from hpubench.plan.dimensions import Dimension
from hpubench.present.cli.main import main
from hpubench.store.readback import load_results


def _parse(value: object) -> int:
    return int(value)  # type: ignore[call-overload]


@pytest.fixture
def seq_len():
    yield dimensions.register(Dimension("seq_len", "Tokens per sample.", _parse, 128, column="Tokens/sample"))
    dimensions.unregister("seq_len")


def test_an_added_dimension_is_a_frame_and_report_column(seq_len, tmp_path: Path) -> None:
    plain = fake_result("mlp", "cpu", "Test CPU", precision="32-true")
    longer = replace(plain, cell=replace(plain.cell, extra=(("seq_len", 512),)))
    run = write_run(tmp_path / "run", [plain, longer])
    df = to_dataframe(load_results([str(run)]))
    cols = list(df.columns)
    assert cols[cols.index("device_ids") + 1 : cols.index("world_size")] == ["seq_len"]
    assert dict(zip(df["key"], df["seq_len"], strict=True)) == {plain.key: 128, longer.key: 512}
    assert longer.key == plain.key + "/seq_len=512"

    out = tmp_path / "r.html"
    main(["report", str(run), "-o", str(out)])
    html = out.read_text(encoding="utf-8")
    assert "Tokens/sample" in html
    rows = table_rows(html)
    assert rows[f"run|{longer.key}"]["seq_len"][1] == "512"
    assert rows[f"run|{plain.key}"]["seq_len"][1] == "128"


def test_results_without_added_dimensions_keep_their_columns(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [fake_result("mlp", "cpu", "Test CPU", precision="32-true")])
    assert list(to_dataframe(load_results([str(run)])).columns) == list(COLUMNS)
