"""The worker's runtime facts (``hpubench.run.cellrun.facts``): returned by each step, merged once as writes
into one dict were, and kept by a failure part way through however deeply it happened."""

from __future__ import annotations

import pytest

from hpubench.plan import extrawork
from hpubench.run.cellrun.facts import Learned, Stopped, runtime_of


def test_facts_merge_in_order_and_a_later_value_keeps_the_first_place() -> None:
    merged = runtime_of(
        (("accelerator", "cpu"), ("distributed", {"backend": "gloo"})),
        (("batch_size", 8),),
        (("distributed", {"backend": "gloo", "ranks": 2}), ("timing", "t")),
    )
    assert list(merged) == ["accelerator", "distributed", "batch_size", "timing"]
    assert merged["distributed"] == {"backend": "gloo", "ranks": 2}


def test_a_step_returns_only_its_own_facts_but_reads_the_known_ones() -> None:
    learned = Learned((("device_name", "x"), ("compiles_measured", 0)))
    learned.add("compiles_measured", 2)
    learned.extend((("timing", "t"),))
    assert learned.new() == (("compiles_measured", 2), ("timing", "t"))
    assert learned.get("device_name") == "x" and learned.get("compiles_measured") == 2
    assert learned.get("absent", "default") == "default"


def test_a_failure_leaves_with_the_original_exception_and_every_fact_known_before_it() -> None:
    cause = ValueError("bad option")
    with pytest.raises(Stopped) as info:
        learned = Learned((("accelerator", "cpu"),))
        with learned.keeping():
            learned.add("batch_size", 8)
            raise cause
    assert info.value.cause is cause
    assert info.value.facts == (("accelerator", "cpu"), ("batch_size", 8))


def test_a_nested_step_that_stopped_adds_its_facts_after_the_outer_ones() -> None:
    def inner() -> None:
        learned = Learned()
        with learned.keeping():
            learned.add("mode_requested", "lazy")
            raise RuntimeError("requested mode 'lazy' but the device runs 'eager'")

    outer = Learned((("accelerator", "hpu"),))
    with pytest.raises(Stopped) as info, outer.keeping():
        outer.add("precision", {"params": "float32"})
        inner()
    assert isinstance(info.value.cause, RuntimeError)
    assert [name for name, _ in info.value.facts] == ["accelerator", "precision", "mode_requested"]


def test_an_interrupt_is_not_a_cell_failure_and_passes_through_unchanged() -> None:
    with pytest.raises(KeyboardInterrupt), Learned().keeping():
        raise KeyboardInterrupt


def test_a_plain_step_learns_nothing_and_an_extra_work_step_nothing_before_its_warmup_ends() -> None:
    step = extrawork.apply_options({}, object(), lambda b: b, 1, lambda: None, "cpu")
    assert extrawork.learned_facts(step) == ()
    planted = extrawork.apply_options({"extra_work": "0.1"}, object(), lambda b: b, 3, lambda: None, "cpu")
    assert planted is not step and extrawork.learned_facts(planted) == ()
