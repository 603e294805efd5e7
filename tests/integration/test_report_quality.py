"""The quality verdict where users read figures: the report's cells table and headline cards, and the
csv/json of ``hpubench results``. The headline may name a best configuration only when its interval clears
the runner-up's and both are ok."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

import pandas as pd
import pytest
from reportdata import fake_result, table_rows, write_run

from hpubench.plan.cell import Cell
from hpubench.present.cli.main import main


@pytest.fixture(scope="module")
def quality_run(tmp_path_factory) -> Path:
    """Per workload, two configurations on one device: apart, overlapping, one interfered, one noisy."""
    pair = {
        "resnet": ({"step_s": 0.05}, {"step_s": 0.10}),  # clearly apart, both ok
        "bert": ({"step_s": 0.100}, {"step_s": 0.101}),  # 1% apart with 2% step noise: overlapping
        "gpt": ({"step_s": 0.05, "facts": {"interference": 0.5}}, {"step_s": 0.10}),  # apart, one interfered
        "mlp": ({"step_s": 0.05, "noise": 0.4}, {"step_s": 0.10}),  # one noisy
    }
    records = [
        fake_result(w, "hpu", "GAUDI2", precision=p, seed=i, **kw)
        for w, configs in pair.items()
        for i, (p, kw) in enumerate(zip(("bf16-mixed", "32-true"), configs, strict=True))
    ]
    return write_run(tmp_path_factory.mktemp("quality") / "run", records)


def _cards(html: str) -> dict[str, str]:
    """The headline card of each workload, as HTML."""
    parts = re.split(r'<div class="card" data-workload="', html)[1:]
    return {p.split('"', 1)[0]: p.split("</section>", 1)[0] for p in parts}


def _decisions(card: str) -> list[str]:
    return re.findall(r'data-decision="([^"]+)"', card)


def test_headline_names_a_winner_only_when_intervals_are_apart_and_both_ok(quality_run, tmp_path):
    out = tmp_path / "r.html"
    main(["report", str(quality_run), "-o", str(out)])
    html = out.read_text(encoding="utf-8")
    cards = _cards(html)
    # Throughput, then cost: the same two configurations on one device, so the same decision twice.
    assert _decisions(cards["resnet"]) == ["winner", "winner"]
    assert "Highest throughput</div>" in cards["resnet"] and "Ahead of the runner-up" in cards["resnet"]
    assert "within-run only" in cards["resnet"]  # one run each: the winner says what its intervals hold
    assert _decisions(cards["bert"]) == ["no significant difference"] * 2
    assert "No significant difference." in cards["bert"] and "not a winner" in cards["bert"]
    assert "Ahead of the runner-up" not in cards["bert"]
    assert _decisions(cards["gpt"]) == ["not comparable"] * 2
    assert "Not comparable: interfered." in cards["gpt"]
    assert "Not comparable: noisy." in cards["mlp"]

    rows = table_rows(html)
    cell_keys = {
        f"run|{Cell(w, accelerator='hpu', precision=p, warmup_steps=2, steps=12).key}": f"{w}/{p}"
        for w in ("gpt", "mlp", "bert")
        for p in ("bf16-mixed", "32-true")
    }
    verdicts = {name: rows[key]["quality"] for key, name in cell_keys.items()}
    assert verdicts["gpt/bf16-mixed"] == ("interfered", "interfered")
    assert verdicts["mlp/bf16-mixed"] == ("noisy", "noisy")
    assert verdicts["bert/32-true"] == ("ok", "ok")
    # The reasons are the value's hover text.
    assert re.search(
        r'data-col="quality"[^>]*title="other processes used 50% of the window&#39;s core time', html
    )


def test_old_records_are_never_a_winner(quality_run, tmp_path):
    run = tmp_path / "old"
    run.mkdir()
    lines = (quality_run / "cells.jsonl").read_text().splitlines()
    old = []
    for line in lines:
        d = json.loads(line)
        del d["quality"], d["quality_reasons"]  # as written before verdicts existed
        old.append(json.dumps(d))
    (run / "cells.jsonl").write_text("\n".join(old) + "\n")
    out = tmp_path / "r.html"
    main(["report", str(run), "-o", str(out)])
    cards = _cards(out.read_text(encoding="utf-8"))
    assert _decisions(cards["resnet"]) == ["not comparable"] * 2
    assert "Not comparable: no quality verdict." in cards["resnet"]


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_results_export_carries_quality_and_reasons(quality_run, fmt):
    buf = io.StringIO()
    with redirect_stdout(buf):
        main(["results", str(quality_run), "--format", fmt])
    text = buf.getvalue()
    df = pd.read_csv(io.StringIO(text)) if fmt == "csv" else pd.DataFrame(json.loads(text))
    by = {
        (w, p): (q, r)
        for w, p, q, r in df[["workload", "precision", "quality", "quality_reasons"]].to_numpy()
    }
    assert by[("gpt", "bf16-mixed")] == (
        "interfered",
        "other processes used 50% of the window's core time (> 10% bound)",
    )
    assert by[("resnet", "32-true")][0] == "ok"
    assert by[("resnet", "32-true")][1] in (None, "") or pd.isna(by[("resnet", "32-true")][1])
