"""C18: what the card holds (``tensor_utils.cpp`` ``is_supported_type``, ``lazy_to_backend.cpp``, 1.19):
float64 is stored as float32 (the tensor still says float64; values beyond float32's range are refused),
complex is refused ("Complex datatype is not supported on HPU device."), and float16 on first-generation
Gaudi at the first half tensor ("float16/half is not supported on Gaudi.")."""

from __future__ import annotations

import pytest
import torch


def test_float64_keeps_its_name_but_float32_precision(bridge) -> None:
    bridge()
    x = torch.tensor([1.0 + 1e-12], dtype=torch.float64).to("hpu")
    assert x.dtype == torch.float64
    assert x.cpu().item() == 1.0  # the 1e-12 did not survive the card
    with pytest.raises(RuntimeError, match="Error when trying to cast Double to Float"):
        torch.tensor([1e300], dtype=torch.float64).to("hpu")


def test_complex_is_refused(bridge) -> None:
    bridge()
    with pytest.raises(RuntimeError, match=r"^Complex datatype is not supported on HPU device\.$"):
        torch.ones(2, dtype=torch.complex64).to("hpu")


def test_half_is_refused_on_first_generation_only(bridge) -> None:
    bridge(HPUBENCH_FAKE_HPU_NAME="GAUDI")
    with pytest.raises(RuntimeError, match="float16/half is not supported on Gaudi"):
        torch.ones(2, dtype=torch.float16, device="hpu")
    bridge(HPUBENCH_FAKE_HPU_NAME="GAUDI2")
    assert torch.ones(2, dtype=torch.float16, device="hpu").dtype == torch.float16


def test_an_allocation_is_judged_by_its_dtype_not_by_the_bits_it_happens_to_hold(bridge) -> None:
    # A fresh float64 allocation holds whatever was there before: values beyond float32's range must not
    # refuse it (the card refuses values when they are copied in, as above).
    bridge()
    for _ in range(20):
        junk = torch.full((4096,), 1e300, dtype=torch.float64)
        del junk
        assert torch.empty(4096, dtype=torch.float64, device="hpu").dtype == torch.float64
    with pytest.raises(RuntimeError, match="Complex datatype is not supported"):
        torch.empty(2, dtype=torch.complex64, device="hpu")
