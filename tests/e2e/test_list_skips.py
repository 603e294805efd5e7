"""`list cells` counts skipped cells by reason and lists them only with --skipped (issue 15)."""

from __future__ import annotations

import re


def test_skips_are_counted_by_reason_and_listed_on_request(cli, tmp_path):
    proc = cli("list", "cells", "--matrix", "smoke", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert re.search(r"^\s*2 skipped: lazy mode exists only on HPU, not on cpu$", out, re.M), out
    assert re.search(r"^\s*1 skipped: graph capture is not available on cpu$", out, re.M), out
    assert "mlp/tiny/cpu/1x1/32-true/lazy/graphs/bsdefault" not in out  # a skipped cell: counted, not listed
    assert "bert/tiny/cpu/1x1/32-true/eager/nographs/bsdefault" in out  # a cell that runs: listed
    listed = cli("list", "cells", "--matrix", "smoke", "--skipped", cwd=tmp_path).stdout
    assert "mlp/tiny/cpu/1x1/32-true/lazy/graphs/bsdefault" in listed
    assert "skip: lazy mode exists only on HPU" in listed
