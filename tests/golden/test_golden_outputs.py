"""The CLI's outputs on fixed result sets stay byte-identical to those the code wrote before the refactor
of issue 32 (``tests/golden/goldenrun.py`` writes and reads them): tables, exports, reports' table rows,
the gate's Markdown, the cells a matrix lists, and a real record's shape."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.golden.goldenrun import DATA, outputs

pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def produced() -> Iterator[dict[str, str]]:
    # tempfile's own directory, as when the goldens were written: tables wrap paths, so the path's length
    # must be the same (pytest's tmp_path is longer).
    with tempfile.TemporaryDirectory() as tmp:
        yield outputs(Path(tmp))


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.iterdir()))
def test_output_is_unchanged(name: str, produced: dict[str, str]) -> None:
    assert produced[name] == (DATA / name).read_text()


def test_every_output_has_its_golden_file(produced: dict[str, str]) -> None:
    assert sorted(produced) == sorted(p.name for p in DATA.iterdir())
