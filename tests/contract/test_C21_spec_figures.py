"""C21: the figures MFU is computed against, as the sources give them (Intel, Hot Chips 2024 Gaudi 3
deck; docs/hpu-contract.md): Gaudi bf16 60 TFLOP/s stated, Gaudi2 HBM 2.46 TB/s; Gaudi2 fp8 865 and
Gaudi3 fp32 229 without a primary source (flagged); and since the bridge names every Gaudi2 "GAUDI2" and
every Gaudi3 "GAUDI3" (Synapse ``GetDeviceNameByDevType``), a sub-type name gets no figure."""

from __future__ import annotations

import pytest

from hpubench.analysis import peaks


def test_stated_figures() -> None:
    gaudi = peaks.peak_for("hpu", "GAUDI", "bf16-mixed")
    assert gaudi is not None and gaudi.tflops == 60 and not gaudi.estimate
    entry = peaks.entry_for("hpu", "GAUDI2")
    assert entry is not None and entry.memory_bw_tb_s == 2.46


@pytest.mark.parametrize(("name", "precision"), [("GAUDI2", "fp8"), ("GAUDI3", "32-true")])
def test_unsourced_figures_are_flagged_in_the_record(name: str, precision: str) -> None:
    figure = peaks.peak_for("hpu", name, precision)
    assert figure is not None and figure.estimate and "no primary source" in figure.source


@pytest.mark.parametrize("name", ["GAUDI2B", "GAUDI2C", "GAUDI3B"])
def test_a_name_the_bridge_never_reports_gets_no_figure(name: str) -> None:
    assert peaks.entry_for("hpu", name) is None
