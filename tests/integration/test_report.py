"""Reports and comparisons from real smoke runs and hand-made Gaudi/H100 records: the numbers in the HTML
(and in the exports) are checked against the records they came from."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from html import escape
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from reportdata import PAYLOAD, fake_result, hpubench_cli, table_rows, write_run

from hpubench.analysis.compare import compare, group_runs
from hpubench.analysis.prices import Tables
from hpubench.plan.autosteps import LEAD_IN_STEPS
from hpubench.present.cli.main import main
from hpubench.store.readback import load_results
from hpubench.store.record import SCHEMA_VERSION
from reports import fmt

REL = 1e-9


def _float(v: str) -> float:
    return float(v)


def _report(*args: str) -> str:
    """The CLI command in-process (the console entry point itself is run as a subprocess below)."""
    main(["report", *args])
    out = Path(args[args.index("-o") + 1])
    return out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def priced_smoke_report(smoke_runs, tmp_path_factory) -> str:
    a, b = smoke_runs
    out = tmp_path_factory.mktemp("report") / "r.html"
    return _report(str(a), str(b), "-o", str(out), "--price-here", "0.5", "--epoch-samples", "100000")


def _runs(path: Path):
    return group_runs(load_results([str(path)]))


# ---- real smoke runs ----------------------------------------------------------------------------------


def test_report_numbers_match_the_real_records(smoke_runs, tmp_path):
    a, b = smoke_runs
    html = _report(
        str(a), str(b), "-o", str(tmp_path / "r.html"), "--price-here", "0.5", "--epoch-samples", "100000"
    )
    rows = table_rows(html)
    n = 0
    for run_dir in (a, b):
        for runs in _runs(run_dir):
            n += 1
            row = rows[f"{run_dir.name}|{runs.cell.key}"]
            rec = runs.record
            if not runs.measured:
                assert row["status"][1] == rec.status == "skipped"
                # Skipped before naming its device: labelled with the device the run detected.
                cpu = json.loads((run_dir / "meta.json").read_text())["inventory"]["cpu"]["device_name"]
                assert row["hardware"][1] == cpu
                assert "samples_per_s" not in row  # counted by reason, never a row of figures
                continue
            sps = runs.samples_per_s.value
            assert _float(row["samples_per_s"][0]) == pytest.approx(sps, rel=REL)
            assert (
                row["samples_per_s"][1]
                == f"{fmt.num(sps)} {fmt.ci(runs.samples_per_s.lo, runs.samples_per_s.hi)}"
            )
            if len(runs.measured) == 1:  # a cell run once reads exactly as its record
                assert _float(row["samples_per_s"][0]) == pytest.approx(rec.metrics.samples_per_s, rel=REL)
                assert row["samples_per_s"][1].startswith(fmt.num(rec.metrics.samples_per_s))
            else:
                assert row["repeats"] == ("2.0", "2")
            assert _float(row["usd_per_million_samples"][0]) == pytest.approx(
                0.5 / (sps * 3600) * 1e6, rel=REL
            )
            assert _float(row["workload_time_s"][0]) == pytest.approx(1e5 / sps, rel=REL)
            assert _float(row["workload_cost_usd"][0]) == pytest.approx(1e5 / sps / 3600 * 0.5, rel=REL)
            assert row["price_usd_per_device_hour"][1] == "$0.50"
            assert row["mfu"][1] == "no peak"  # no peak for this CPU in the table: no guessed MFU
            assert _float(row["memory_peak_allocated_bytes"][0]) == rec.memory.peak_allocated_bytes
            assert _float(row["step_time_p50_s"][0]) == pytest.approx(rec.metrics.step_time_p50_s, rel=REL)
    assert n == len([k for k in rows if "|" in k and k.split("|")[1].count("/") == 7])
    # The run with --memory-every has a timeline chart; the repeated run a repetitions column.
    assert 'id="chart-memtl-0"' in html and ">Reps<" in html
    assert "no supported fp8 training path on cpu" in html  # skipped cells with their reason
    # how it was measured, from the records: 5 measured steps, 1 warm-up step and the lead-in
    assert "5 per cell" in html and f"{1 + LEAD_IN_STEPS} step(s) ran first" in html
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=", html)  # nothing fetched


def test_report_without_a_price_says_no_price(smoke_runs, tmp_path):
    a, _ = smoke_runs
    # This host's CPU, as its records name it: no price table lists a cloud VM's CPU
    cpu = next(
        json.loads(line)["runtime"]["device_name"]
        for line in (a / "cells.jsonl").read_text().splitlines()
        if json.loads(line)["status"] == "ok"
    )
    proc = hpubench_cli("report", str(a), "-o", str(tmp_path / "r.html"))
    assert proc.returncode == 0 and f"no price for {cpu}" in proc.stderr
    html = (tmp_path / "r.html").read_text()
    # Not a banner over the page: said where price/performance would be, naming the device and the fix.
    assert 'id="unpriced-banner"' not in html
    assert f"no price table entry matches {escape(cpu)}" in html
    rows = table_rows(html)
    priced = [r for k, r in rows.items() if r.get("status", ("", ""))[1] == "ok"]
    assert priced and all(r["price_usd_per_device_hour"][1] == "n/a" for r in priced)
    assert all(r["usd_per_million_samples"] == ("", "n/a") for r in priced)


@pytest.mark.parametrize(
    ("name", "args", "reader"),
    [
        ("t.csv", (), pd.read_csv),
        ("t.out", ("--format", "json"), lambda p: pd.DataFrame(json.loads(Path(p).read_text()))),
        ("t.parquet", (), pd.read_parquet),
    ],
)
def test_exports_carry_the_html_numbers(smoke_runs, priced_smoke_report, tmp_path, name, args, reader):
    a, b = smoke_runs
    rows = table_rows(priced_smoke_report)
    main(["report", str(a), str(b), "-o", str(tmp_path / name), "--price-here", "0.5", *args])
    df = reader(tmp_path / name)
    assert len(df) == sum(1 for k in rows if k.startswith(("cpu-default|", "cpu-1thread|")))
    for r in df.itertuples():
        cell = rows[f"{r.result_set}|{r.key}"]
        if r.status == "ok":
            assert r.samples_per_s == pytest.approx(_float(cell["samples_per_s"][0]), rel=REL)
            assert r.usd_per_million_samples == pytest.approx(
                _float(cell["usd_per_million_samples"][0]), rel=REL
            )
            assert r.price_origin == "--price-here"


def test_compare_real_runs_matches_a_direct_computation(smoke_runs, tmp_path):
    a, b = smoke_runs
    proc = hpubench_cli("compare", str(a), str(b), "-o", str(tmp_path / "c.html"))
    assert proc.returncode == 0, proc.stderr
    assert "geometric mean: all workloads" in proc.stdout
    html = (tmp_path / "c.html").read_text()
    c = compare(load_results([str(a)]), load_results([str(b)]), Tables())
    overall = re.search(r'id="overall".*?data-v="([^"]+)"', html, re.S).group(1)
    assert _float(overall) == pytest.approx(c.overall.throughput.value, rel=REL)
    rows = table_rows(html)
    for x in c.cells:
        base_mean = np.mean(x.base.step_times[0])
        # Two repetitions, averaged on the log scale by the estimator compare shares with the gate.
        cand_mean = np.exp(np.mean([np.log(np.mean(s)) for s in x.candidate.step_times]))
        assert _float(rows[x.match_key]["ratio"][0]) == pytest.approx(base_mean / cand_mean, rel=REL)
    assert len(c.not_comparable) == 2  # fp8 is skipped on both sides, and listed as such
    assert "skipped on base" in html


# ---- hand-made records: Gaudi, Gaudi2, Gaudi3 (test double), H100 --------------------------------------

PRICE = {"GAUDI": 1.64, "GAUDI2": 1.30, "GAUDI3": 2.49, "NVIDIA H100 80GB HBM3": 12.29}
PEAK = {
    ("GAUDI", "bf16-mixed"): 60,
    ("GAUDI2", "bf16-mixed"): 432,
    ("GAUDI3", "bf16-mixed"): 1835,
    ("NVIDIA H100 80GB HBM3", "bf16-mixed"): 989,
    ("NVIDIA H100 80GB HBM3", "32-true"): 495,
}


def test_report_on_hpu_and_h100_records(hw_runs, tmp_path):
    sets = ("gaudi", "gaudi2", "gaudi3", "h100")
    html = _report(
        *(str(hw_runs[s]) for s in sets), "-o", str(tmp_path / "r.html"), "--epoch-samples", "1000000"
    )
    rows = table_rows(html)
    for s in sets:
        for runs in _runs(hw_runs[s]):
            row, rec = rows[f"{s}|{runs.cell.key}"], runs.record
            if rec.status != "ok":
                continue
            dev, m, world = rec.runtime["device_name"], rec.metrics, runs.cell.world_size
            assert _float(row["price_usd_per_device_hour"][0]) == PRICE[dev]
            cost = PRICE[dev] * world
            assert _float(row["usd_per_million_samples"][0]) == pytest.approx(
                cost / (m.samples_per_s * 3600) * 1e6
            )
            assert _float(row["workload_cost_usd"][0]) == pytest.approx(1e6 / m.samples_per_s / 3600 * cost)
            peak = PEAK[(dev, runs.cell.precision)]  # the H100 32-true run allowed TF32: its peak is TF32
            assert _float(row["mfu"][0]) == pytest.approx(m.achieved_tflops / (peak * world), rel=REL)
            assert "est." not in row["mfu"][1]  # every BF16 peak here is stated (Gaudi's 60 too: C21)
            assert ("TEST DOUBLE" in row["hardware"][1]) == (dev == "GAUDI3")
    assert 'id="test-double-banner"' in html
    for unsourced in ("865.0", "229.0"):  # Gaudi2's fp8 and Gaudi3's fp32 peaks: no primary source (C21)
        assert f'<td class="n">{unsourced} <span class="badge est">est.</span></td>' in html
    assert '<td class="n">60.0 <span class="badge est">' not in html  # Gaudi's BF16 60 is stated
    # Scaling: efficiency = per-device throughput at N over per-device throughput on one device.
    resnet = [r for r in _runs(hw_runs["gaudi2"]) if r.cell.workload == "resnet"]
    one = next(r.record.metrics.samples_per_s for r in resnet if r.cell.world_size == 1)
    assert sorted(r.cell.world_size for r in resnet) == [1, 2, 4, 8, 16]
    for r in resnet:
        n = r.cell.world_size
        efficiency = _float(rows[f"gaudi2|{r.cell.key}"]["efficiency"][0])  # the scaling table's row
        assert efficiency == pytest.approx(r.record.metrics.samples_per_s / n / one, rel=REL)
    assert 'id="chart-scale-0"' in html and 'id="chart-memtl-0"' in html and 'id="chart-pp-0"' in html
    assert "RuntimeError: synapse OOM" in html and "Traceback (most recent call last)" in html


def test_a_price_file_overrides_prices_and_peaks_in_the_report(tmp_path):
    # The first record is a failure: the measured row after it must still get the overridden figures.
    run = write_run(
        tmp_path / "g2",
        [
            fake_result("gpt", "hpu", "GAUDI2", status="failed", reason="x"),
            fake_result("bert", "hpu", "GAUDI2", tokens_per_sample=128),
        ],
    )
    prices = tmp_path / "mine.toml"
    prices.write_text(
        '[[price]]\nname = "Gaudi2 (HL-225H)"\nusd_per_device_hour = 1.0\nsource = "our contract"\n'
        '[[peak]]\nname = "Gaudi2 (HL-225H)"\nbf16 = 400\nsource = "our own GEMM test"\n'
    )
    html = _report(str(run), "-o", str(tmp_path / "r.html"), "--prices", str(prices))
    rec = load_results([str(run)])[1]
    row = table_rows(html)[f"g2|{rec.key}"]
    assert _float(row["price_usd_per_device_hour"][0]) == 1.0
    assert _float(row["mfu"][0]) == pytest.approx(rec.metrics.achieved_tflops / 400, rel=REL)
    assert "our contract" in html and "our own GEMM test" in html and str(prices) in html


@pytest.mark.parametrize("unstable", [2, 1])
def test_a_report_whose_figures_are_mostly_unstable_points_at_the_host(unstable: int, tmp_path):
    records = [fake_result(w, "cpu", "AMD EPYC", precision="32-true") for w in ("mlp", "gpt", "bert")]
    records = [replace(r, quality="unstable") if i < unstable else r for i, r in enumerate(records)]
    assert [r.quality for r in records].count("ok") == 3 - unstable
    html = _report(str(write_run(tmp_path / "run", records)), "-o", str(tmp_path / "r.html"))
    banner = re.search(r'<div class="banner" id="unsteady-host">([^<]*)</div>', html)
    if unstable == 2:
        assert banner and banner[1].startswith("2 of 3 figures are unstable"), banner
        assert "hpubench doctor" in banner[1]
    else:
        assert banner is None


def test_compare_gaudi_vs_gaudi2(hw_runs, tmp_path):
    main(["compare", str(hw_runs["gaudi"]), str(hw_runs["gaudi2"]), "-o", str(tmp_path / "c.html")])
    rows = table_rows((tmp_path / "c.html").read_text())
    c = compare(load_results([str(hw_runs["gaudi"])]), load_results([str(hw_runs["gaudi2"])]), Tables())
    assert len(c.cells) == 2 and len(c.only_candidate) == 5  # the scaling series and the failed gpt cell
    for x in c.cells:
        ratio = _float(rows[x.match_key]["ratio"][0])
        assert ratio == pytest.approx(np.mean(x.base.step_times[0]) / np.mean(x.candidate.step_times[0]))
        assert _float(rows[x.match_key]["perf_usd"][0]) == pytest.approx(ratio * 1.64 / 1.30, rel=REL)


def test_script_payloads_in_results_are_escaped(hw_runs, tmp_path):
    html = _report(str(hw_runs["evil"]), "-o", str(tmp_path / "r.html"))
    main(["compare", str(hw_runs["evil"]), str(hw_runs["evil"]), "-o", str(tmp_path / "c.html")])
    for page in (html, (tmp_path / "c.html").read_text()):
        assert PAYLOAD not in page and "window.__pwned = 1</" not in page
        assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page  # shown as text


# ---- bad input: one line, exit 2, and an existing output file left alone -------------------------------


@pytest.fixture
def bad_runs(hw_runs, tmp_path):
    changed = write_run(
        tmp_path / "changed",
        [fake_result("bert", "hpu", "GAUDI2", tokens_per_sample=128, tflop_per_sample=0.9)],
    )
    future = tmp_path / "future"
    future.mkdir()
    line = json.loads((hw_runs["gaudi"] / "cells.jsonl").read_text().splitlines()[0])
    (future / "cells.jsonl").write_text(json.dumps({**line, "schema": SCHEMA_VERSION + 1}) + "\n")
    prices = tmp_path / "prices.toml"
    prices.write_text('[[price]]\nname = "Gaudi2 (HL-225H)"\nusd_per_devce_hour = 1.0\n')
    return {
        **{k: str(v) for k, v in hw_runs.items()},
        "changed": str(changed),
        "future": str(future),
        "prices": str(prices),
        "nowhere": str(tmp_path / "nope"),
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["report", "{nowhere}"], "results path .*nope does not exist"),
        (
            ["report", "{gaudi}", "--prices", "{prices}"],
            r"\[\[price\]\] #1: unknown key 'usd_per_devce_hour'",
        ),
        (["report", "{gaudi}", "--price-here", "-1"], "--price-here must be a positive number"),
        (["report", "{gaudi}", "{h100}", "--price-here", "2"], "ran on 2 device kinds"),
        (["report", "{gaudi}", "--format", "pdf"], "--format must be one of html, csv, parquet, json"),
        (["report", "{gaudi}", "--epoch-samples", "0"], "--epoch-samples must be a number of samples from 1"),
        (["compare", "{gaudi3}", "{evil}"], "nothing to compare"),
        (["compare", "{gaudi}", "{changed}"], "workload definition differs"),
        (["compare", "{gaudi}", "{future}"], f"schema version {SCHEMA_VERSION + 1}"),
        (["compare", "{gaudi}", "{gaudi2}", "--base-accelerator", "cuda"], "has no cuda cells"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_keeps_the_old_output(bad_runs, tmp_path, capsys, argv, message):
    out = tmp_path / "existing.html"
    out.write_text("previous report")
    with pytest.raises(SystemExit) as e:
        main([a.format(**bad_runs) for a in argv] + ["-o", str(out)])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert err.startswith("error: ") and err.count("\n") == 1 and re.search(message, err), err
    assert out.read_text() == "previous report"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_output_into_a_missing_directory(hw_runs, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["report", str(hw_runs["gaudi"]), "-o", str(tmp_path / "no" / "r.html")])
    assert e.value.code == 2 and "does not exist; create it first" in capsys.readouterr().err


def test_a_price_too_small_to_cost_anything_reads_as_no_cost_ratio(tmp_path):
    # 5e-324 $/h: every cost underflows to 0, so no machine's cost can be compared with the cheapest's.
    run = write_run(tmp_path / "g2", [fake_result("bert", "hpu", "GAUDI2", tokens_per_sample=128)])
    html = _report(str(run), "-o", str(tmp_path / "r.html"), "--price-here", "5e-324")
    assert '<span class="ratio-bar cost">' not in html and "<td>–</td>" in html
