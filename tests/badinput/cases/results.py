"""Result files: spoiled records, corrupt lines and meta, resumes, merges."""

from __future__ import annotations

import json

from tests.badinput.cases.table import RUN, add
from tests.badinput.records import GOOD, cells_with, json_line, with_path

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
    # Values no writer produces that every ratio, cost or sum divides by or overflows on.
    ("step_times_s", [0.1, 0.0], "step_times_s[1]"),
    ("step_times_s", [0.0] * 12, "step_times_s[0]"),
    ("step_times_s", [1e308] * 12, "step_times_s[0]"),
    ("warmup_times_s", [0.0, 0.1], "warmup_times_s[0]"),
    ("metrics.samples_per_s", 0.0, "samples_per_s"),
    ("metrics.samples_per_step", 0, "samples_per_step"),
    ("metrics.step_time_mean_s", 0.0, "step_time_mean_s"),
    ("metrics.step_time_p50_s", 0.0, "step_time_p50_s"),
    # The runtime facts RuntimeInfo declares, each of its kind; integers that fit 64 bits.
    ("runtime.threads", "x", "runtime.threads"),
    ("runtime.heap", [1], "runtime.heap"),
    ("runtime.interference", "x", "runtime.interference"),
    ("runtime.compiles_measured", -1, "runtime.compiles_measured"),
    ("runtime.steps_stop", 3, "runtime.steps_stop"),
    ("memory.peak_allocated_bytes", 2**64, "memory.peak_allocated_bytes"),
    ("metrics.flops_per_step", 10**400, "flops_per_step"),
]


for path, value, fragment in SPOILED:
    label = f"{path}={'(absent)' if value is ... else repr(value)[:30]}"
    files = {"bad/cells.jsonl": cells_with(with_path(GOOD, path, value))}
    add("results", f"results {label}", ["results", "bad"], fragment, files=files)
for path, value, fragment in SPOILED[::4]:
    label = f"{path}={'(absent)' if value is ... else repr(value)[:30]}"
    files = {"bad/cells.jsonl": cells_with(with_path(GOOD, path, value))}
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
    files = {"bad/cells.jsonl": cells_with(with_path(GOOD, path, value))}
    add("results", f"doctor --from {label}", ["doctor", "--from", "bad"], fragment, files=files)
for path, value, fragment in SPOILED[1::6]:
    label = f"{path}={'(absent)' if value is ... else repr(value)[:30]}"
    files = {"bad/cells.jsonl": cells_with(with_path(GOOD, path, value))}
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
        files={"bad/cells.jsonl": json_line(GOOD) + raw},
    )
# A resume reads the run it continues before it writes anything there.
for name, files, fragment in [
    ("cells corrupt", {"o/cells.jsonl": b"garbage\n"}, "corrupt"),
    ("meta corrupt", {"o/meta.json": "{"}, "meta.json"),
    ("cells spoiled", {"o/cells.jsonl": cells_with(with_path(GOOD, "step_times_s", "x"))}, "step_times_s"),
]:
    add("results", f"run --resume {name}", [*RUN, "-w", "mlp", "--resume"], fragment, files=files)
add("results", "no cells.jsonl in dir", ["results", "empty"], "cells.jsonl", files={"empty/meta.json": "{}"})
add(
    "results",
    "meta not json",
    ["report", "bad", "-o", "r.html"],
    "meta.json",
    files={"bad/cells.jsonl": json_line(GOOD), "bad/meta.json": "{oops"},
)
add(
    "results",
    "meta not object",
    ["report", "bad", "-o", "r.html"],
    "meta.json",
    files={"bad/cells.jsonl": json_line(GOOD), "bad/meta.json": "[1]"},
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
            files={"bad/cells.jsonl": json_line(GOOD), "bad/meta.json": raw},
        )
# meta.json fields the readers use (hpubench.store.metacheck): each command that reads the meta refuses it.
META_FIELDS: list[tuple[str, object, str]] = [
    ("git", "abc", "field git:"),
    ("git", {"commit": 5}, "git.commit"),
    ("git", {"dirty": "yes"}, "git.dirty"),
    ("started_at", 5, "started_at"),
    ("cwd", 5, "cwd"),
    ("hostname", ["a"], "hostname"),
    ("command_line", "run -w mlp", "command_line"),
    ("cpu_count", "x", "cpu_count"),
    ("baseline", {"name": 3}, "baseline.name"),
    ("run_to_run", [1], "run_to_run"),
    ("run_to_run", {"k": {"runs": "y"}}, "runs"),
    ("run_to_run", {"k": {"median": "x", "runs": 3}}, "median"),
    ("shard", {"index": "a"}, "shard.index"),
    ("shard", {"index": 1, "count": 2, "partition": [1]}, "shard.partition"),
    ("merged", {"hosts": "abc"}, "merged.hosts"),
    ("inventory", [1], "inventory"),
]
META_READERS = [
    ["report", "bad", "-o", "r.html"],
    ["baseline", "save", "bad", "--name", "new", "--dir", "bl"],
    ["export", "bad", "-o", "e.json"],
    ["gate", "--baseline", "bad", "--current", "run"],
    ["history", "bad", "run", "--dir", "bl", "-o", "h.html"],
    ["results", "merge", "bad", "run", "-o", "m"],
]
for i, (name, value, fragment) in enumerate(META_FIELDS):
    cmd = META_READERS[i % len(META_READERS)]
    files = {"bad/cells.jsonl": json_line(GOOD), "bad/meta.json": json.dumps({name: value})}
    add("results", f"{' '.join(cmd[:2])} meta {name}={value!r}"[:80], cmd, fragment, files=files)

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
    (["results", "merge", "run", "-o", "."], "already holds other files"),
    (["results", "merge", "run", "-o", "bl"], "inside the baseline store"),
    (["results", "merge", "run", "-o", "bl/new"], "inside the baseline store"),
]:
    add("results", " ".join(args), args, fragment)
