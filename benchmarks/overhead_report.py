"""The printed report of ``overhead.py``: every figure it measured, each with how it was measured, and a
verdict on the throughput ratio against the 0.99-1.01 target. Formatting only; no measuring here."""

from __future__ import annotations

from typing import Any

from hpubench.analysis.stats.medianci import MedianInterval


def _f(x: float | None, fmt: str) -> str:
    return "n/a" if x is None else format(x, fmt)


def _ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 1e3:.1f} ms"


def _range(s: dict[str, Any], fmt: str) -> str:
    return f"{_f(s['median'], fmt)} ({_f(s['min'], fmt)}-{_f(s['max'], fmt)})"


def ratio_verdict(ci: dict[str, Any] | None, low: float = 0.99, high: float = 1.01) -> str:
    """Whether the rounds show the median hpubench/bare ratio inside [low, high], outside it, or cannot
    tell at this noise (the interval straddles a bound: more rounds narrow it)."""
    if not ci:
        return "no ratio: a side did not run"
    iv = MedianInterval(**ci)
    if iv.coverage < 0.95:  # under 6 rounds min-max is the widest interval there is, and it is not 95%
        return (
            f"too few rounds to decide ({iv.n}; min-max covers the median at {iv.coverage:.0%}): "
            "give --rounds 6 or more"
        )
    at = (
        f"median {iv.median:.3f}, interval {iv.low:.3f}-{iv.high:.3f} at {iv.coverage:.0%} over {iv.n} rounds"
    )
    if iv.within(low, high):
        return f"inside the target: {at}"
    if iv.clear_of(low, high):
        return f"OUTSIDE the target: {at}"
    return f"not decided at this noise: {at}; more --rounds narrow it"


def print_environment(res: dict[str, Any]) -> None:
    """The machine and how busy other work kept it, so a reader knows how much noise the figures carry."""
    env = res["environment"]
    print()
    print("=" * 100)
    print(f"hpubench overhead benchmark ({res['mode']} run on {res['device']}, {res['total_s']:.0f} s)")
    print(
        f"host: {env['cpu']}, {env['cpu_count']} CPUs; torch {env['torch']}; Python {env['python']}; "
        f"OMP_NUM_THREADS={env['OMP_NUM_THREADS'] or 'unset'}"
    )
    print(f"load average (1/5/15 min): start {env['loadavg_start']}, end {env['loadavg_end']}")
    cores = env.get("other_processes_cores")
    if cores is not None:
        print(
            f"other processes on this machine used {env['other_processes_cpu_s']:.0f} CPU-s during the run, "
            f"{cores:.2f} of {env['cpu_count']} cores on average"
        )
        if cores > 0.25:
            threads = {th for t in res["throughput"] for th in t["torch_threads_bare"]}
            print("   NOTE: the machine was shared, so the throughput figures carry that noise.", end="")
            if threads - {"1"}:
                print(" With several torch threads a step")
                print(
                    "   stalls whenever one of its threads is descheduled: compare the best-round ratio, "
                    "re-run on an idle machine,"
                )
                print("   or add --threads 1 (applies to both sides).")
            else:
                print(" Compare the best-round ratio, or re-run on an idle machine.")


def print_throughput(res: dict[str, Any]) -> None:
    """Part 1: the hpubench/bare table, the verdict per workload against the target, and the legend."""
    print()
    dev = res["device"]
    print(f"1. Throughput on {dev}: hpubench cell (fork isolation) vs a bare PyTorch loop, same work")
    warmups = ", ".join(f"{t['workload']} {t['warmup_steps']}" for t in res["throughput"])
    print(
        f"   medians over rounds, (min-max); ratio = hpubench/bare paired per round, 1.00 = no overhead; "
        f"both sides warm up ~{res['warmup_s']:g} s: {warmups} steps"
    )
    head = (
        f"   {'workload':<8} {'bs':>3} {'steps':>5} {'threads':>8}  {'hpubench samples/s':<26} "
        f"{'bare samples/s':<26} {'ratio':<20} {'best':<6} {'loss':<6}"
    )
    print(head)
    print("   " + "-" * (len(head) - 3))
    for t in res["throughput"]:
        threads = f"{'/'.join(t['torch_threads_hpubench'])}|{'/'.join(t['torch_threads_bare'])}"
        diff = t["max_abs_loss_diff"]
        loss = "n/a" if diff is None else ("same" if diff == 0 else f"d={diff:.1e}")
        print(
            f"   {t['workload']:<8} {t['batch_size']:>3} {t['steps']:>5} {threads:>8}  "
            f"{_range(t['hpubench_samples_per_s'], '.0f'):<26} {_range(t['bare_samples_per_s'], '.0f'):<26} "
            f"{_range(t['ratio_hpubench_over_bare'], '.3f'):<20} {_f(t['ratio_best_rounds'], '.3f'):<6} "
            f"{loss:<6}"
        )
        for e in t["errors"]:
            print(f"     error: {e}")
    print("   target 0.99-1.01: is the median ratio shown inside it? (distribution-free median interval)")
    for t in res["throughput"]:
        print(f"   {t['workload']:<8} {ratio_verdict(t.get('ratio_median_interval'))}")
    print("   threads = torch.get_num_threads() in the hpubench cell child | in the bare child")
    print("   best = fastest hpubench round / fastest bare round (least disturbed by other load)")
    print("   loss = last training loss of both sides compared: 'same' means bit-identical work was done")


