"""How strict the gate is (:class:`GateSettings`, one field per option of ``hpubench gate``) and what its
permutation test can decide with the runs it is given.

Separate from the verdicts so the settings and their checks (each bad value a UsageError naming the
option) can be read, and reused by ``hpubench history``, without the decision logic. Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hpubench.analysis.stats.correction import CORRECTIONS
from hpubench.analysis.stats.estimator import TESTS, estimator_name
from hpubench.analysis.stats.locations import LOCATIONS
from hpubench.analysis.stats.ratiotests import RANDOM_PERMUTATIONS, smallest_permutation_pvalue
from hpubench.errors import UsageError

MISSING_POLICIES: tuple[str, ...] = ("fail", "ignore")
DEFAULT_THRESHOLD = 0.05
DEFAULT_ALPHA = 0.01
# Below this the intervals' quantiles run into float's resolution (1 - alpha/2 rounds to 1 near 1e-16),
# and no gate needs fewer than one false alarm in a million.
MIN_ALPHA = 1e-6
DEFAULT_MEMORY_FLOOR_BYTES = 1 << 20
MIN_RSS_RUNS = 3  # runs a side before a process RSS growth can fail (see gateverdicts._memory_verdict)


@dataclass(frozen=True)
class GateSettings:
    """How strict the gate is; every field is a command-line option of ``hpubench gate``."""

    throughput_threshold: float = DEFAULT_THRESHOLD  # fail beyond this relative throughput drop ...
    memory_threshold: float = DEFAULT_THRESHOLD  # ... or this relative peak-memory growth
    memory_floor_bytes: int = DEFAULT_MEMORY_FLOOR_BYTES  # and memory growth beyond this many bytes
    alpha: float = DEFAULT_ALPHA  # family-wise (holm) or false-discovery (bh) error rate
    correction: str = "holm"
    missing: str = "fail"
    statistic: str = "min"  # per run: "min" (fastest step: steadiest on shared machines), "mean" or "median"
    test: str = "auto"  # "permutation" (fastest half of the runs), "welch" (t on log values), "auto"
    confidence: float = 0.95  # of the intervals shown (the decision uses alpha and the correction)
    strict_quality: bool = False  # fail cells whose runs are interfered, recompiled or partial
    # False: a cell whose FLOPs per step changed (a model change) is still compared, in samples/s; the
    # samples (and tokens) per step must still agree
    same_flops: bool = True

    @property
    def estimator(self) -> str:
        """The estimator in one line, as every output of the gate names it."""
        return estimator_name(self.statistic, self.test)

    def __post_init__(self) -> None:
        for name in ("throughput_threshold", "memory_threshold"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and 0 <= v < 1):
                raise UsageError(f"{name.replace('_', ' ')} must be a fraction in [0, 1), e.g. 0.05, got {v}")
        if not (isinstance(self.memory_floor_bytes, int) and self.memory_floor_bytes >= 0):
            raise UsageError(
                f"memory floor must be a whole number of bytes >= 0, got {self.memory_floor_bytes}"
            )
        if not MIN_ALPHA <= self.alpha < 1:
            raise UsageError(f"alpha must be at least {MIN_ALPHA:g} and below 1, e.g. 0.01, got {self.alpha}")
        if not 0 < self.confidence < 1:
            raise UsageError(f"confidence must be strictly between 0 and 1, got {self.confidence}")
        if self.correction not in CORRECTIONS:
            raise UsageError(f"correction must be one of {', '.join(CORRECTIONS)}, got {self.correction!r}")
        if self.missing not in MISSING_POLICIES:
            raise UsageError(f"missing must be one of {', '.join(MISSING_POLICIES)}, got {self.missing!r}")
        if self.statistic not in LOCATIONS:
            raise UsageError(f"statistic must be one of {', '.join(LOCATIONS)}, got {self.statistic!r}")
        if self.test not in TESTS:
            raise UsageError(f"test must be one of {', '.join(TESTS)}, got {self.test!r}")


def permutation_test_can_decide(n_base: int, n_cur: int, alpha: float, tests: int) -> bool:
    """Whether a permutation test of these runs can pass the strictest step of the correction (alpha /
    tests). It gives no p-value below 1 / C(n_base + n_cur, n_cur); with too few runs it could never flag
    anything, and a gate that cannot fail is worse than a weaker test that can."""
    return smallest_permutation_pvalue(n_base, n_cur) <= alpha / max(1, tests)


def runs_needed_for_permutation_test(alpha: float, tests: int) -> int | None:
    """The fewest runs per side (the same on both) with which the permutation test can decide; None where
    no run count can, because alpha / tests is below the floor of its drawn relabellings."""
    if alpha / max(1, tests) < 1.0 / (RANDOM_PERMUTATIONS + 1):  # past EXACT_PERMUTATIONS, p is drawn
        return None
    r = 2
    while not permutation_test_can_decide(r, r, alpha, tests):
        r += 1
    return r
