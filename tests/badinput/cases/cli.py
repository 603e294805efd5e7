"""Command-line arguments: flags and their bad values, subcommands, bisect."""

from __future__ import annotations

from tests.badinput.cases.table import RUN, add

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
    ("--repeat", ["0", "-1", "x", "1.5", "1001", "99999999999999999999"], "--repeat"),
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
    (["--out", "x" * 300, "-w", "mlp"], "File name too long"),
    (["-w", "mlp", "--workloads-from", "nosuch.py"], "does not exist"),
    (["-w", "mlp", "--workloads-from", "run"], "a directory without a transformers config.json"),
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
    (["report", "run", "run", "-o", "r.html"], "are the same results"),
    (["report", "run", "run/cells.jsonl", "-o", "r.json"], "are the same results"),
    (["report", "run", "-o", "r.html", "--epoch-samples", "0"], "--epoch-samples"),
    (["report", "run", "-o", "r.html", "--epoch-samples", "x"], "--epoch-samples"),
    (["report", "run", "-o", "r.html", "--epoch-samples", "9" * 300], "--epoch-samples"),
    (["compare", "run", "no_such", "-o", "c.html"], "no_such"),
    (["compare", "run"], "missing"),
    (["gate", "--baseline", "no_such", "--current", "run"], "no_such"),
    (["gate", "--baseline", "run"], "--current"),
    (["gate", "--baseline", "run", "--current", "run", "--alpha", "0"], "alpha"),
    (["gate", "--baseline", "run", "--current", "run", "--alpha", "1.5"], "alpha"),
    (["gate", "--baseline", "run", "--current", "run", "--alpha", "x"], "--alpha"),
    # Below one false alarm in a million the intervals' quantiles run out of float resolution.
    (["gate", "--baseline", "run", "--current", "run", "--alpha", "1e-7"], "at least 1e-06"),
    (["gate", "--baseline", "run", "--current", "run", "--alpha", "1e-17"], "at least 1e-06"),
    (["gate", "--baseline", "run", "--current", "run", "--correction", "bonferroni"], "correction"),
    # A threshold left out or given twice would silently be the default or the last one.
    (["gate", "--baseline", "run", "--current", "run", "--max-regression", ""], "empty value"),
    (["gate", "--baseline", "run", "--current", "run", "--max-regression", "5%,"], "empty value"),
    (["gate", "--baseline", "run", "--current", "run", "--max-regression", "5%,10%"], "twice"),
    (
        ["gate", "-b", "run", "-c", "run", "--max-regression", "memory=5%", "--max-regression", "memory=9%"],
        "twice",
    ),
    (["gate", "--baseline", "run", "--current", "run", "--current-accelerator", ""], "is empty"),
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

# is not a git repository; the refusals that need one (unknown revision, not an ancestor, a dirty tree,
# no regression) are in tests/e2e/test_bisect.py, in a throwaway repository.
for args, fragment in [
    (["bisect", "HEAD~1", "HEAD"], "not in a git repository"),
    (["bisect", "HEAD~1", "HEAD", "--repeat", "1"], "--repeat must be between 2 and 1,000"),
    (["bisect", "HEAD~1", "HEAD", "--repeat", "99999999999999999999"], "--repeat must be between 2"),
    (["bisect", "HEAD~1", "HEAD", "--setup", " "], "--setup is empty"),
    (["bisect", "HEAD~1", "HEAD", "--out", ""], "--out is empty"),
    (["bisect", "HEAD~1", "HEAD", "--alpha", "2"], "alpha"),
    (["bisect", "HEAD~1", "HEAD", "--statistic", "max"], "statistic"),
    (["bisect", "HEAD~1", "HEAD", "--max-regression", "lots"], "--max-regression"),
    (["bisect", "HEAD~1", "HEAD", "--", "--out", "o"], "--out is bisect's to set"),
    (["bisect", "HEAD~1", "HEAD", "--", "--repeat=3"], "--repeat is bisect's to set"),
    (["bisect", "HEAD~1", "HEAD", "--", "--stpes", "3"], "no such option: --stpes"),
    (["bisect", "HEAD~1"], "missing argument"),
]:
    add("cli", " ".join(args), args, fragment)
