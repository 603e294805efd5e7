"""The bad-input table: every case is a command line, the files and environment it meets, and a fragment
the one-line error must contain. Grouped by what the input is (the ``kind``); generated rows are products
of a flag and its bad values, each a separate case.

Every case runs in an empty directory holding ``keep.txt``, a good run ``run/`` (one ok record) and a
saved baseline ``bl/main`` of it, plus the case's own files; all of them must be byte-identical after the
refused call. No case may start a worker: argument and file validation come first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tests.badinput.records import good_record, with_path


@dataclass(frozen=True)
class Case:
    kind: str  # cli, matrix, results, prices, baseline, env
    name: str
    args: tuple[str, ...]
    fragment: str  # the error line must contain this (case-insensitive)
    files: dict[str, str | bytes] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    code: int = 2

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.name}"


CASES: list[Case] = []


def add(kind: str, name: str, args: tuple[str, ...] | list[str], fragment: str, **kw: object) -> None:
    CASES.append(Case(kind, name, tuple(args), fragment, **kw))  # type: ignore[arg-type]


RUN = ("run", "--out", "o")

# ---- command-line arguments -------------------------------------------------------------------------
for flag, values, fragment in [
    ("--devices", ["0", "-1", "two", "1.5", "", "[0,0]", "[-1]", "[a]", "[]", "2,", ",1"], "--devices"),
    ("--nodes", ["0", "-2", "x", "1.5", "", "1,,2"], "--nodes"),
    ("--batch-size", ["0", "-8", "big", "3.5", "", "defaults"], "--batch-size"),
    ("--precision", ["fp64", "bf16", "32", "", "BF16-MIXED", "fp8,", "int8"], "--precision"),
    ("--mode", ["jit", "graph", "", "Eager", "lazy,,compile"], "--mode"),
    # An unknown size name ("huge") needs the workload catalog, so it is refused when the matrix expands,
    # for flags and files alike (tests/e2e/test_cli_sizes.py); what no catalog can make valid stays here.
    ("--size", ["", "tiny,", "ti/ny"], "--size"),
    ("--graphs", ["maybe", "2", "", "enabled"], "--graphs"),
    ("--workload", ["", ",", "mlp,", " ", "mlp,,gpt"], "--workload"),
    ("--accelerator", ["", "cpu,", ","], "--accelerator"),
    ("--steps", ["1", "0", "-3", "abc", "1.5", "1000000000000", "1000001", "", "autoo"], "--steps"),
    ("--timeout", ["nan", "inf", "-inf", "0", "-1", "1e400", "1e9", "abc", "NaN"], "--timeout"),
    ("--repeat", ["0", "-1", "x", "1.5"], "--repeat"),
    ("--isolation", ["thread", "", "FORK"], "--isolation"),
    ("--warmup-steps", ["0", "-1", "x", "2000000"], "--warmup-steps"),
    ("--progress-every", ["0", "-1", "nan"], "--progress-every"),
]:
    for v in values:
        add("cli", f"run{flag}={v!r}", [*RUN, "-w", "mlp", flag, v], fragment)
add("cli", "run --devices nested past the parser", [*RUN, "--devices", "[" * 3000 + "]" * 3000], "--devices")

for v in [
    "noequals",
    "=1",
    "a=",
    " =1",
    "extra_work=nan",
    "extra_work=-1",
    "extra_work=abc",
    "extra_work=11",
    "extra_work=inf",
    "extra_work=1e999",
    "extra_work=",
    "extra_work=-5%",
]:
    add(
        "cli",
        f"run--option={v!r}",
        [*RUN, "-w", "mlp", "--option", v],
        "option" if "=" not in v[:1] else "--option",
    )

for knob, bad in [
    ("--target-ci", ["0", "-1", "abc", "200%", "nan"]),
    ("--min-steps", ["0", "-1", "x"]),
    ("--min-time", ["-1", "abc", "nan"]),
    ("--max-time", ["0", "-5", "abc", "inf"]),
]:
    for v in bad:
        add("cli", f"run--steps auto {knob}={v!r}", [*RUN, "-w", "mlp", "--steps", "auto", knob, v], knob)
for knob in ["--target-ci", "--min-steps", "--min-time", "--max-time"]:
    add("cli", f"run{knob} without auto", [*RUN, "-w", "mlp", "--steps", "20", knob, "1"], knob)

for args, fragment in [
    (["--out", ""], "--out"),
    (["--matrix", "nightly"], "nightly"),
    (["--matrix", "no/such/file.toml"], "does not exist"),
    (["--no-such-flag"], "--no-such-flag"),
    (["--loader", "disk"], "--loader"),
    (["--memory-every", "-1"], "--memory-every"),
    (["--telemetry-interval", "0"], "--telemetry-interval"),
    (["--telemetry-interval", "-1"], "--telemetry-interval"),
    (["--energy-price", "-1"], "--energy-price"),
    (["--budget", "forever"], "--budget"),
    (["--budget", "-5m"], "--budget"),
    (["--budget", "0"], "--budget"),
]:
    add("cli", "run " + " ".join(args), [*RUN, *args], fragment)

for cmd, fragment in [
    (["frobnicate"], "frobnicate"),
    (["results", "no_such_run_dir"], "no_such_run_dir"),
    (["results", "run", "--format", "xml"], "--format"),
    (["results", "run", "--format", ""], "--format"),
    (["results", "keep.txt"], "keep.txt"),
    (["results"], "missing"),
    (["report", "no_such_dir", "-o", "r.html"], "no_such_dir"),
    (["report", "run"], "--out"),
    (["report", "run", "-o", "r.html", "--format", "pdf"], "--format"),
    (["report", "run", "-o", "r.html", "--price-here", "-1"], "--price-here"),
    (["report", "run", "-o", "r.html", "--price-here", "abc"], "--price-here"),
    (["report", "run", "-o", "r.html", "--epoch-samples", "0"], "--epoch-samples"),
    (["report", "run", "-o", "r.html", "--epoch-samples", "x"], "--epoch-samples"),
    (["compare", "run", "no_such", "-o", "c.html"], "no_such"),
    (["compare", "run"], "missing"),
    (["gate", "--baseline", "no_such", "--current", "run"], "no_such"),
    (["gate", "--baseline", "run"], "--current"),
    (["gate", "--baseline", "run", "--current", "run", "--alpha", "0"], "alpha"),
    (["gate", "--baseline", "run", "--current", "run", "--alpha", "1.5"], "alpha"),
    (["gate", "--baseline", "run", "--current", "run", "--alpha", "x"], "--alpha"),
    (["gate", "--baseline", "run", "--current", "run", "--correction", "bonferroni"], "correction"),
    (["gate", "--baseline", "run", "--current", "run", "--missing", "maybe"], "missing"),
    (["gate", "--baseline", "run", "--current", "run", "--memory-floor", "lots"], "--memory-floor"),
    (["gate", "--baseline", "run", "--current", "run", "--baseline-accelerator", "tpu"], "tpu"),
    # The CI files never land on a run's records, a file that exists or each other.
    (["gate", "--baseline", "run", "--current", "run", "--junit", "run/cells.jsonl"], "results directory"),
    (["gate", "--baseline", "run", "--current", "run", "--markdown", "run/meta.json"], "results directory"),
    (["gate", "--baseline", "run", "--current", "run", "--markdown", "run/new/g.md"], "results directory"),
    (["gate", "--baseline", "run", "--current", "run", "--junit", "run"], "is a directory"),
    (["gate", "--baseline", "run", "--current", "run", "--junit", "keep.txt/g.xml"], "keep.txt"),
    (["gate", "--baseline", "run", "--current", "run", "--markdown", "g", "--junit", "./g"], "both name"),
    (["report", "run", "-o", ""], "names no file"),
    (["export", "run", "-o", ""], "names no file"),
    (["history", "run", "-o", ""], "names no file"),
    (["results", "merge", "run", "-o", "x" * 300], "too long"),
    (["results", "merge", "run", "-o", ""], "--out is empty"),
    (["export", "no_such"], "no_such"),
    (["export", "run", "--format", "junit"], "--format"),
    (["baseline", "save", "no_such", "--name", "x"], "no_such"),
    (["baseline", "save", "run"], "--name"),
    (["baseline", "save", "run", "--name", "main", "--dir", "bl"], "main"),
    (["list", "cells", "--precision", "fp64"], "--precision"),
    (["list", "cells", "--workload", ""], "--workload"),
    (["list", "cells", "--matrix", "nightly"], "nightly"),
    (["list", "cells", "--steps", "0"], "--steps"),
    (["profile", "--out", "", "-w", "mlp"], "--out"),
    (["profile", "--out", "p", "-w", "mlp", "--timeout", "nan"], "--timeout"),
]:
    add("cli", " ".join(cmd) or "(none)", cmd, fragment)
# Another file of a run directory, as a shell glob (results run/*) passes it: not read as records.
add(
    "cli",
    "results run/estimates.json",
    ["results", "run/estimates.json"],
    "not a results file; fix: give its run directory",
    files={"run/estimates.json": '{"cells": {}}\n'},
)

for bad in ["", "-main", ".hidden", "a/b", "a b", "x" * 101, "name!", "../up", "é"]:
    add(
        "cli",
        f"baseline save --name {bad!r}",
        ["baseline", "save", "run", "--name", bad, "--dir", "bl"],
        "name",
    )

# ---- matrix files --------------------------------------------------------------------------------------
MATRIX_FILES: list[tuple[str, str, str]] = [
    ("syntax", 'workload = ["mlp"\n', "m.toml"),
    ("not utf8", "workload = '\udcff'\n", "m.toml"),
    ("unknown key", 'workload = "mlp"\nprecison = "bf16-mixed"\n', "precison"),
    ("empty workload list", "workload = []\n", "empty"),
    ("workload number", "workload = 3\n", "workload"),
    ("workload empty string", 'workload = ""\n', "workload"),
    ("workload slash", 'workload = "ml/p"\n', "/"),
    ("size slash", 'workload = "mlp"\nsize = "ti/ny"\n', "/"),
    ("accelerator slash", 'workload = "mlp"\naccelerator = "c/pu"\n', "/"),
    ("precision", 'workload = "mlp"\nprecision = "fp64"\n', "precision"),
    ("precision number", 'workload = "mlp"\nprecision = 32\n', "precision"),
    ("mode", 'workload = "mlp"\nmode = "jit"\n', "mode"),
    ("graphs string", 'workload = "mlp"\ngraphs = "yes"\n', "graphs"),
    ("nodes zero", 'workload = "mlp"\nnodes = 0\n', "nodes"),
    ("nodes float", 'workload = "mlp"\nnodes = 1.5\n', "nodes"),
    ("nodes bool", 'workload = "mlp"\nnodes = true\n', "nodes"),
    ("devices zero", 'workload = "mlp"\ndevices = 0\n', "devices"),
    ("devices string", 'workload = "mlp"\ndevices = "two"\n', "devices"),
    ("devices dup ids", 'workload = "mlp"\ndevices = [[0, 0]]\n', "twice"),
    ("devices neg ids", 'workload = "mlp"\ndevices = [[-1]]\n', "devices"),
    ("devices empty ids", 'workload = "mlp"\ndevices = [[]]\n', "devices"),
    ("batch zero", 'workload = "mlp"\nbatch_size = 0\n', "batch_size"),
    ("batch string", 'workload = "mlp"\nbatch_size = "big"\n', "batch_size"),
    ("batch float", 'workload = "mlp"\nbatch_size = 2.5\n', "batch_size"),
    ("steps one", 'workload = "mlp"\nsteps = 1\n', "steps"),
    ("steps huge", 'workload = "mlp"\nsteps = 1000000000000\n', "steps"),
    ("steps float", 'workload = "mlp"\nsteps = 2.5\n', "steps"),
    ("steps string", 'workload = "mlp"\nsteps = "many"\n', "steps"),
    ("steps list", 'workload = "mlp"\nsteps = [10, 20]\n', "steps"),
    ("warmup zero", 'workload = "mlp"\nwarmup_steps = 0\n', "warmup_steps"),
    ("warmup huge", 'workload = "mlp"\nwarmup_steps = 99999999\n', "warmup_steps"),
    ("target_ci zero", 'workload = "mlp"\nsteps = "auto"\ntarget_ci = 0\n', "target_ci"),
    ("target_ci string", 'workload = "mlp"\nsteps = "auto"\ntarget_ci = "tight"\n', "target_ci"),
    ("max_time negative", 'workload = "mlp"\nsteps = "auto"\nmax_time = -1\n', "max_time"),
    ("min_steps zero", 'workload = "mlp"\nsteps = "auto"\nmin_steps = 0\n', "min_steps"),
    ("options not table", 'workload = "mlp"\noptions = "extra_work=0.1"\n', "options"),
    ("option name", 'workload = "mlp"\noptions = {"bad-name" = 1}\n', "option name"),
    ("option value slash", 'workload = "mlp"\noptions = {extra_work = "0.1/2"}\n', "/"),
    ("option value space", 'workload = "mlp"\noptions = {extra_work = "0 .1"}\n', "spaces"),
    ("option value empty", 'workload = "mlp"\noptions = {extra_work = ""}\n', "non-empty"),
    ("option value table", 'workload = "mlp"\noptions = {extra_work = {a = 1}}\n', "extra_work"),
    ("extra_work nan", 'workload = "mlp"\noptions = {extra_work = nan}\n', "extra_work"),
    ("extra_work inf", 'workload = "mlp"\noptions = {extra_work = inf}\n', "extra_work"),
    ("extra_work negative", 'workload = "mlp"\noptions = {extra_work = -0.5}\n', "extra_work"),
    ("extra_work too big", 'workload = "mlp"\noptions = {extra_work = 50}\n', "extra_work"),
    ("extra_work text", 'workload = "mlp"\noptions = {extra_work = "lots"}\n', "extra_work"),
    ("preset unknown", 'preset = "nightly"\n', "nightly"),
    ("preset number", "preset = 3\n", "preset"),
    ("name number", 'name = 3\nworkload = "mlp"\n', "name"),
    ("grid not table", 'grid = "mlp"\n', "grid"),
    ("grid unknown key", '[[grid]]\nworkload = "mlp"\nsizee = "tiny"\n', "sizee"),
    ("grid bad precision", '[[grid]]\nworkload = "mlp"\nprecision = "fp64"\n', "precision"),
    ("exclude empty", 'workload = "mlp"\n[[exclude]]\n', "exclude"),
    ("exclude auto", 'workload = "mlp"\n[[exclude]]\naccelerator = "auto"\n', "exclude"),
    ("exclude unknown key", 'workload = "mlp"\n[[exclude]]\nprecison = "fp8"\n', "precison"),
    ("exclude bad precision", 'workload = "mlp"\n[[exclude]]\nprecision = "fp64"\n', "precision"),
    ("array of tables top", '[[workload]]\nname = "mlp"\n', "workload"),
    ("empty precision list", 'workload = "mlp"\nprecision = []\n', "empty"),
    ("nested past the parser", "workload = " + "[" * 5000 + "]" * 5000 + "\n", "invalid TOML"),
]
for name, text, fragment in MATRIX_FILES:
    data = text.encode("utf-8", "surrogateescape")
    add("matrix", f"run {name}", [*RUN, "--matrix", "m.toml"], fragment, files={"m.toml": data})
for name, text, fragment in MATRIX_FILES[::3]:
    data = text.encode("utf-8", "surrogateescape")
    add(
        "matrix",
        f"list cells {name}",
        ["list", "cells", "--matrix", "m.toml"],
        fragment,
        files={"m.toml": data},
    )
add("matrix", "directory as matrix", [*RUN, "--matrix", "mdir"], "mdir", files={"mdir/x": "x"})

# ---- result files ---------------------------------------------------------------------------------------
GOOD = good_record()
SPOILED: list[tuple[str, object, str]] = [
    ("step_times_s", "0.1,0.2", "step_times_s"),
    ("step_times_s", [0.1, float("nan"), 0.1], "step_times_s"),
    ("step_times_s", [0.1, float("inf")], "step_times_s"),
    ("step_times_s", [0.1, -0.1], "step_times_s"),
    ("step_times_s", [0.1, "0.2"], "step_times_s"),
    ("step_times_s", [0.1, None], "step_times_s"),
    ("step_times_s", [0.1, True], "step_times_s"),
    ("step_times_s", {"a": 1}, "step_times_s"),
    ("step_times_s", 0.1, "step_times_s"),
    ("warmup_times_s", "slow", "warmup_times_s"),
    ("warmup_times_s", [float("nan")], "warmup_times_s"),
    ("metrics.samples_per_s", "fast", "samples_per_s"),
    ("metrics.samples_per_s", float("nan"), "samples_per_s"),
    ("metrics.samples_per_s", -1.0, "samples_per_s"),
    ("metrics.samples_per_s", None, "samples_per_s"),
    ("metrics.samples_per_s", True, "samples_per_s"),
    ("metrics.samples_per_s", ..., "samples_per_s"),
    ("metrics.samples_per_s_ci", [1.0], "samples_per_s_ci"),
    ("metrics.samples_per_s_ci", [1.0, 2.0, 3.0], "samples_per_s_ci"),
    ("metrics.samples_per_s_ci", "1-2", "samples_per_s_ci"),
    ("metrics.samples_per_s_ci", [2.0, 1.0], "samples_per_s_ci"),
    ("metrics.samples_per_s_ci", [1.0, float("nan")], "samples_per_s_ci"),
    ("metrics.samples_per_s_ci", None, "samples_per_s_ci"),
    ("metrics.tokens_per_s_ci", [1.0], "tokens_per_s_ci"),
    ("metrics.measured_steps", "12", "measured_steps"),
    ("metrics.measured_steps", 1.5, "measured_steps"),
    ("metrics.measured_steps", -1, "measured_steps"),
    ("metrics.samples_per_step", None, "samples_per_step"),
    ("metrics.confidence", 95, "confidence"),
    ("metrics.confidence", "0.95", "confidence"),
    ("metrics.step_time_mean_s", "0.1", "step_time_mean_s"),
    ("metrics.step_time_p50_s", float("inf"), "step_time_p50_s"),
    ("metrics.first_step_s", None, "first_step_s"),
    ("metrics.mfu", "high", "mfu"),
    ("metrics.peak_tflops", float("nan"), "peak_tflops"),
    ("metrics.flops_per_step", 1.5, "flops_per_step"),
    ("metrics.peak_source", 3, "peak_source"),
    ("metrics.unknown_metric", 1.0, "metrics"),
    ("metrics", "fast", "metrics"),
    ("metrics", [1, 2], "metrics"),
    ("runtime", "cpu", "runtime"),
    ("runtime", [1], "runtime"),
    ("runtime", 3, "runtime"),
    ("status", "great", "status"),
    ("status", 1, "status"),
    ("status", ..., "status"),
    ("reason", 3, "reason"),
    ("started_at", 12, "started_at"),
    ("wall_s", "long", "wall_s"),
    ("wall_s", float("nan"), "wall_s"),
    ("wall_s", -3.0, "wall_s"),
    ("repeat", -1, "repeat"),
    ("repeat", "0", "repeat"),
    ("repeat", 1.5, "repeat"),
    ("quality", 3, "quality"),
    ("quality_reasons", "noisy", "quality_reasons"),
    ("memory", "20 GiB", "memory"),
    ("memory.peak_allocated_bytes_typo", 1, "memory"),
    ("memory.peak_allocated_bytes", "lots", "memory.peak_allocated_bytes"),
    ("memory.source", 5, "memory.source"),
    ("runtime.device_name", 3, "runtime.device_name"),
    ("runtime.world_size", "two", "runtime.world_size"),
    ("telemetry", 5, "telemetry"),
    ("loader", "host", "loader"),
    ("profile", [1], "profile"),
    ("memory_timeline", "none", "memory_timeline"),
    ("memory_timeline", [1, 2], "memory_timeline"),
    ("cell", "mlp", "cell"),
    ("cell", ..., "cell"),
    ("cell.precision", ..., "precision"),
    ("cell.precision", "fp64", "precision"),
    ("cell.precision", None, "precision"),
    ("cell.workload", ..., "workload"),
    ("cell.workload", 3, "workload"),
    ("cell.workload", "", "workload"),
    ("cell.size", ..., "size"),
    ("cell.accelerator", ..., "accelerator"),
    ("cell.accelerator", None, "accelerator"),
    ("cell.devices", ..., "devices"),
    ("cell.devices", "1", "devices"),
    ("cell.devices", 0, "devices"),
    ("cell.nodes", 1.0, "nodes"),
    ("cell.mode", ..., "mode"),
    ("cell.mode", "jit", "mode"),
    ("cell.graphs", "no", "graphs"),
    ("cell.batch_size", 0, "batch_size"),
    ("cell.batch_size", "32", "batch_size"),
    ("cell.steps", 1, "steps"),
    ("cell.warmup_steps", "3", "warmup_steps"),
    ("cell.options", "extra_work=0.1", "options"),
    ("cell.device_ids", [-1], "device_ids"),
    ("cell.device_ids", "0", "device_ids"),
    ("cell.auto_steps", 5, "auto_steps"),
    ("cell.colour", "blue", "cell"),
    ("schema", 3, "schema"),  # versions 1 and 2 read (hpubench.store.record.READABLE_SCHEMAS)
    ("schema", 0, "schema"),
    ("schema", "1", "schema"),
    ("schema", ..., "schema"),
]


def _line(record: dict) -> bytes:
    return json.dumps(record).encode() + b"\n"


def _cells(record: dict) -> bytes:
    return _line(GOOD) + _line(record)


for path, value, fragment in SPOILED:
    label = f"{path}={'(absent)' if value is ... else repr(value)[:30]}"
    files = {"bad/cells.jsonl": _cells(with_path(GOOD, path, value))}
    add("results", f"results {label}", ["results", "bad"], fragment, files=files)
for path, value, fragment in SPOILED[::4]:
    label = f"{path}={'(absent)' if value is ... else repr(value)[:30]}"
    files = {"bad/cells.jsonl": _cells(with_path(GOOD, path, value))}
    add(
        "results",
        f"baseline save {label}",
        ["baseline", "save", "bad", "--name", "new", "--dir", "bl"],
        fragment,
        files=files,
    )
    add("results", f"gate {label}", ["gate", "--baseline", "run", "--current", "bad"], fragment, files=files)
add("results", "doctor --from missing", ["doctor", "--from", "no/such/run"], "does not exist")
for path, value, fragment in SPOILED[2::24]:  # doctor reads a run as results does, before any probe
    label = f"{path}={'(absent)' if value is ... else repr(value)[:30]}"
    files = {"bad/cells.jsonl": _cells(with_path(GOOD, path, value))}
    add("results", f"doctor --from {label}", ["doctor", "--from", "bad"], fragment, files=files)
for path, value, fragment in SPOILED[1::6]:
    label = f"{path}={'(absent)' if value is ... else repr(value)[:30]}"
    files = {"bad/cells.jsonl": _cells(with_path(GOOD, path, value))}
    add("results", f"report {label}", ["report", "bad", "-o", "r.html"], fragment, files=files)
    add("results", f"compare {label}", ["compare", "run", "bad", "-o", "c.html"], fragment, files=files)
    add("results", f"export {label}", ["export", "bad", "-o", "e.json"], fragment, files=files)
for name, raw, fragment in [
    ("not json", b"{not json}\n", "corrupt"),
    ("json list", b"[1, 2]\n", "not a JSON object"),
    ("json string", b'"record"\n', "not a JSON object"),
    ("json null", b"null\n", "not a JSON object"),
    ("binary", b"\xff\xfe\x00\x01\n", "corrupt"),
    ("empty object", b"{}\n", "schema"),
    ("nested past the parser", b"[" * 100_000 + b"]" * 100_000 + b"\n", "corrupt"),
    ("object nested past the parser", b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"\n", "corrupt"),
]:
    add(
        "results",
        f"results {name}",
        ["results", "bad"],
        fragment,
        files={"bad/cells.jsonl": _line(GOOD) + raw},
    )
# A resume reads the run it continues before it writes anything there.
for name, files, fragment in [
    ("cells corrupt", {"o/cells.jsonl": b"garbage\n"}, "corrupt"),
    ("meta corrupt", {"o/meta.json": "{"}, "meta.json"),
    ("cells spoiled", {"o/cells.jsonl": _cells(with_path(GOOD, "step_times_s", "x"))}, "step_times_s"),
]:
    add("results", f"run --resume {name}", [*RUN, "-w", "mlp", "--resume"], fragment, files=files)
add("results", "no cells.jsonl in dir", ["results", "empty"], "cells.jsonl", files={"empty/meta.json": "{}"})
add(
    "results",
    "meta not json",
    ["report", "bad", "-o", "r.html"],
    "meta.json",
    files={"bad/cells.jsonl": _line(GOOD), "bad/meta.json": "{oops"},
)
add(
    "results",
    "meta not object",
    ["report", "bad", "-o", "r.html"],
    "meta.json",
    files={"bad/cells.jsonl": _line(GOOD), "bad/meta.json": "[1]"},
)
for name, raw in [("meta not utf8", b"\xff\xfe{}"), ("meta nested past the parser", b"[" * 100_000)]:
    for cmd in (
        ["report", "bad", "-o", "r.html"],
        ["baseline", "save", "bad", "--name", "new", "--dir", "bl"],
    ):
        add(
            "results",
            f"{cmd[0]} {name}",
            cmd,
            "meta.json",
            files={"bad/cells.jsonl": _line(GOOD), "bad/meta.json": raw},
        )

# ---- price files (report --prices) -----------------------------------------------------------------------
PRICE_FILES: list[tuple[str, str, str]] = [
    ("syntax", "[[price]\n", "invalid TOML"),
    ("unknown top key", "prices = 1\n", "unknown key"),
    ("price not array", '[price]\nname = "x"\n', "array of tables"),
    ("no name", "[[price]]\nusd_per_device_hour = 1.0\n", "name"),
    ("empty name", '[[price]]\nname = ""\n', "name"),
    (
        "dup name",
        '[[price]]\nname = "a"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = 1\n'
        '[[price]]\nname = "a"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = 1\n',
        "twice",
    ),
    ("new needs usd", '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\n', "usd_per_device_hour"),
    ("new needs match", '[[price]]\nname = "new"\naccelerator = "cpu"\nusd_per_device_hour = 1\n', "match"),
    (
        "bad accelerator",
        '[[price]]\nname = "new"\naccelerator = "tpu"\nmatch = "x"\nusd_per_device_hour = 1\n',
        "accelerator",
    ),
    (
        "bad regex",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "(["\nusd_per_device_hour = 1\n',
        "regular expression",
    ),
    (
        "negative usd",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = -1\n',
        "usd_per_device_hour",
    ),
    (
        "zero usd",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = 0\n',
        "usd_per_device_hour",
    ),
    (
        "nan usd",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = nan\n',
        "usd_per_device_hour",
    ),
    (
        "inf usd",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = inf\n',
        "usd_per_device_hour",
    ),
    (
        "string usd",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = "1"\n',
        "usd_per_device_hour",
    ),
    ("unknown price key", '[[price]]\nname = "new"\ncost = 1\n', "cost"),
    ("nested past the parser", "x = " + "{a=" * 5000 + "1" + "}" * 5000 + "\n", "invalid TOML"),
    (
        "estimate string",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = 1\n'
        'estimate = "yes"\n',
        "estimate",
    ),
    ("peak not array", '[peak]\nname = "x"\n', "array of tables"),
    ("peak unknown key", '[[peak]]\nname = "H100 SXM"\nbf17 = 3\n', "bf17"),
    ("peak negative", '[[peak]]\nname = "H100 SXM"\nbf16 = -3\n', "bf16"),
    ("peak string", '[[peak]]\nname = "H100 SXM"\nbf16 = "fast"\n', "bf16"),
    ("peak nan", '[[peak]]\nname = "H100 SXM"\nbf16 = nan\n', "bf16"),
    ("peak estimates", '[[peak]]\nname = "H100 SXM"\nestimates = ["fp64"]\n', "estimates"),
    (
        "instance zero",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = 1\n'
        "devices_per_instance = 0\n",
        "devices_per_instance",
    ),
]
for name, text, fragment in PRICE_FILES:
    add(
        "prices",
        name,
        ["report", "run", "-o", "r.html", "--prices", "p.toml"],
        fragment,
        files={"p.toml": text},
    )
add("prices", "missing file", ["report", "run", "-o", "r.html", "--prices", "nope.toml"], "nope.toml")
add(
    "prices",
    "not utf8",
    ["report", "run", "-o", "r.html", "--prices", "p.toml"],
    "UTF-8",
    files={"p.toml": b"\xff\xfe[[price]]\n"},
)
add(
    "prices",
    "directory",
    ["report", "run", "-o", "r.html", "--prices", "pdir"],
    "pdir",
    files={"pdir/a": "x"},
)

# ---- baseline directories ----------------------------------------------------------------------------------
GATE_NAMED = ["gate", "--baseline", "main", "--current", "run", "--baseline-dir", "bl"]
for name, files, fragment in [
    ("index not json", {"bl/index.json": "{oops"}, "index.json"),
    ("index list", {"bl/index.json": "[1]"}, "index.json"),
    ("index wrong version", {"bl/index.json": '{"version": 9, "baselines": {}}'}, "index.json"),
    ("index baselines list", {"bl/index.json": '{"version": 1, "baselines": []}'}, "index.json"),
    ("index entry string", {"bl/index.json": '{"version": 1, "baselines": {"main": "x"}}'}, "index.json"),
    ("index nested past the parser", {"bl/index.json": "[" * 100_000}, "index.json"),
    (
        "baseline cells spoiled",
        {"bl/main/cells.jsonl": _cells(with_path(GOOD, "step_times_s", "x"))},
        "step_times_s",
    ),
    ("baseline cells not json", {"bl/main/cells.jsonl": b"nope\n"}, "corrupt"),
    ("baseline meta not json", {"bl/main/meta.json": "{"}, "meta.json"),
]:
    if "index" in name:  # gate reads a named baseline's directory, not the index
        if name != "index wrong version":  # found: 'baseline list' shows such an index as empty (exit 0)
            add("baseline", f"list {name}", ["baseline", "list", "--dir", "bl"], fragment, files=files)
    else:
        add("baseline", f"gate {name}", GATE_NAMED, fragment, files=files)
add(
    "baseline",
    "unknown name",
    ["gate", "--baseline", "nosuch", "--current", "run", "--baseline-dir", "bl"],
    "nosuch",
)
add("baseline", "dir is a file", ["baseline", "list", "--dir", "keep.txt"], "keep.txt")
add(
    "baseline",
    "name is the index",
    ["baseline", "save", "run", "--name", "index.json", "--dir", "bl", "--force"],
    "the index's own file name",
)
add(
    "baseline",
    "save beside an unreadable index",
    ["baseline", "save", "run", "--name", "new", "--dir", "bl"],
    "index.json",
    files={"bl/index.json": "{oops"},
)
add("baseline", "save over existing", ["baseline", "save", "run", "--name", "main", "--dir", "bl"], "--force")

# ---- environment variables ---------------------------------------------------------------------
for value in ["some", "-1", "0", "cores-2", "ALL", "1.5", "pinned-ish"]:
    add(
        "env",
        f"HPUBENCH_CPU_THREADS={value}",
        [*RUN, "-w", "mlp", "-a", "cpu"],
        "HPUBENCH_CPU_THREADS",
        env={"HPUBENCH_CPU_THREADS": value},
    )
for value in ["fixed", "Steady", "0", "jemalloc"]:
    add(
        "env",
        f"HPUBENCH_MALLOC={value}",
        [*RUN, "-w", "mlp", "-a", "cpu"],
        "HPUBENCH_MALLOC",
        env={"HPUBENCH_MALLOC": value},
    )
for var in [
    "PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST",
    "LOWER_LIST",
    "PT_HPU_AUTOCAST_FP32_OPS_LIST",
    "FP32_LIST",
]:
    add("env", f"{var} missing file", [*RUN, "-w", "mlp"], var, env={var: "missing_ops.txt"})
    add(
        "env",
        f"{var} empty file",
        [*RUN, "-w", "mlp"],
        var,
        env={var: "empty_ops.txt"},
        files={"empty_ops.txt": ""},
    )
    add("env", f"{var} a directory", [*RUN, "-w", "mlp"], var, env={var: "opsdir"}, files={"opsdir/x": "add"})
for target, alias in [
    ("PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST", "LOWER_LIST"),
    ("PT_HPU_AUTOCAST_FP32_OPS_LIST", "FP32_LIST"),
]:
    add(
        "env",
        f"both {target} and {alias}",
        [*RUN, "-w", "mlp"],
        alias,
        env={target: "a.txt", alias: "b.txt"},
        files={"a.txt": "add\n", "b.txt": "mul\n"},
    )
MULTI = [*RUN, "-w", "mlp", "-a", "cpu", "--nodes", "2"]
for env, fragment in [
    ({"NODE_RANK": "x", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}, "NODE_RANK"),
    ({"NODE_RANK": "-1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}, "NODE_RANK"),
    ({"NODE_RANK": "5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}, "NODE_RANK"),
    ({"NODE_RANK": "1.5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}, "NODE_RANK"),
    ({"NODE_RANK": "1", "MASTER_PORT": "29500"}, "MASTER_ADDR"),
    ({"NODE_RANK": "1", "MASTER_ADDR": " ", "MASTER_PORT": "29500"}, "MASTER_ADDR"),
    ({"NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "x"}, "MASTER_PORT"),
    ({"NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "0"}, "MASTER_PORT"),
    ({"NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "70000"}, "MASTER_PORT"),
    ({"NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1"}, "MASTER_PORT"),
    ({"NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500", "WORLD_SIZE": "x"}, "WORLD_SIZE"),
    # Names under .invalid never resolve (RFC 2606): refused at once, not after a rendezvous timeout.
    ({"NODE_RANK": "1", "MASTER_ADDR": "nosuchhost.invalid", "MASTER_PORT": "29500"}, "does not resolve"),
    ({"NODE_RANK": "0", "MASTER_ADDR": "nosuchhost.invalid", "MASTER_PORT": "29500"}, "does not resolve"),
    ({"NODE_RANK": "1", "MASTER_ADDR": "node0.invalid.", "MASTER_PORT": "29500"}, "MASTER_ADDR"),
    ({"NODE_RANK": "1", "MASTER_ADDR": "bad host.invalid", "MASTER_PORT": "29500"}, "does not resolve"),
    (
        {"SLURM_JOB_ID": "77", "SLURM_NODEID": "1", "SLURM_JOB_NODELIST": "n[1-2].invalid"},
        "SLURM_JOB_NODELIST",
    ),
]:
    label = " ".join(f"{k}={v}" for k, v in env.items())
    add("env", label, MULTI, fragment, env=env)
add(
    "cli",
    "run --master-addr unresolvable",
    [*MULTI, "--node-rank", "1", "--master-addr", "nosuchhost.invalid", "--master-port", "29500"],
    "--master-addr 'nosuchhost.invalid' does not resolve",
)

# A plugin import's time limit (hpubench.plugins.files): a positive, finite number of seconds.
for value in ["0", "-1", "abc", "nan", "inf", "1e400", "5s", "100000"]:
    add(
        "env",
        f"HPUBENCH_PLUGIN_IMPORT_TIMEOUT={value}",
        [*RUN, "-w", "mlp", "--workloads-from", "p.py"],
        "HPUBENCH_PLUGIN_IMPORT_TIMEOUT",
        env={"HPUBENCH_PLUGIN_IMPORT_TIMEOUT": value},
        files={"p.py": "import time\ntime.sleep(3600)\n"},
    )

# Shards (hpubench.plan.shard): --shard K/N numbered from 1, or a Slurm job array's environment.
for value in ["3/2", "0/0", "a/b", "", "1/0", "0/3", "2", "-1/3", "1/2/3"]:
    add("cli", f"run --shard {value!r}", [*RUN, "--shard", value], "--shard")
for env, fragment in [
    ({"SLURM_ARRAY_TASK_ID": "abc", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0"}, "TASK_ID"),
    # a Kubernetes Indexed Job's pod (docs/kubernetes.md)
    ({"JOB_COMPLETION_INDEX": "0"}, "HPUBENCH_SHARD_COUNT is not"),
    ({"JOB_COMPLETION_INDEX": "one", "HPUBENCH_SHARD_COUNT": "3"}, "JOB_COMPLETION_INDEX='one'"),
    ({"JOB_COMPLETION_INDEX": "3", "HPUBENCH_SHARD_COUNT": "3"}, "outside the Job's 3 completions"),
    ({"JOB_COMPLETION_INDEX": "0", "HPUBENCH_SHARD_COUNT": "-2"}, "HPUBENCH_SHARD_COUNT=-2"),
    ({"SLURM_ARRAY_TASK_ID": "1"}, "SLURM_ARRAY_TASK_COUNT"),
    ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "x", "SLURM_ARRAY_TASK_MIN": "0"}, "TASK_COUNT"),
    ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "?"}, "TASK_MIN"),
    ({"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0"}, "outside"),
    (
        {
            "SLURM_ARRAY_TASK_ID": "1",
            "SLURM_ARRAY_TASK_COUNT": "3",
            "SLURM_ARRAY_TASK_MIN": "0",
            "SLURM_ARRAY_TASK_MAX": "9",
        },
        "gaps",
    ),
]:
    add("env", " ".join(f"{k}={v}" for k, v in env.items()), [*RUN, "-w", "mlp"], fragment, env=env)

# results merge (hpubench.store.mergerun): inputs must be run directories, the output a new directory.
for args, fragment in [
    (["results", "merge", "no_such_dir", "-o", "m"], "no_such_dir"),
    (["results", "merge", "keep.txt", "-o", "m"], "keep.txt"),
    (["results", "merge", "run", "-o", "run"], "one of the inputs"),
    (["results", "merge", "run", "-o", "bl/main"], "already holds a run"),
    (["results", "merge", "run", "-o", "keep.txt"], "is a file"),
    (["results", "merge", "run", "-o", "run/inner"], "inside the results directory"),
    (["results", "merge", "run"], "--out"),
    (["results", "merge", "-o", "m"], "missing"),
]:
    add("results", " ".join(args), args, fragment)

# history (hpubench.present.cli.history): saved baselines in, one HTML page out.
for args, fragment in [
    (["history", "--dir", "bl", "-o", "h.html"], "at least 2"),
    (["history", "main", "nosuch", "--dir", "bl", "-o", "h.html"], "nosuch"),
    (["history", "--dir", "bl", "--order", "alphabetical", "-o", "h.html"], "--order"),
    (["history", "--dir", "bl", "-o", "h.txt"], "suffix"),
    (["history", "--dir", "bl", "-o", "run/h.html"], "inside the results directory"),
    (["history", "--dir", "bl", "--max-regression", "lots", "-o", "h.html"], "--max-regression"),
    (["history", "--dir", "bl", "--alpha", "2", "-o", "h.html"], "--alpha"),
]:
    add("baseline", " ".join(args), args, fragment)

# bisect (hpubench.present.cli.bisect): refused before anything is checked out or run. The cases' directory
# is not a git repository; the refusals that need one (unknown revision, not an ancestor, a dirty tree,
# no regression) are in tests/e2e/test_bisect.py, in a throwaway repository.
for args, fragment in [
    (["bisect", "HEAD~1", "HEAD"], "not in a git repository"),
    (["bisect", "HEAD~1", "HEAD", "--repeat", "1"], "--repeat must be at least 2"),
    (["bisect", "HEAD~1", "HEAD", "--setup", " "], "--setup is empty"),
    (["bisect", "HEAD~1", "HEAD", "--alpha", "2"], "alpha"),
    (["bisect", "HEAD~1", "HEAD", "--statistic", "max"], "statistic"),
    (["bisect", "HEAD~1", "HEAD", "--max-regression", "lots"], "--max-regression"),
    (["bisect", "HEAD~1", "HEAD", "--", "--out", "o"], "--out is bisect's to set"),
    (["bisect", "HEAD~1", "HEAD", "--", "--repeat=3"], "--repeat is bisect's to set"),
    (["bisect", "HEAD~1", "HEAD", "--", "--stpes", "3"], "no such option: --stpes"),
    (["bisect", "HEAD~1"], "missing argument"),
]:
    add("cli", " ".join(args), args, fragment)
