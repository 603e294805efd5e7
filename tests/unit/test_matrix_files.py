"""Matrices from command-line flags (spec_from_options), from TOML files, and with steps = "auto"."""

import textwrap
from pathlib import Path

import pytest

from hpubench.errors import UsageError
from hpubench.plan import matrix
from hpubench.plan.cell import MODES, PRECISIONS
from hpubench.plan.matrix import Grid, MatrixSpec, expand, load_matrix_file, spec_from_options
from tests.unit.matrixcases import (
    CATALOG,
    CPU2,
    GAUDI2_8,
    H100_1,
    KINDS,
    SMOKE_ON_CPU2,
    assert_one_line_usage_error,
    keyed,
    one,
)

# ---- spec_from_options: command-line flags replace dimensions -------------------------------------


def test_options_without_base_use_the_documented_defaults():
    spec = spec_from_options()
    (grid,) = spec.grids
    assert grid == Grid(
        workload=("all",),
        size=("tiny",),
        accelerator=("auto",),
        devices=(1,),
        nodes=(1,),
        precision=("32-true",),
        mode=("eager",),
        graphs=(False,),
    )
    assert [p.cell.key for p in expand(spec, CPU2, CATALOG, KINDS)] == [
        f"{w}/tiny/cpu/1x1/32-true/eager/nographs/bsdefault" for w in CATALOG
    ]


def test_options_without_base_build_one_grid():
    spec = spec_from_options(workload=["gpt"], precision=["bf16-mixed", "32-true"], devices=[[0, 1]], steps=7)
    planned = expand(spec, CPU2, CATALOG, KINDS)
    assert [(p.cell.precision, p.cell.device_ids, p.cell.steps) for p in planned] == [
        ("bf16-mixed", (0, 1), 7),
        ("32-true", (0, 1), 7),
    ]


def test_workload_flag_on_smoke_gives_smokes_mlp_cells():
    smoke = expand(matrix.preset("smoke"), CPU2, CATALOG, KINDS)
    restricted = expand(spec_from_options(matrix.preset("smoke"), workload=["mlp"]), CPU2, CATALOG, KINDS)
    assert [p.cell.key for p in restricted] == [p.cell.key for p in smoke if p.cell.workload == "mlp"]


def test_a_flag_replaces_the_dimension_in_every_grid():
    base = matrix.preset("smoke")
    bert = expand(spec_from_options(base, workload=["bert"]), CPU2, CATALOG, KINDS)
    assert {p.cell.workload for p in bert} == {"bert"}
    assert {p.cell.precision for p in bert} == set(PRECISIONS)  # smoke's shape, applied to bert
    assert {p.cell.mode for p in bert} == set(MODES)
    standard = expand(spec_from_options(base, size=["standard"]), CPU2, CATALOG, KINDS)
    assert len(standard) == len(SMOKE_ON_CPU2)
    assert {p.cell.size for p in standard} == {"standard"}
    on_cuda = expand(spec_from_options(base, accelerator=["cuda"]), H100_1, CATALOG, KINDS)
    assert {p.cell.accelerator for p in on_cuda} == {"cuda"}
    longer = spec_from_options(base, steps=100, warmup_steps=10)
    assert all(g.steps == 100 and g.warmup_steps == 10 for g in longer.grids)


def test_grids_made_identical_by_a_flag_collapse_and_excludes_survive():
    base = MatrixSpec(
        grids=(Grid(workload=("mlp",)), Grid(workload=("gpt",))),
        exclude=({"precision": "bf16-mixed"},),
        name="mine",
    )
    spec = spec_from_options(base, workload=["bert"], precision=["32-true", "bf16-mixed"])
    assert len(spec.grids) == 1
    assert spec.exclude == base.exclude
    assert spec.name.startswith("mine")
    assert [p.cell.precision for p in expand(spec, CPU2, CATALOG, KINDS)] == ["32-true"]


def test_no_flags_returns_the_base_unchanged():
    base = matrix.preset("smoke")
    assert spec_from_options(base) == base


def test_bad_flag_value_names_the_flag():
    with pytest.raises(UsageError) as e:
        spec_from_options(precision=["fp4"])
    assert_one_line_usage_error(e, "--precision", "fp4", "bf16-mixed")
    with pytest.raises(UsageError) as e:
        spec_from_options(matrix.preset("smoke"), warmup_steps=0)
    assert_one_line_usage_error(e, "--warmup-steps")


# ---- matrix files -----------------------------------------------------------------------------------


