"""What the estimate probe counts and times (hpubench.run.probe): convolution FLOPs apart from the rest
(they run at their own calibrated rate), a problem grown until launches no longer hide a device's rate,
and cached counts that predate a new count are recounted."""

from __future__ import annotations

import json
from pathlib import Path

import workloads
from hpubench.plan.cell import flops_key
from hpubench.run import probe


def test_convolution_flops_are_counted_apart_and_a_model_without_convolutions_has_none() -> None:
    resnet = probe.count_model(workloads.get("resnet"), "tiny", 4)
    assert 0 < resnet["conv_flops"] < resnet["flops"]  # the head's linear layer and the rest are not convs
    assert resnet["conv_flops"] > 0.9 * resnet["flops"]
    assert probe.count_model(workloads.get("mlp"), "tiny", 4)["conv_flops"] == 0


def _sizes(flops_of: object, start: int, max_n: int) -> tuple[list[int], float]:
    seen: list[int] = []

    def make(n: int):
        seen.append(n)
        return (lambda: None), flops_of(n)  # type: ignore[operator]

    rate = probe._grow_rate(make, start, max_n, lambda: None, probe.CALIBRATION_S["device"])
    return seen, rate


def test_a_problem_grows_while_its_rate_rises_up_to_the_cap() -> None:
    # Work grows 8x per doubling at about the same (launch-bound) time: the rate keeps rising.
    seen, rate = _sizes(lambda n: float(n) ** 3, 256, 8192)
    assert seen == [256, 512, 1024, 2048, 4096, 8192]
    assert rate > 0


def test_a_problem_stops_growing_once_doubling_no_longer_raises_the_rate() -> None:
    # Less work per run at each doubling: the rate falls, so the first doubling ends the search.
    seen, _ = _sizes(lambda n: 1.0 / n, 256, 8192)
    assert seen == [256, 512]


def test_the_host_cap_keeps_a_cpu_calibration_small() -> None:
    seen, _ = _sizes(lambda n: float(n) ** 3, 256, probe.LINEAR_MAX_N["host"])
    assert max(seen) == probe.LINEAR_MAX_N["host"]


def test_calibration_times_convolutions_per_dtype() -> None:
    cal = probe.calibrate("cpu", ["fp32", "bf16"], host=True)
    assert set(cal["conv_tflops"]) == {"fp32", "bf16"}
    assert all(v > 0 for v in cal["conv_tflops"].values())


def test_a_cached_count_from_before_convolutions_were_counted_is_recounted(tmp_path: Path) -> None:
    cache = tmp_path / "facts.json"
    wl = workloads.get("resnet")
    key = flops_key("resnet", "tiny", 4, ())
    stale = {"digest": probe.source_digest(wl), "params": 1, "flops": 1, "ops": 1}  # no version, no convs
    cache.write_text(json.dumps({key: stale}))
    got = probe.facts([("resnet", "tiny", 4, {})], cache)[key]
    assert got["version"] == probe.FACTS_VERSION and got["conv_flops"] > 0
    assert json.loads(cache.read_text())[key]["conv_flops"] == got["conv_flops"]


def test_rank_threads_follow_the_thread_policy_and_never_exceed_a_ranks_share_of_the_cpus(
    monkeypatch,
) -> None:
    monkeypatch.setattr(probe, "affinity", lambda: [0, 1, 2, 3])
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("HPUBENCH_CPU_THREADS", "cores-1")
    assert probe._rank_threads(4) == [3.0, 1.0, 1.0, 1.0]
    monkeypatch.setenv("HPUBENCH_CPU_THREADS", "all")
    assert probe._rank_threads(4) == [4.0, 2.0, 1.0, 1.0]
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the user's count wins, within each rank's share
    assert probe._rank_threads(3) == [3.0, 2.0, 4 / 3, 1.0]


def test_convolutions_are_timed_only_when_asked() -> None:
    cal = probe.calibrate("cpu", ["fp32"], host=True, conv=False)
    assert cal["conv_tflops"] == {} and cal["tflops"]["fp32"] > 0


def test_the_probe_times_convolutions_only_for_a_matrix_with_them(tmp_path: Path) -> None:
    def cal(cell: str) -> dict:
        out = tmp_path / f"{cell.split('|')[0]}.json"
        argv = ["--out", str(out), "--cell", cell, "--calibrate", "cpu:host", "--dtype", "fp32"]
        assert probe.main([*argv, "--cache", str(tmp_path / "facts.json")]) == 0
        return json.loads(out.read_text())["calibration"]["cpu"]

    assert cal("mlp|tiny|0")["conv_tflops"] == {}  # no convolution in the model: not timed
    assert cal("resnet|tiny|0")["conv_tflops"]["fp32"] > 0
