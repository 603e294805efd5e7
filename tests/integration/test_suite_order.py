"""The in-process HPU tests pass whatever ran before them in their process. A CPU backward run first (as
test_trainstep's tests run) once left the double's HPU unusable to autograd in that process, and only the
files' alphabetical order hid it; under pytest-xdist (``make test``) any order happens. tests/conftest.py
loads the double's runtime before the first test to prevent it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CPU_BACKWARD_FIRST = (
    "tests/integration/test_trainstep.py::test_a_precision_with_autocast_keeps_its_context_in_the_step",
    "tests/integration/test_hpu_double_compiles.py"
    "::test_lazy_graphs_compile_once_per_input_shape_counted_from_the_bridge_import",
)


@pytest.mark.slow  # a pytest session of its own (~10 s)
def test_a_cpu_backward_before_the_double_leaves_its_hpu_usable() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *CPU_BACKWARD_FIRST],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout[-3000:]