def write(tmp_path: Path, text: str, name: str = "m.toml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


def test_top_level_keys_form_one_grid(tmp_path):
    p = write(
        tmp_path,
        """
        workload = ["mlp", "gpt"]
        precision = "bf16-mixed"
        devices = [1, [0, 1]]
        batch_size = "default"
        steps = 30
        """,
    )
    spec = load_matrix_file(p)
    assert spec.name == "m"
    assert spec.grids == (
        Grid(workload=("mlp", "gpt"), precision=("bf16-mixed",), devices=(1, (0, 1)), steps=30),
    )


def test_grid_tables_inherit_the_top_level(tmp_path):
    p = write(
        tmp_path,
        """
        name = "two-grids"
        size = "standard"
        steps = 40
        [[grid]]
        workload = "resnet"
        precision = ["32-true", "bf16-mixed"]
        [[grid]]
        workload = "gpt"
        mode = ["eager", "compile"]
        steps = 10
        [[exclude]]
        mode = "compile"
        accelerator = "cpu"
        """,
    )
    spec = load_matrix_file(p)
    assert spec.name == "two-grids"
    assert spec.grids == (
        Grid(workload=("resnet",), size=("standard",), precision=("32-true", "bf16-mixed"), steps=40),
        Grid(workload=("gpt",), size=("standard",), mode=("eager", "compile"), steps=10),
    )
    keys = [p.cell.key for p in expand(spec, CPU2, CATALOG, KINDS)]
    assert keys == [
        "resnet/standard/cpu/1x1/32-true/eager/nographs/bsdefault",
        "resnet/standard/cpu/1x1/bf16-mixed/eager/nographs/bsdefault",
        "gpt/standard/cpu/1x1/32-true/eager/nographs/bsdefault",
    ]


def test_preset_in_a_file_is_overridden_and_extended(tmp_path):
    p = write(
        tmp_path,
        """
        preset = "smoke"
        accelerator = "cpu"
        [[grid]]
        workload = "bert"
        precision = "bf16-mixed"
        [[exclude]]
        precision = "fp8"
        """,
    )
    spec = load_matrix_file(p)
    planned = expand(spec, H100_1, CATALOG, KINDS)
    assert {p.cell.accelerator for p in planned} == {"cpu"}
    assert "bert/tiny/cpu/1x1/bf16-mixed/eager/nographs/bsdefault" in keyed(planned)
    assert all(p.cell.precision != "fp8" for p in planned)


BAD_FILES = [
    ('workload = "mlp"\nprecision = \n', "invalid TOML", "line 2"),
    ('workload = "mlp"\nprecision = [\n', "invalid TOML", "fix the syntax"),
    ('workloads = "mlp"\n', "unknown key 'workloads'", "did you mean 'workload'"),
    ('colour = "red"\n', "unknown key 'colour'", "valid keys: workload, size"),
    ("steps = 1.5\n", "steps = 1.5", "whole number"),
    ('graphs = "yes"\n', "graphs", "true or false"),
    ('precision = ["32-true", "bf16"]\n', 'precision = ["32-true", "bf16"]', "32-true, bf16-mixed, 16-mixed"),
    ('mode = "graph"\n', "unknown mode", "eager, lazy, compile"),
    ("nodes = 0\n", "nodes = 0", ">= 1"),
    ("steps = -3\n", "steps = -3", "at least 2"),
    ("batch_size = [0]\n", "batch_size = [0]", ">= 1"),
    ("devices = [0, 2]\n", "devices = [0, 2]", "[[0, 2]]"),
    ("workload = []\n", "workload = []", "empty list"),
    ('[grid]\nworkload = "mlp"\n', "[[grid]]", "array of tables"),
    ('[[grid]]\nworkload = "mlp"\nprecison = "fp8"\n', "[[grid]] #1", "did you mean 'precision'"),
    ('[[exclude]]\nmode = "lazy"\n[[exclude]]\n', "[[exclude]] #2", "empty exclude"),
    ('[[exclude]]\naccelerator = "auto"\n', "[[exclude]] #1", "concrete"),
    ('preset = "nightly"\n', "unknown preset", "smoke, full"),
    ("name = 3\n", "name = 3", "string"),
    ('steps = "soon"\n', 'steps = "soon"', 'or "auto"'),
    ('steps = "auto"\ntarget_ci = 0\n', "target_ci = 0", "between 0 and 1"),
    ('steps = "auto"\nmax_time = -1\n', "max_time = -1", "positive seconds"),
    ('steps = "auto"\nmin_steps = 2\n', "min_steps = 2", ">= 3"),
]


@pytest.mark.parametrize(("text", "n1", "n2"), BAD_FILES)
def test_bad_files_give_one_line_naming_the_file(tmp_path, text, n1, n2):
    p = write(tmp_path, text, name="bad.toml")
    with pytest.raises(UsageError) as e:
        load_matrix_file(p)
    msg = assert_one_line_usage_error(e)
    assert msg.startswith(f"{p}: ")
    rest = msg[len(str(p)) :]  # the temporary path must not satisfy the needles by accident
    assert n1 in rest and n2 in rest, msg


def test_toml_syntax_error_names_the_line(tmp_path):
    p = write(tmp_path, 'workload = "mlp"\nsize = tiny\n', name="bad.toml")
    with pytest.raises(UsageError) as e:
        load_matrix_file(p)
    assert_one_line_usage_error(e, str(p), "line 2")


def test_missing_file(tmp_path):
    with pytest.raises(UsageError) as e:
        load_matrix_file(tmp_path / "nope.toml")
    assert_one_line_usage_error(e, "nope.toml", "no such matrix file")


def test_the_docstring_example_file_loads(tmp_path):
    doc = matrix.__doc__ or ""
    example = doc.split("Matrix file (TOML)::", 1)[1].split("\n\n", 2)[1]
    spec = load_matrix_file(write(tmp_path, example, name="gaudi.toml"))
    assert spec.name == "gaudi-vs-h100"
    assert len(spec.grids) == 2 and spec.grids[1].devices == (1, "auto", (0, 2))
    planned = expand(spec, GAUDI2_8, CATALOG, KINDS)
    assert {p.cell.accelerator for p in planned} == {"hpu"}
    assert len(planned) == 2 * 2 + 2 * 3


def test_exclude_with_an_unknown_name_is_an_error():
    spec = MatrixSpec(grids=(Grid(),), exclude=({"workload": "mpl"},))
    with pytest.raises(UsageError) as e:
        expand(spec, CPU2, CATALOG, KINDS)
    assert_one_line_usage_error(e, "mpl", "mlp, resnet")


def test_unknown_workload_in_a_file_is_caught_at_expansion(tmp_path):
    spec = load_matrix_file(write(tmp_path, 'workload = "llama"\n'))
    with pytest.raises(UsageError) as e:
        expand(spec, CPU2, CATALOG, KINDS)
    assert_one_line_usage_error(e, "llama", "valid: all, mlp")


# ---- steps = "auto" ---------------------------------------------------------------------------------------
def test_auto_steps_from_a_matrix_file_reach_the_cells(tmp_path):
    p = write(
        tmp_path,
        """
        workload = "mlp"
        steps = "auto"
        target_ci = "5%"
        max_time = 4
        [[grid]]
        [[grid]]
        workload = "gpt"
        steps = 12
        """,
    )
    planned = expand(load_matrix_file(p), CPU2, CATALOG, KINDS)
    by_workload = {pc.cell.workload: pc.cell for pc in planned}
    mlp, gpt = by_workload["mlp"], by_workload["gpt"]
    assert mlp.steps is None
    assert (mlp.auto_steps.target_ci, mlp.auto_steps.max_time_s, mlp.auto_steps.min_steps) == (0.05, 4.0, 10)
    assert (gpt.steps, gpt.auto_steps) == (12, None)
    assert mlp.key == "mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault"  # steps never enter the key


def test_auto_knobs_on_the_command_line_replace_only_themselves():
    base = spec_from_options(workload=["mlp"], steps="auto", auto={"max_time": 2.0, "min_time": 0.1})
    longer = spec_from_options(base, auto={"max_time": 9.0})
    [pc] = one(longer)
    assert (pc.cell.auto_steps.max_time_s, pc.cell.auto_steps.min_time_s) == (9.0, 0.1)
    [fixed] = one(spec_from_options(base, steps=7))
    assert (fixed.cell.steps, fixed.cell.auto_steps) == (7, None)


def test_auto_knobs_without_auto_steps_are_refused():
    with pytest.raises(UsageError) as e:
        spec_from_options(workload=["mlp"], auto={"target_ci": 0.05})
    assert_one_line_usage_error(e, "--target-ci applies to --steps auto only")
    with pytest.raises(UsageError) as e:
        spec_from_options(workload=["mlp"], steps="auto", auto={"min_time": 5.0, "max_time": 1.0})
    assert_one_line_usage_error(e, "longer than max_time")
