"""The default price table is one source of truth: a note beside a price never quotes another price."""

from __future__ import annotations

import re

import pytest

from hpubench.analysis.prices import PRICES


@pytest.mark.parametrize("entry", PRICES, ids=lambda e: e.name)
def test_a_default_price_note_quotes_no_other_price(entry):
    quoted = {float(x.replace(",", "")) for x in re.findall(r"\$\s*([\d,]*\.?\d+)", entry.notes)}
    assert quoted <= {entry.usd_per_device_hour, entry.usd_per_instance_hour}, (entry.name, entry.notes)


@pytest.mark.parametrize("entry", PRICES, ids=lambda e: e.name)
def test_a_default_price_is_its_instance_price_split_over_its_devices(entry):
    if entry.usd_per_instance_hour is not None:
        assert entry.usd_per_instance_hour / entry.devices_per_instance == pytest.approx(
            entry.usd_per_device_hour, abs=0.005
        )
