import pytest

from hpubench.errors import UsageError
from hpubench.plan.cliparse import parse_dimensions


def test_only_given_dimensions_are_returned():
    assert parse_dimensions() == {}
    out = parse_dimensions(
        workload=["mlp"],
        devices=["2", "auto", "[0,2]"],
        graphs=["on", "off"],
        batch_size=["default", "16"],
        nodes=["1"],
        steps=10,
        warmup_steps=2,
    )
    assert out == {
        "workload": ["mlp"],
        "devices": [2, "auto", [0, 2]],
        "graphs": [True, False],
        "batch_size": [None, 16],
        "nodes": [1],
        "steps": 10,
        "warmup_steps": 2,
    }


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"devices": ["two"]}, "--devices"),
        ({"devices": ["[0,0]"]}, "twice"),
        ({"devices": ["[0,"]}, "indices"),
        ({"devices": ["0"]}, "at least 1"),
        ({"precision": ["fp64"]}, "--precision 'fp64'"),
        ({"mode": ["jit"]}, "--mode"),
        ({"size": ["ti/ny"]}, "--size"),  # an unknown size needs the catalog: refused at expansion
        ({"graphs": ["maybe"]}, "--graphs"),
        ({"steps": 1}, "--steps"),
        ({"steps": "foo"}, "--steps takes a whole number >= 2 or 'auto'"),
        ({"steps": "auto", "auto": {"target_ci": "0"}}, "--target-ci 0: target_ci must be"),
        ({"steps": "auto", "auto": {"max_time": "-1"}}, "--max-time -1: max_time must be positive"),
        ({"steps": "auto", "auto": {"min_steps": "x"}}, "--min-steps x: takes a number"),
        ({"steps": "20", "auto": {"max_time": "3"}}, "--max-time applies to --steps auto only"),
        ({"warmup_steps": 0}, "--warmup-steps"),
    ],
)
def test_bad_values_give_one_line(kwargs, fragment):
    with pytest.raises(UsageError) as exc:
        parse_dimensions(**kwargs)
    assert fragment in str(exc.value)
    assert "\n" not in str(exc.value)


def test_steps_auto_and_its_knobs():
    out = parse_dimensions(steps="auto", auto={"target_ci": "5%", "max_time": "3", "min_time": None})
    assert out == {"steps": "auto", "auto": {"target_ci": pytest.approx(0.05), "max_time": 3.0}}
    assert parse_dimensions(steps="25") == {"steps": 25}
    # knobs alone are kept: a preset or matrix file may measure with steps = "auto"
    assert parse_dimensions(auto={"min_steps": "20"}) == {"auto": {"min_steps": 20}}
