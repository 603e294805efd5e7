"""Commands for CI: ``gate``, ``baseline save|list`` and ``export``, registered on the main typer app.

A command group of its own, as each is; ``hpubench.present.cli.main`` calls :func:`register` once. Like
the rest of the CLI: parse, call, print; bad input is a UsageError (one line, exit 2).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from hpubench.errors import UsageError
from hpubench.present.cli.consoles import err_console, out_console
from hpubench.present.outfile import check_suffix, check_target, write_output

if TYPE_CHECKING:  # the gate pulls numpy; the CLI starts without it
    from hpubench.analysis.gate.outcomes import GateResult
    from hpubench.analysis.gate.rules import GateSettings

_PCT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(%?)\s*$")
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([KMGT]?i?B?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1 << 10, "m": 10**6, "mb": 10**6, "mib": 1 << 20}
_UNITS.update({"g": 10**9, "gb": 10**9, "gib": 1 << 30, "t": 10**12, "tb": 10**12, "tib": 1 << 40})
_METRIC_NAMES = {"throughput": "throughput", "memory": "memory", "peak_memory": "memory"}


def parse_fraction(text: str, what: str) -> float:
    """``5%`` or ``0.05`` -> 0.05; a bare number above 1 is read as percent (``5`` -> 0.05)."""
    m = _PCT.match(text)
    if not m:
        raise UsageError(f"{what} takes a percentage such as 5% or a fraction such as 0.05, got {text!r}")
    value = float(m.group(1))
    value = value / 100 if m.group(2) or value >= 1 else value
    if not 0 <= value < 1:
        raise UsageError(f"{what} must be below 100%, got {text!r}")
    return value


def parse_thresholds(values: list[str] | None) -> dict[str, float]:
    """``--max-regression 5%`` (every metric) and ``--max-regression memory=10%`` (one metric, which wins
    over the general one in either order). A value given twice is refused: the last would silently win."""
    general: dict[str, float] = {}
    specific: dict[str, float] = {}
    for raw in values or []:
        for item in raw.split(","):
            if not item.strip():  # "" or "5%,": a threshold left out would silently be the default
                raise UsageError(
                    f"--max-regression {raw!r} has an empty value; fix: e.g. --max-regression 5% or "
                    "--max-regression throughput=3%,memory=10%"
                )
            name, sep, value = item.partition("=")
            metric = _METRIC_NAMES.get(name.strip().lower()) if sep else "every metric"
            if metric is None:
                raise UsageError(
                    f"--max-regression names unknown metric {name.strip()!r}; use throughput or memory, "
                    "e.g. --max-regression memory=10%"
                )
            into = specific if sep else general
            if metric in into:
                raise UsageError(
                    f"--max-regression gives {metric} twice ({item.strip()!r}); fix: give it once"
                )
            into[metric] = (
                parse_fraction(value, f"--max-regression {metric}")
                if sep
                else parse_fraction(item, "--max-regression")
            )
    both = dict.fromkeys(("throughput", "memory"), general["every metric"]) if general else {}
    return {**both, **specific}


def parse_bytes(text: str, what: str) -> int:
    """``1MiB``, ``512KiB``, ``2MB``, ``0``: a byte count."""
    m = _SIZE.match(text)
    if not m:
        raise UsageError(f"{what} takes a size such as 1MiB or 512KiB, got {text!r}")
    unit = m.group(2).lower()
    if unit not in _UNITS:
        raise UsageError(f"{what}: unknown unit in {text!r}; use B, KiB, MiB, GiB (or KB, MB, GB)")
    return int(float(m.group(1)) * _UNITS[unit])


def _store_dir(value: str | Path) -> Path:
    """``--dir`` as a path (the default comes as one); an empty string would put the store in the current
    directory."""
    if isinstance(value, Path):
        return value
    if not value.strip():
        raise typer.BadParameter("is empty; give the baselines directory, e.g. --dir baselines")
    return Path(value)


BaselineDir = Annotated[
    Path,
    typer.Option(
        "--baseline-dir",
        "--dir",
        parser=_store_dir,
        help="Where named baselines live (see README: baselines layout).",
    ),
]


BaselineRefOpt = Annotated[
    str, typer.Option("--baseline", "-b", help="Baseline: a run directory, cells.jsonl, or a saved name.")
]
CurrentRefOpt = Annotated[
    str, typer.Option("--current", "-c", help="Current results: a run directory, cells.jsonl or a name.")
]
MaxRegressionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--max-regression",
        help="Largest tolerated change: 5% (all metrics, the default) or throughput=3% / memory=10%; "
        "repeatable.",
    ),
]
MemoryFloorOpt = Annotated[
    str, typer.Option("--memory-floor", help="Memory growth below this is never a regression.")
]
AlphaOpt = Annotated[
    float, typer.Option("--alpha", help="Error rate of the whole gate (after the correction).")
]
CorrectionOpt = Annotated[
    str, typer.Option("--correction", help="holm (family-wise), bh (false discovery) or none.")
]
MissingOpt = Annotated[
    str, typer.Option("--missing", help="fail: a baseline cell absent from current fails; ignore.")
]
StatisticOpt = Annotated[
    str,
    typer.Option(
        "--statistic",
        help="What each run is summarised by: min (its fastest step: steadiest on a shared machine; "
        "sees slowdowns of every step, not added stalls), mean (what training delivers; for quiet "
        "dedicated runners) or median.",
    ),
]
TestOpt = Annotated[
    str,
    typer.Option(
        "--test",
        help="auto: a permutation test on the fastest half of the runs where there are enough runs "
        "to reach significance (else welch); permutation: always; welch: a t test on log values.",
    ),
]
StrictQualityOpt = Annotated[
    bool,
    typer.Option(
        "--strict-quality",
        help="Fail cells whose runs are interfered, recompiled or partial on every run of a side "
        "(default: reported as not comparable, counted, never a failure).",
    ),
]
AllowFlopsChangeOpt = Annotated[
    bool,
    typer.Option(
        "--allow-flops-change",
        help="Compare a cell whose FLOPs per step changed (the model changed) in samples/s, rather than "
        "refuse it; its samples and tokens per step must still agree.",
    ),
]
MarkdownOpt = Annotated[
    Path | None,
    typer.Option("--markdown", help="Write a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY)."),
]
JunitOpt = Annotated[
    Path | None, typer.Option("--junit", help="Write JUnit XML here, one test case per cell.")
]
BaselineAcceleratorOpt = Annotated[
    str | None, typer.Option("--baseline-accelerator", help="Only baseline cells on this accelerator.")
]
CurrentAcceleratorOpt = Annotated[
    str | None, typer.Option("--current-accelerator", help="Only current cells on this accelerator.")
]


def _filter_accelerator(records, accelerator: str | None, option: str):
    """Keep one accelerator's records (``--baseline-accelerator``/``--current-accelerator``).

    A value that keeps nothing is a typo or the wrong results: a one-line UsageError that names the
    accelerators present, rather than a gate over no cells."""
    if accelerator is not None and not accelerator.strip():
        raise UsageError(f"{option} is empty; fix: name an accelerator (e.g. {option} cpu) or leave it out")
    if not accelerator:
        return records
    kept = [r for r in records if r.cell.accelerator == accelerator]
    if not kept:
        have = sorted({r.cell.accelerator for r in records})
        raise UsageError(f"{option} {accelerator!r} keeps no records; the results hold: {', '.join(have)}")
    return kept


def _gate_settings(
    max_regression: list[str] | None,
    memory_floor: str,
    alpha: float,
    correction: str,
    missing: str,
    statistic: str,
    test: str,
    strict_quality: bool,
    allow_flops_change: bool = False,
) -> GateSettings:
    """The gate's flags as one ``GateSettings``, so the command body stays parse -> gate -> print.

    The thresholds and the floor are parsed here (a bad one is a one-line UsageError naming its flag);
    the other values are checked by ``GateSettings`` itself, which words their errors."""
    from hpubench.analysis.gate import rules as gaterules  # deferred: numpy

    thresholds = parse_thresholds(max_regression)
    return gaterules.GateSettings(
        throughput_threshold=thresholds.get("throughput", gaterules.DEFAULT_THRESHOLD),
        memory_threshold=thresholds.get("memory", gaterules.DEFAULT_THRESHOLD),
        memory_floor_bytes=parse_bytes(memory_floor, "--memory-floor"),
        alpha=alpha,
        correction=correction,
        missing=missing,
        statistic=statistic,
        test=test,
        strict_quality=strict_quality,
        same_flops=not allow_flops_change,
    )


def _compare(
    baseline: str,
    current: str,
    settings: GateSettings,
    baseline_dir: Path,
    accelerators: tuple[str | None, str | None],
) -> GateResult:
    """Gate ``current`` against ``baseline`` (each a run directory, cells.jsonl or saved name).

    Logic, not presentation: it lives here until hpubench.api has a gate entry point. Both sides are
    resolved before either is loaded, then each is loaded and narrowed to its accelerator (baseline
    first), so with several bad inputs the same one is reported as always. The baseline's stored
    run-to-run spread (kept by 'baseline save' from repeated runs) joins the comparison, which is how
    a single-run current can still be judged against a repeated baseline."""
    from hpubench.analysis.gate import decide as gate_mod  # deferred: numpy
    from hpubench.analysis.runspread import stored_spreads  # deferred: numpy
    from hpubench.store import baselines  # deferred: numpy (baselines)
    from hpubench.store.readback import load_results  # deferred: the record modules, ~40 ms

    base_path = baselines.resolve(baseline, baseline_dir)
    cur_path = baselines.resolve(current, baseline_dir)
    base = _filter_accelerator(load_results([str(base_path)]), accelerators[0], "--baseline-accelerator")
    cur = _filter_accelerator(load_results([str(cur_path)]), accelerators[1], "--current-accelerator")
    spreads = stored_spreads(baselines.read_run_to_run(base_path), settings.statistic, str(baseline))
    return gate_mod.gate(base, cur, settings, run_to_run=spreads)


def _check_ci_files(markdown: Path | None, junit: Path | None) -> None:
    """Both CI files are checked before the gate reads anything: a path onto a run's own records, a
    folder or one file named twice is refused with nothing written."""
    if markdown is not None and junit is not None and markdown.resolve() == junit.resolve():
        raise UsageError(f"--markdown and --junit both name {junit}; fix: give each its own file")
    for path in (markdown, junit):
        if path is not None:
            check_target(path, make_parent=True)


def _print_gate(
    result: GateResult, baseline: str, current: str, markdown: Path | None, junit: Path | None
) -> None:
    """Show the verdict: the table on stdout, notes and the summary line on stderr, the CI files.

    The summary line comes last, after the Markdown and JUnit files are written: a file that cannot be
    written ends the command (one line, exit 2) without a summary that CI could read as the verdict."""
    from hpubench.present.gate_report import junit_xml, terminal_table  # deferred: numpy
    from hpubench.present.gate_report import markdown as render_markdown  # deferred: numpy

    out_console.print(terminal_table(result, title=f"hpubench gate: {baseline} -> {current}"))
    for note in result.notes:
        err_console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
    if markdown is not None:
        write_output(markdown, render_markdown(result, baseline, current).encode(), make_parent=True)
    if junit is not None:
        write_output(junit, junit_xml(result, baseline, current), make_parent=True)
    style = "green" if result.passed else "bold red"
    err_console.print(f"[{style}]{result.summary()}[/]", highlight=False)


def gate(
    baseline: BaselineRefOpt,
    current: CurrentRefOpt,
    max_regression: MaxRegressionOpt = None,
    memory_floor: MemoryFloorOpt = "1MiB",
    alpha: AlphaOpt = 0.01,
    correction: CorrectionOpt = "holm",
    missing: MissingOpt = "fail",
    statistic: StatisticOpt = "min",
    test: TestOpt = "auto",
    strict_quality: StrictQualityOpt = False,
    allow_flops_change: AllowFlopsChangeOpt = False,
    markdown: MarkdownOpt = None,
    junit: JunitOpt = None,
    baseline_accelerator: BaselineAcceleratorOpt = None,
    current_accelerator: CurrentAcceleratorOpt = None,
    baseline_dir: BaselineDir = Path(".hpubench/baselines"),
) -> None:
    """Fail (exit 1) when current is slower or hungrier than baseline; 0 passes, 2 is bad input.

    One run a side cannot show run-to-run drift: such cells pass as "insufficient evidence" (run with
    --repeat 3 or more, or gate against a baseline saved from repeated runs, which stores each cell's
    run-to-run spread). Every cell shows the smallest slowdown its runs could detect."""
    # the helpers defer their imports, as every command's work: the gate, its reports and the baselines
    # pull numpy; the CLI starts (and prints --help) without it
    settings = _gate_settings(
        max_regression,
        memory_floor,
        alpha,
        correction,
        missing,
        statistic,
        test,
        strict_quality,
        allow_flops_change,
    )
    _check_ci_files(markdown, junit)
    accelerators = (baseline_accelerator, current_accelerator)
    result = _compare(baseline, current, settings, baseline_dir, accelerators)
    _print_gate(result, baseline, current, markdown, junit)
    if result.exit_code:
        raise typer.Exit(result.exit_code)


def baseline_save(
    results: Annotated[Path, typer.Argument(help="A run directory or its cells.jsonl.")],
    name: Annotated[str, typer.Option("--name", "-n", help="Baseline name, e.g. main or v1.2.")],
    directory: BaselineDir = Path(".hpubench/baselines"),
    force: Annotated[bool, typer.Option("--force", help="Replace a baseline of the same name.")] = False,
    note: Annotated[str | None, typer.Option("--note", help="Free text kept in the index.")] = None,
) -> None:
    """Keep a run as a named baseline: <dir>/<name>/{cells.jsonl,meta.json} plus <dir>/index.json."""
    from hpubench.analysis.runspread import run_to_run_figures  # deferred: pulls numpy, as below
    from hpubench.store import baselines  # deferred: pulls numpy; the CLI starts without it

    target = baselines.save(results, name, directory, force=force, note=note, spreads_of=run_to_run_figures)
    entry = baselines.read_index(directory)[name]
    out_console.print(
        f"saved baseline {name!r}: {entry['cells']} cells ({entry['ok']} ok, {entry['failed']} failed, "
        f"{entry['skipped']} skipped), {entry['repeats']} repeat(s), run-to-run spread stored for "
        f"{entry['run_to_run_cells']} cell(s) -> {target}",
        highlight=False,
    )


def baseline_list(directory: BaselineDir = Path(".hpubench/baselines")) -> None:
    """The saved baselines, newest first."""
    from hpubench.store import baselines  # deferred: pulls numpy; the CLI starts without it

    index = baselines.read_index(directory)
    table = Table(title=f"baselines in {directory}")
    for col in ("name", "saved", "cells", "ok", "failed", "repeats", "commit", "note"):
        table.add_column(col)
    for name, e in sorted(index.items(), key=lambda kv: kv[1].get("saved_at") or "", reverse=True):
        commit = (e.get("git_commit") or "")[:10] + ("+dirty" if e.get("git_dirty") else "")
        table.add_row(
            name,
            str(e.get("saved_at")),
            str(e.get("cells")),
            str(e.get("ok")),
            str(e.get("failed")),
            str(e.get("repeats")),
            commit or "-",
            e.get("note") or "",
        )
    out_console.print(table)


def export(
    results: Annotated[str, typer.Argument(help="A run directory, cells.jsonl, or a saved baseline name.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="pytest-benchmark.")] = "pytest-benchmark",
    out: Annotated[Path, typer.Option("--out", "-o", help="The file to write.")] = Path("hpubench.json"),
    baseline_dir: BaselineDir = Path(".hpubench/baselines"),
) -> None:
    """Write results in another tool's format: pytest-benchmark JSON, which its 'compare' reads."""
    # deferred, as every command's work: the exporter and the baselines pull numpy; the CLI starts
    # without it
    from hpubench.present.export import FORMATS, SUFFIXES, to_pytest_benchmark  # deferred: numpy
    from hpubench.store import baselines  # deferred: numpy (baselines)
    from hpubench.store.readback import load_results  # deferred: the record modules, ~40 ms
    from hpubench.store.rundir import ResultStore  # deferred: the record modules, ~40 ms

    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    check_suffix(out, SUFFIXES)
    check_target(out)
    path = baselines.resolve(results, baseline_dir)
    records = load_results([str(path)])
    meta = ResultStore(path if path.is_dir() else path.parent).read_meta() or {}
    doc = to_pytest_benchmark(records, meta)
    n = len(doc["benchmarks"])
    if n == 0:
        raise UsageError(f"{results} has no measured cells to export (every cell failed or was skipped)")
    write_output(out, (json.dumps(doc, indent=4, sort_keys=True, default=str) + "\n").encode())
    left = len({r.key for r in records}) - n
    err_console.print(
        f"wrote {n} benchmark(s) to {out}"
        + (f"; {left} cell(s) without a measurement left out" if left else ""),
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    """Add ``gate``, ``export`` and the ``baseline save|list`` group to the main app."""
    baseline_app = typer.Typer(
        rich_markup_mode=None, no_args_is_help=True, help="Save and list named baselines for 'gate'."
    )
    app.add_typer(baseline_app, name="baseline")
    app.command()(gate)
    baseline_app.command("save")(baseline_save)
    baseline_app.command("list")(baseline_list)
    app.command()(export)
