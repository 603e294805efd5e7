"""The steady heap policy, applied in a real process, stops glibc from trimming and regrowing its heap.

The churn: a 4 MiB buffer freed (glibc then raises its mmap threshold to 4 MiB and its trim threshold to
8 MiB), then, each round, four 3 MiB buffers from the heap's top, freed together: 12 MiB free at the top
is above the trim threshold, so glibc's own policy gives it back and the next round faults it in again.
That is the pattern of a training step freeing its activations. Each case runs in its own fresh
interpreter, since mallopt changes the process for good.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hpubench.measure.heap_probe import glibc

pytestmark = pytest.mark.skipif(glibc() is None, reason="mallopt is glibc's")

CHURN = """
import json, resource, sys
from hpubench.measure.heap import plan_heap
from hpubench.measure.heap_probe import apply_heap_plan
facts = apply_heap_plan(plan_heap(sys.argv[1], {}))
first = bytearray(4 << 20)
del first
def round_():
    bufs = [bytearray(3 << 20) for _ in range(4)]
    del bufs
round_()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    round_()
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10
print(json.dumps({"facts": facts, "faults_per_round": faults}))
"""


def _churn(policy: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHURN, policy], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(proc.stdout)


def test_glibcs_own_policy_refaults_the_heap_every_round() -> None:
    out = _churn("system")
    assert out["facts"]["applied"] is False
    # 12 MiB is 3072 pages: most of them fault in again each round (2272 seen on the dev VM).
    assert out["faults_per_round"] > 1000, out


def test_steady_holds_the_heap_so_rounds_stop_faulting() -> None:
    out = _churn("steady")
    facts = out["facts"]
    assert facts["applied"] is True and facts["allocator"].startswith("glibc ")
    assert facts["mmap_threshold"] == 32 * 2**20 and facts["trim_threshold"] == 2**30
    assert out["faults_per_round"] < 10, out
