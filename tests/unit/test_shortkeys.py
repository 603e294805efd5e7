"""Keys cut to their differing parts, the shared ones said once (issue 15: keys cut so rows look alike)."""

from __future__ import annotations

from hpubench.present.shortkeys import shorten

A = "mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault"
B = "gpt/tiny/cpu/1x1/32-true/eager/nographs/bsdefault"
C = "mlp/tiny/cpu/1x1/bf16-mixed/eager/nographs/bsdefault"


def test_keeps_only_the_parts_that_differ() -> None:
    s = shorten([A, B, C, A])
    assert s.short == {A: "mlp/32-true", B: "gpt/32-true", C: "mlp/bf16-mixed"}
    assert s.common == "*/tiny/cpu/1x1/*/eager/nographs/bsdefault"
    assert len(set(s.short.values())) == 3  # rows stay distinguishable


def test_one_key_stays_whole() -> None:
    assert shorten([A, A]).short == {A: A}
    assert shorten([A]).common == ""


def test_keys_of_different_shapes_stay_whole() -> None:
    s = shorten([A, "mlp/tiny"])
    assert s.short == {A: A, "mlp/tiny": "mlp/tiny"}
