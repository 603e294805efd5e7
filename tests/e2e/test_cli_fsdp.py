"""fsdp beside ddp through the real CLI: 2 CPU ranks over gloo, torch.distributed's elastic launch.

Both cells start every rank from the same seeded model and give each rank the same batches (seed +
rank), so after the same steps fsdp's loss must be ddp's up to float rounding (the same averaged
gradients, reduce-scattered instead of all-reduced). The fsdp record keeps each rank's own peak memory,
and ``hpubench results`` shows it.
"""

from __future__ import annotations

import json
import re

import pytest

DDP_KEY = "gpt/tiny/cpu/2x1/32-true/eager/nographs/bsdefault"
FSDP_KEY = DDP_KEY + "/strategy=fsdp"


def test_list_cells_shows_ddp_and_fsdp_with_their_keys(cli, tmp_path):
    proc = cli(
        "list", "cells", "-w", "gpt", "-a", "cpu", "--devices", "2", "--strategy", "ddp,fsdp", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert re.search(rf"{re.escape(DDP_KEY)}\s", text) and FSDP_KEY in text
    assert "2 to run, 0 skipped" in " ".join(text.split())


def test_a_bad_strategy_is_one_line_and_exit_2(cli, tmp_path):
    proc = cli("list", "cells", "-w", "gpt", "--strategy", "zero3", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--strategy 'zero3': unknown strategy; valid: single, ddp, fsdp, auto" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_fsdp_trains_the_same_model_as_ddp_and_records_each_ranks_peak(cli, tmp_path):
    run = tmp_path / "run"
    proc = cli(
        "run", "-w", "gpt", "-a", "cpu", "--devices", "2", "--strategy", "ddp,fsdp",
        "--steps", "4", "--warmup-steps", "2", "-o", str(run), "--wide",
        env={"COLUMNS": "250"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = {r["key"]: r for r in map(json.loads, (run / "cells.jsonl").read_text().splitlines())}
    ddp, fsdp = recs[DDP_KEY], recs[FSDP_KEY]
    assert ddp["status"] == fsdp["status"] == "ok", (ddp["reason"], fsdp["reason"])
    assert (ddp["runtime"]["strategy"], fsdp["runtime"]["strategy"]) == ("ddp", "fsdp")
    # per-block wrapping: each of gpt tiny's 2 transformer blocks, then the root
    assert fsdp["runtime"]["distributed"]["fsdp_units"] == ["blocks.0", "blocks.1", "(root)"]
    assert fsdp["metrics"]["loss_first"] == pytest.approx(ddp["metrics"]["loss_first"], rel=1e-5)
    assert fsdp["metrics"]["loss_last"] == pytest.approx(ddp["metrics"]["loss_last"], rel=1e-4)
    assert fsdp["metrics"]["loss_last"] < fsdp["metrics"]["loss_first"]  # it trained
    for rec in (ddp, fsdp):
        dist = rec["runtime"]["distributed"]
        peaks = dist["peak_memory_per_rank_bytes"]
        assert len(peaks) == 2 and all(isinstance(p, int) and p > 0 for p in peaks)
        assert peaks == [r["peak_memory_bytes"] for r in dist["ranks"]]
        assert rec["memory"]["peak_allocated_bytes"] == max(peaks)

    shown = cli("results", str(run), env={"COLUMNS": "100"})
    assert shown.returncode == 0, shown.stderr
    lines = " ".join(shown.stdout.split())
    assert "peak memory per rank" in lines
    assert re.search(r"strategy=fsdp: (\d[\d.]* [KMG]iB, ){1}\d[\d.]* [KMG]iB", lines), shown.stdout
