"""Where the step's time goes (issue 33, item 4), end to end: a real ``hpubench run`` of mlp tiny, eager and
compiled, writes the phase split into every record, with the residue against the measured step, and
``results --wide`` shows it. No timing bound is asserted (a shared machine stretches any one): the
structure, positive phases, and a residue that is reported and matches the figures it came from."""

from __future__ import annotations

import json

import pytest

EAGER = "mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault"
COMPILE = "mlp/tiny/cpu/1x1/32-true/compile/nographs/bsdefault"


@pytest.mark.slow
def test_every_record_has_the_phase_split_and_results_wide_shows_it(cli, tmp_path):
    run = tmp_path / "run"
    proc = cli(
        "run", "-w", "mlp", "--mode", "eager,compile", "--steps", "20", "--warmup-steps", "3", "-o", str(run)
    )
    assert proc.returncode == 0, proc.stderr
    recs = {r["key"]: r for r in map(json.loads, (run / "cells.jsonl").read_text().splitlines())}
    assert set(recs) == {EAGER, COMPILE}
    for r in recs.values():
        assert r["status"] == "ok", r["reason"]
        phases = r["phases"]
        # Separable here: a compiled model splits (its forward and backward are the compiled graphs)
        assert phases["separable"] is True, phases["method"]
        assert phases["steps"] == 5 and phases["data_s"] is None  # no --loader host: no data phase
        parts = [phases["forward_s"], phases["backward_s"], phases["optimizer_s"]]
        assert all(p > 0 for p in parts)
        mean = sum(r["step_times_s"]) / len(r["step_times_s"])
        assert phases["step_mean_s"] == pytest.approx(mean)
        assert phases["residue"] == pytest.approx(1 - sum(parts) / mean)  # the residue is reported
        assert -10 < phases["residue"] < 1  # a fraction of the step, whatever the machine's noise
    assert any("compiled graphs" in n for n in recs[COMPILE]["phases"]["notes"])

    wide = cli("results", str(run), "--wide")
    assert wide.returncode == 0, wide.stderr
    assert "fwd/bwd/opt" in wide.stdout
    assert "% res " in wide.stdout


@pytest.mark.slow
def test_the_loader_pass_gives_the_split_its_data_phase(cli, tmp_path):
    run = tmp_path / "run"
    proc = cli("run", "-w", "mlp", "--steps", "10", "--warmup-steps", "2", "--loader", "host", "-o", str(run))
    assert proc.returncode == 0, proc.stderr
    (r,) = [json.loads(line) for line in (run / "cells.jsonl").read_text().splitlines()]
    assert r["phases"]["data_s"] is not None and r["phases"]["data_s"] >= 0
    assert r["loader"] is not None
