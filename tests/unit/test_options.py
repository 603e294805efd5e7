"""Workload options: the matrix `options` dimension, `--option`, and the planted slowdown `extra_work`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

import pytest

from hpubench import accelerators
from hpubench.errors import UsageError
from hpubench.plan import extrawork, matrix
from hpubench.plan.cell import Cell
from hpubench.plan.cliparse import parse_dimensions
from hpubench.plan.inventory import DeviceInfo, Inventory

CATALOG = {"mlp": ("tiny", "standard"), "gpt": ("tiny", "standard")}
KINDS = accelerators.kinds()


def _cpu() -> Inventory:
    return Inventory(devices=(DeviceInfo("cpu", 2, "Xeon"),))


def test_options_in_a_matrix_file_expand_into_cells(tmp_path: Path) -> None:
    f = tmp_path / "m.toml"
    f.write_text('workload = "mlp"\noptions = [{}, {extra_work = 0.1}, {extra_work = "5%"}]\n')
    cells = [pc.cell for pc in matrix.expand(matrix.load_matrix_file(f), _cpu(), CATALOG, KINDS)]
    assert [c.options for c in cells] == [(), (("extra_work", "0.1"),), (("extra_work", "5%"),)]
    assert cells[1].key.endswith("/bsdefault/extra_work=0.1")
    assert len({c.key for c in cells}) == 3  # options are part of the key


def test_a_single_table_is_one_option_set_and_excludes_match_it(tmp_path: Path) -> None:
    f = tmp_path / "m.toml"
    f.write_text(
        'workload = ["mlp", "gpt"]\noptions = [{}, {extra_work = 0.1}]\n'
        '[[exclude]]\nworkload = "gpt"\noptions = {extra_work = 0.1}\n'
    )
    keys = [pc.cell.key for pc in matrix.expand(matrix.load_matrix_file(f), _cpu(), CATALOG, KINDS)]
    assert len(keys) == 3 and not any(k.startswith("gpt") and "extra_work" in k for k in keys)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("options = 3", "options takes a table"),
        ('options = {"extra work" = 1}', "must be letters, digits or _"),
        ('options = {extra_work = "a/b"}', "without '/' or spaces"),
        ("options = {extra_work = [1]}", "takes a number or a string"),
    ],
)
def test_bad_options_in_a_file_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "m.toml"
    f.write_text(text + "\n")
    with pytest.raises(UsageError, match=message):
        matrix.load_matrix_file(f)


def test_option_flags_form_one_set_that_replaces_the_presets() -> None:
    dims = parse_dimensions(workload=["mlp"], options=["extra_work=0.1", "seed=3"])
    assert dims["options"] == [{"extra_work": "0.1", "seed": "3"}]
    spec = matrix.spec_from_options(base=matrix.preset("smoke"), **dims)
    assert all(g.options == ((("extra_work", "0.1"), ("seed", "3")),) for g in spec.grids)
    assert 'options=[{extra_work = "0.1", seed = "3"}]' in spec.name


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("extra_work", "--option takes name=value"),
        ("=1", "--option takes name=value"),
        ("extra_work=lots", "extra_work takes a fraction"),
        ("extra_work=20", "must be between 0 and 10"),
    ],
)
def test_bad_option_flags(flag: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_dimensions(options=[flag])


def test_parse_extra_work() -> None:
    assert extrawork.parse_extra_work("0.1") == 0.1
    assert extrawork.parse_extra_work("10%") == pytest.approx(0.1)
    assert extrawork.parse_extra_work("0") == 0.0
    for bad in ("-0.1", "nan", "x", "11"):
        with pytest.raises(ValueError):
            extrawork.parse_extra_work(bad)


def test_unknown_option_names_fail_the_cell_instead_of_running_a_plain_one() -> None:
    class W:
        workload_options: ClassVar[dict[str, str]] = {"seed": "data seed"}

    assert extrawork.unknown_options({"extra_work": "0.1", "seed": "1", "sed": "2"}, W()) == ["sed"]
    with pytest.raises(ValueError, match="unknown workload option"):
        extrawork.apply_options({"extra_wrok": "0.1"}, object(), lambda b: b, 1, lambda: None, "cpu")
    step = lambda b: b  # noqa: E731
    assert extrawork.apply_options({}, object(), step, 1, lambda: None, "cpu") is step
    assert extrawork.apply_options({"extra_work": "0"}, object(), step, 1, lambda: None, "cpu") is step


@pytest.mark.slow  # imports torch: seconds on a busy 2-core machine
@pytest.mark.serial
def test_extra_work_is_calibrated_at_the_end_of_the_warmup_then_added_to_every_step() -> None:
    pytest.importorskip("torch")

    def plain(batch: float) -> float:
        # A step of fixed work (not a fixed wall time): it slows with the host as the extra work does, as
        # a real step would, so a host whose speed moves cannot skew the planted share.
        total = 0
        for i in range(40_000):
            total += i * i
        return batch + 0 * total

    step = extrawork.apply_options({"extra_work": "0.5"}, object(), plain, 2, lambda: None, "cpu")
    assert extrawork.learned_facts(step) == ()  # nothing learned before the warm-up ends
    for _ in range(2):  # warm-up: plain, then calibration inside the last warm-up call
        assert step(1.0) == 1.0
    [(name, info)] = extrawork.learned_facts(step)
    assert name == "extra_work"
    assert info["fraction"] == 0.5 and info["units_per_step"] >= 1
    assert 0.25 < info["planted_fraction"] < 0.8  # a busy machine blurs the calibration
    alone, extra = [], []
    for _ in range(5):  # in turn, so a host whose speed moves meanwhile moves both
        for fn, times in ((plain, alone), (step, extra)):
            t0 = time.perf_counter()
            fn(1.0)
            times.append(time.perf_counter() - t0)
    assert info["base_step_s"] == pytest.approx(min(alone), rel=0.5)
    assert min(extra) > min(alone) * 1.2  # the measured steps carry the extra work
    assert Cell("mlp", options=(("extra_work", "0.5"),)).key.endswith("extra_work=0.5")
