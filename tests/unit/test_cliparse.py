import pytest

from hpubench.cliparse import parse_dimensions
from hpubench.errors import UsageError


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
        ({"size": ["huge"]}, "--size"),
        ({"graphs": ["maybe"]}, "--graphs"),
        ({"steps": 1}, "--steps"),
        ({"warmup_steps": 0}, "--warmup-steps"),
    ],
)
def test_bad_values_give_one_line(kwargs, fragment):
    with pytest.raises(UsageError) as exc:
        parse_dimensions(**kwargs)
    assert fragment in str(exc.value)
    assert "\n" not in str(exc.value)