def print_bookkeeping(dev: str, bk: dict[str, Any]) -> None:
    """What hpubench's per-step timing adds on ``dev``, so the ratio above can be read against it."""
    if dev != "cpu":
        print(
            f"   On {dev} the cell times its steps with the device's own clock (its record's "
            "runtime.timing); the bare loop"
        )
        print(
            "   synchronises only around its whole measured loop: the ratio includes what the per-step "
            "timing costs there."
        )
    elif "error" not in bk:
        per_step = 2 * bk["synchronize_call_s"] + 2 * bk["perf_counter_call_s"]
        print(
            "   hpubench times every step alone, acc.synchronize() before and after. On CPU that sync is an "
            f"empty method ({bk['synchronize_call_s'] * 1e9:.0f} ns"
        )
        print(
            "   a call): CPU ops are synchronous, so it waits for nothing and costs nothing. With two "
            f"perf_counter reads ({bk['perf_counter_call_s'] * 1e9:.0f} ns"
        )
        print(
            f"   each) the timing adds ~{per_step * 1e6:.2f} us a step. The per-step loss read "
            f"(loss.item(), {bk['loss_item_s'] * 1e6:.1f} us) falls"
        )
        print(
            "   between timed steps, so hpubench's samples/s (batch x steps / sum of step times) leaves it "
            "out; the bare loop's"
        )
        print("   single clock includes its own loop overhead.")


def print_fixed_cost(res: dict[str, Any]) -> None:
    """Part 2's own figures: the zygote start, then what each tiny mlp cell costs besides its steps."""
    fx = res["fixed_cost"]
    print()
    print("2. Per-cell fixed cost (fork isolation, pre-warmed zygote)")
    zs = res["zygote_start_s"]
    print(
        f"   zygote start, paid once per run (import torch + pre-imports): "
        f"{', '.join(f'{z:.2f} s' for z in zs) or 'n/a'}"
    )
    m = fx["mlp"]
    print(f"   {fx['mlp_cells']} tiny mlp cells, 2 steps + 1 warm-up each:   {'median':>10} {'max':>10}")
    labels = [
        ("dispatch_to_child_s", "request sent -> child running"),
        ("dispatch_to_first_step_s", "request sent -> first training step"),
        ("setup_s", "  of which setup in the child"),
        ("flops_count_s", "    of which FLOP counting"),
        ("worker_wall_s", "worker wall (run_cell)"),
        ("launcher_overhead_s", "launcher overhead (cell wall - worker wall)"),
        ("cell_wall_s", "cell wall (started -> finished event)"),
    ]
    for key, label in labels:
        print(f"   {label:<45} {_ms(m[key]['median']):>10} {_ms(m[key]['max']):>10}")
    first = fx["mlp_first_cell"]
    if first:
        print(
            f"   first cell after the zygote started: dispatch -> first step "
            f"{_ms(first['dispatch_to_first_step_s'])}, launcher overhead {_ms(first['launcher_overhead_s'])}"
        )
    if fx["event_wall_equals_record_wall"]:
        print(
            "   (the launcher's finished event carries the record's own wall_s, so event wall_s - record "
            "wall_s is 0 by\n    construction; launcher overhead above is the wall time between the "
            "started and finished events instead)"
        )


def print_other_cells(res: dict[str, Any]) -> None:
    """The larger workloads' cells, then the naive design and spawn isolation set against the fork cells."""
    fx = res["fixed_cost"]
    print(
        f"   {'one cell each':<14} {'to child':>10} {'to 1st step':>12} {'setup':>10} {'FLOPs':>10} "
        f"{'launcher':>10} {'status':>8}"
    )
    for name, row in fx["one_cell_each"].items():
        print(
            f"   {name:<14} {_ms(row['dispatch_to_child_s']):>10} {_ms(row['dispatch_to_first_step_s']):>12} "
            f"{_ms(row['setup_s']):>10} {_ms(row['flops_count_s']):>10} "
            f"{_ms(row['launcher_overhead_s']):>10} {row['status']:>8}"
        )
        if row["status"] != "ok":
            print(f"     {row['reason']}")
    print("   Naive alternative, one fresh interpreter per cell, paid by every cell:")
    d2f = fx["mlp"]["dispatch_to_first_step_s"]["median"]
    for label, s in res["naive"].items():
        ratio = s["median"] / d2f if (s["median"] and d2f) else None
        print(
            f"   {'python -c ' + repr(label):<45} {_ms(s['median']):>10} (median of {s['n']}) "
            f"= {_f(ratio, '.0f')}x hpubench's median dispatch -> first step"
        )
    sp = res["spawn"]
    s = sp["dispatch_to_first_step_s"]
    ratio = s["median"] / d2f if (s["median"] and d2f) else None
    print(
        f"   {'hpubench --isolation spawn, to 1st step':<45} {_ms(s['median']):>10} (median of {s['n']}) "
        f"= {_f(ratio, '.0f')}x fork"
    )


def print_report(res: dict[str, Any]) -> None:
    print_environment(res)
    print_throughput(res)
    print_bookkeeping(res["device"], res["bookkeeping"])
    if res["fixed_cost"] is None:
        print()
        print("2.-3. Fixed cost and spawn isolation: skipped (--throughput-only)")
        return
    print_fixed_cost(res)
    print_other_cells(res)
    print("=" * 100)
