"""``benchmarks/agreement.py``'s rows: the ratio is taken against its plain script (importing pandas, the kind
of script a plain cell stands for), the A/A against that script's second run, and under plain the torch-only
script's ratio sits beside it without deciding the verdict."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import agreement  # noqa: E402
import trainer_agreement  # noqa: E402

from hpubench.analysis.stats.medianci import median_interval  # noqa: E402


def _runs(*speeds: float) -> list[dict[str, Any]]:
    return [{"samples_per_s": s, "faults": 0.0, "threads": 1} for s in speeds]


def test_the_verdict_is_against_the_plain_script_and_the_torch_only_ratio_is_beside_it() -> None:
    results = {
        ("resnet", "tuned", "hpubench"): _runs(100, 101, 99),
        ("resnet", "tuned", "plain"): _runs(100, 100, 100),
        ("resnet", "tuned", agreement.AGAIN): _runs(100, 99, 101),
        ("resnet", "plain", "hpubench"): _runs(110, 111, 109),
        ("resnet", "plain", "plain"): _runs(110, 110, 110),
        ("resnet", "plain", agreement.AGAIN): _runs(110, 111, 109),
        ("resnet", "plain", agreement.TORCH_ONLY): _runs(100, 100, 100),
    }
    tuned, plain = agreement.summarise(results, ["resnet"])
    assert tuned["condition"] == "tuned" and tuned["ratio_torch_only"] is None
    assert abs(plain["ratio"] - 1.0) < 1e-9 and plain["verdict"] == "in band"
    assert plain["ratio_torch_only"] == 1.1 and plain["torch_only_range"] == [1.09, 1.11]
    assert plain["aa_interval"] == [109 / 110, 111 / 110]


def test_the_round_figure_is_against_both_plain_runs_so_a_lean_between_them_cancels() -> None:
    """Plain's first run is 10% fast in every round: against it alone hpubench would read 0.91; against
    the geometric mean of both runs it reads 1.00, and the A/A interval, missing 1.00, says they lean."""
    speeds = [100.0 + d for d in (0, 2, -2, 1, -1, 3, -3, 0.5)]
    results = {
        ("gpt", "tuned", "hpubench"): _runs(*speeds),
        ("gpt", "tuned", "plain"): _runs(*[s * 1.1 for s in speeds]),
        ("gpt", "tuned", agreement.AGAIN): _runs(*[s / 1.1 for s in speeds]),
    }
    results |= {("gpt", "plain", side): v for (_, _, side), v in results.items()}
    row = agreement.summarise(results, ["gpt"])[0]
    assert abs(row["ratio"] - 1.0) < 1e-9 and row["verdict"] == "in band"
    assert row["aa_interval"][1] < 1.0 and "lean" in agreement.aa_check(row["aa_interval"])
    assert agreement.aa_check([0.97, 1.03]) == ""


def test_the_verdict_reads_the_median_s_interval_not_the_spread_of_single_rounds() -> None:
    """More rounds narrow a median's interval: 20 rounds 4% slow with a wide spread are outside; the
    same median over 6 rounds spread as widely is not decided."""
    many = [0.80, 0.82, 0.84, 0.86, 0.88, *(0.94 + 0.004 * i for i in range(10)), 1.1, 1.12, 1.14, 1.16, 1.2]
    wide = median_interval(many)
    assert wide.high < agreement.BAND[0], wide
    assert agreement.verdict(wide).startswith("OUTSIDE")
    few = median_interval([0.80, 0.90, 0.95, 0.97, 1.05, 1.10])
    assert few.median < agreement.BAND[0] and agreement.verdict(few).startswith("not decided")
    assert agreement.verdict(median_interval([0.9, 0.99, 1.2])) == "in band"


def test_every_plain_script_but_the_torch_only_one_imports_pandas(monkeypatch) -> None:
    commands: list[list[str]] = []

    class Done:
        stdout = '{"samples_per_s": 1.0, "minor_faults_per_step": 0.0, "torch_threads": 1}\n'

    def run(cmd: list[str], **kw: Any) -> Done:
        commands.append(cmd)
        return Done()

    monkeypatch.setattr(agreement.subprocess, "run", run)
    for condition, side in (("tuned", "plain"), ("plain", agreement.AGAIN), ("plain", agreement.TORCH_ONLY)):
        assert agreement.run_plain("mlp", condition, side)["samples_per_s"] == 1.0
    imports = [cmd[cmd.index("--import") + 1] if "--import" in cmd else None for cmd in commands]
    assert imports == ["pandas", "pandas", None]


def test_over_four_rounds_no_contender_keeps_a_fixed_place() -> None:
    for condition in agreement.CONDITIONS:
        orders = [agreement.round_order(rnd, condition) for rnd in range(4)]
        for order in orders:
            assert sorted(order) == sorted(set(order)) and "hpubench" in order
        assert [o.index("hpubench") == 0 for o in orders] == [True, True, False, False]
        assert [o.index("hpubench") == len(o) - 1 for o in orders] == [False, False, True, True]
        plain_first = [o.index("plain") < o.index(agreement.AGAIN) for o in orders]
        assert plain_first == [True, False, True, False]
        assert (agreement.TORCH_ONLY in orders[0]) == (condition == "plain")


def test_the_trainer_rows_pair_each_round_s_runs_and_take_the_median_ratio() -> None:
    """``trainer_agreement`` pairs its contenders round by round as ``agreement`` does: the round where the
    cell ran slow gives a low ratio, and the median leaves it out."""
    speeds = {side: [100.0, 100.0, 100.0] for side in trainer_agreement.SIDES}
    speeds["cell"] = [50.0, 100.0, 200.0]
    speeds["callback"] = [50.0, 105.0, 200.0]
    results = {("hf", side): _runs(*v) for side, v in speeds.items()}
    rows = trainer_agreement.summarise(results, ["hf"])
    by_pair = {r["pair"]: r for r in rows}
    assert by_pair["callback / cell"]["rounds"] == [1.0, 1.05, 1.0]
    assert by_pair["callback / cell"]["ratio"] == 1.0
    assert by_pair["cell / loop: the harness"]["rounds"] == [0.5, 1.0, 2.0]


def test_each_row_counts_hpubench_s_own_timing_verdicts_ok_first() -> None:
    h = _runs(100, 90, 101, 80)
    for r, q in zip(h, ("ok", "unstable", "ok", "noisy"), strict=True):
        r["quality"] = q
    results = {("mlp", c, "hpubench"): h for c in agreement.CONDITIONS}
    results |= {
        ("mlp", c, side): _runs(100, 100, 100, 100)
        for c in agreement.CONDITIONS
        for side in ("plain", agreement.AGAIN)
    }
    row = agreement.summarise(results, ["mlp"])[0]
    assert row["hpubench_verdicts"] == "2 ok, 1 noisy, 1 unstable"
    assert agreement.own_verdicts(_runs(1, 2)) == "2 none"
