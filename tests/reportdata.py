"""Helpers for the report and compare tests: hand-made records for hardware this machine does not have
(Gaudi, Gaudi2, Gaudi3, H100), written to disk exactly as a run writes them, and an HTML table reader.
"""

from __future__ import annotations

import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np

from hpubench.analysis.metrics import build_metrics
from hpubench.analysis.peaks import peak_for
from hpubench.analysis.quality import with_quality
from hpubench.measure.devicestats import MemorySample
from hpubench.measure.memory import MemoryStats
from hpubench.plan.cell import Cell
from hpubench.store.record import STATUS_OK, CellResult
from hpubench.store.rundir import ResultStore
from hpubench.store.runmeta import run_metadata

# Would set a global if it ever ran: the browser test asserts it never does.
PAYLOAD = "<script>window.__pwned = 1</script>"
SMOKE_ARGS = (
    "-w",
    "mlp,gpt",
    "-p",
    "32-true,bf16-mixed,fp8",
    "-a",
    "cpu",
    "--steps",
    "5",
    "--warmup-steps",
    "1",
)
GIB = 2**30


def hpubench_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """The real console entry point in a subprocess, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "hpubench", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


FAKE_TRACEBACK = "Traceback (most recent call last):\n  boom"


def fake_result(
    workload: str,
    accelerator: str,
    device_name: str,
    *,
    precision: str = "bf16-mixed",
    mode: str = "eager",
    graphs: bool = False,
    devices: int = 1,
    nodes: int = 1,
    step_s: float = 0.1,
    tflop_per_sample: float = 0.3,  # model work: forward + backward, the same on every device
    batch: int = 32,
    tokens_per_sample: int | None = None,
    seed: int = 0,
    software: dict[str, str] | None = None,
    env_flags: dict[str, str] | None = None,
    memory_source: str = "hpu.memory_stats",
    peak_bytes: int = 20 * GIB,
    timeline: bool = False,
    status: str = STATUS_OK,
    reason: str | None = None,
    noise: float = 0.02,  # relative spread of the step times
    facts: dict | None = None,  # runtime facts the quality verdict reads (interference, compiles, ...)
    numerics: str | None = "ok",  # a measured cell's numerics verdict, as today's worker records one
    numerics_reasons: tuple[str, ...] = (),
) -> CellResult:
    """A record as a worker on that hardware would write it; figures derived by the real metrics code,
    the quality verdict by the real quality code."""
    cell = Cell(
        workload=workload,
        accelerator=accelerator,
        devices=devices,
        nodes=nodes,
        precision=precision,
        mode=mode,
        graphs=graphs,
        warmup_steps=2,
        steps=12,
    )
    runtime = {
        **fake_runtime(accelerator, device_name, software or {"torch": "2.6.0"}, batch, mode),
        "env_flags": env_flags or {},
        **(facts or {}),
    }
    if status != STATUS_OK:
        return CellResult(cell, status, reason=reason, traceback_tail=FAKE_TRACEBACK, runtime=runtime)
    world = devices * nodes
    rng = np.random.default_rng(seed)
    steps = tuple(float(x) for x in rng.normal(step_s, step_s * noise, size=12))
    warmup = (step_s * 30, step_s)
    samples = batch * world
    metrics = build_metrics(
        warmup_s=warmup,
        measured_s=steps,
        loss_first=5.0,
        loss_last=4.0,
        samples_per_step=samples,
        tokens_per_step=samples * tokens_per_sample if tokens_per_sample else None,
        flops_per_step=int(tflop_per_sample * 1e12) * samples,
        world_size=world,
        peak=peak_for(accelerator, device_name, precision),
    )
    return with_quality(
        CellResult(
            cell,
            STATUS_OK,
            metrics=metrics,
            memory=MemoryStats(memory_source, peak_allocated_bytes=peak_bytes, in_use_bytes=peak_bytes // 2),
            runtime=runtime,
            step_times_s=steps,
            warmup_times_s=warmup,
            memory_timeline=fake_timeline(step_s, peak_bytes) if timeline else (),
            numerics=numerics,
            numerics_reasons=numerics_reasons,
        )
    )


def fake_runtime(
    accelerator: str, device_name: str, software: dict[str, str], batch: int, mode: str
) -> dict[str, object]:
    """The runtime facts every fake record carries, as a worker on that device writes them."""
    return {
        "accelerator": accelerator,
        "device_name": device_name,
        "software": software,
        "batch_size": batch,
        "mode_in_force": mode,
        "timing": "time.perf_counter around each step, device synchronised before and after",
    }


def fake_timeline(step_s: float, peak_bytes: int) -> tuple[MemorySample, ...]:
    """A memory timeline of 15 samples: start, two warm-up steps, then measured steps at a steady level."""
    return tuple(
        MemorySample(
            step=i,
            phase="start" if i == 0 else "warmup" if i <= 2 else "measured",
            t_s=i * step_s,
            in_use_bytes=(4 + min(i, 3) * 2) * GIB,
            peak_allocated_bytes=peak_bytes,
            limit_bytes=96 * GIB,
        )
        for i in range(15)
    )


def write_run(run_dir: Path, results: list[CellResult], hostname: str = "node-1") -> Path:
    store = ResultStore(run_dir)
    store.write_meta(run_metadata(argv=["hpubench", "run"], hostname=hostname))
    for r in results:
        store.append(r)
    return run_dir


DOUBLE = {"torch": "2.6.0", "habana_frameworks": "1.20.0 (test double)"}


class _Tables(HTMLParser):
    """Rows of every table: {row data-key: {column id: (data-v, visible text)}}."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, tuple[str, str]]] = {}
        self._row: str | None = None
        self._cell: tuple[str, str] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and "data-key" in a:
            self._row = a["data-key"]
            self.rows.setdefault(self._row or "", {})
        elif tag == "td" and self._row is not None and "data-col" in a:
            self._cell = (a["data-col"] or "", a.get("data-v") or "")
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._row is not None:
            self.rows[self._row][self._cell[0]] = (self._cell[1], " ".join("".join(self._text).split()))
            self._cell = None
        elif tag == "tr":
            self._row = None


def table_rows(html: str) -> dict[str, dict[str, tuple[str, str]]]:
    parser = _Tables()
    parser.feed(html)
    return parser.rows
