"""The thin torch layer under the estimator: what a cell's model is, counted on ``meta``, and how fast
this machine multiplies matrices. Runs in a throw-away child: forked from the launcher's pre-warmed
server (``Launcher.probe``), or ``python -m hpubench.run.probe`` under spawn isolation.

Why a child: counting imports torch and the workloads (and a calibration touches the device), which the
launcher process must never do (``hpubench.run.forkserver.server`` explains why). Why ``meta``: it costs no
memory and
no compute, so the standard sizes are counted in seconds on any machine. Everything that decides with
these facts is pure, in ``hpubench.plan.cost`` and ``hpubench.plan.budget``.

Per (workload, size, batch) it counts, in one forward + backward pass on meta:

- parameters (elements; tied weights once, as the optimizer sees them) and trainable parameters;
- FLOPs (``torch.utils.flop_counter``, the same count MFU uses), and of them the convolutions' (forward
  and backward), which run at their own calibrated rate: fp16 convolution backward on a CPU ran ~100x
  slower than the fp16 matmul there (1 against 198 GFLOP/s on one thread);
- operators dispatched (a per-op dispatch cost dominates small cells on CPU);
- bytes of the tensors autograd saves for backward (``saved_tensors_hooks``), at fp32: the activation
  memory, measured from the model itself rather than guessed from its config.

Counts are cached in a JSON file per (workload, size, batch, digest of the workload's source file), so a
second ``list cells`` skips the counting. The calibration (``--calibrate``) times square matmuls at each
requested dtype on device 0 of one accelerator, and a convolution's forward + backward where a counted
model has convolutions, and reports TFLOP/s of each; it is written into the run directory by the caller.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import inspect
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

import workloads
from hpubench.errors import OptionValueError, UsageError
from hpubench.measure.conditions import plan_threads, thread_policy
from hpubench.measure.conditions_probe import affinity
from hpubench.measure.heap import heap_policy, plan_heap
from hpubench.measure.heap_probe import apply_heap_plan
from hpubench.plan.cell import flops_key, parse_flops_key
from hpubench.plugins import files as pluginload
from hpubench.run.executors.result import PROBE_USAGE_PREFIX
from hpubench.store.rundir import write_json_atomic
from workloads.base import Workload
from workloads.flops import conv_flops

META = torch.device("meta")
# Largest square product timed: on one host thread 512 is near a BLAS's best rate; an accelerator needs
# far more work per launch (an H200 timed 14.5 bf16 TFLOP/s at 512 and ~790 at 8192: KINDS.md, and the
# gpt standard bf16 cell there reached 160 achieved TFLOP/s, 11x the 512 figure).
LINEAR_MAX_N = {"host": 512, "device": 8192}
# Convolutions (fwd + bwd of a 3x3, stride 1, 28x28 maps, batch = channels / 16) grow by channels to:
CONV_MAX_CHANNELS = {"host": 128, "device": 1024}
CONV_HW = 28
CALIBRATION_GROW_S = 0.05  # grow a problem while one timing takes less than this
CALIBRATION_SATURATED = 1.05  # ... and while doubling it still raises the rate by more than 5%
# Seconds spent timing each size. A host thread's product takes under 2 ms, so a twentieth of a second is
# still hundreds of timings to take the best of; a device's larger products get more time.
CALIBRATION_S = {"host": 0.05, "device": 0.2}
FACTS_VERSION = 2  # bumped when count_model counts something new (2: conv_flops): older cache entries recount
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


class _OpCounter(TorchDispatchMode):
    """Counts operators dispatched; on meta every op is one dispatch, as in eager on a real device."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        return func(*args, **(kwargs or {}))


def source_digest(workload: Workload) -> str:
    """A digest of the file defining the workload and of what else it reads (``Workload.fingerprint``): a
    changed model must not reuse a stale count."""
    try:
        path = inspect.getsourcefile(type(workload))
        data = Path(path).read_bytes() if path else b""
    except (OSError, TypeError):
        data = b""
    data += type(workload).__qualname__.encode() + workload.fingerprint()  # e.g. a model's config.json
    return hashlib.sha1(data).hexdigest()[:16]


class _FusedAttention(torch.autograd.Function):
    """Attention as fused kernels (CPU flash, CUDA flash/efficient, HPU fused SDPA) save it for backward:
    q, k, v, the output and one log-sum-exp per row. On meta SDPA falls back to plain matmuls, which
    would save the whole score matrix (seq x seq per head) and overstate memory several times."""

    @staticmethod
    def forward(ctx, q, k, v, out, lse):
        ctx.save_for_backward(q, k, v, out, lse)
        return out.view_as(out)

    @staticmethod
    def backward(ctx, grad):
        q, k, v, _out, _lse = ctx.saved_tensors
        return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v), None, None


@contextlib.contextmanager
def _fused_attention() -> Iterator[None]:
    real = F.scaled_dot_product_attention

    def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        with torch.no_grad():
            out = real(q, k, v, *args, **kwargs)
        return _FusedAttention.apply(q, k, v, out, q.new_empty(q.shape[:-1]))

    F.scaled_dot_product_attention = sdpa
    try:
        yield
    finally:
        F.scaled_dot_product_attention = real


def count_model(workload: Workload, size: str, batch_size: int) -> dict[str, int]:
    """Parameters, FLOPs, operators and saved-for-backward bytes of one training step, on meta.

    Two passes: FLOPs and operators as ``workloads.flops`` counts them (attention as matmuls, the model's
    arithmetic), then the saved bytes with attention as a fused kernel saves it (``_FusedAttention``).
    Checked against the same hooks on real CPU tensors for the tiny sizes: equal bytes for every workload.
    """
    with META:
        model = workload.build_model(size)
    model.train()
    params = list({id(p): p for p in model.parameters()}.values())
    param_ids = {id(p) for p in params}
    ops = _OpCounter()
    with FlopCounterMode(display=False) as flops, ops:
        workload.loss(model, workload.make_batch(size, batch_size, META, None)).backward()

    batch = workload.make_batch(size, batch_size, META, None)
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        # The same tensor saved by two nodes is held once: keyed by the object (meta has no storage).
        if id(t) not in param_ids:
            saved[id(t)] = t.numel() * 4  # at fp32; hpubench.plan.cost scales it by precision
        return t

    model.zero_grad(set_to_none=True)
    with _fused_attention(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        workload.loss(model, batch).backward()
    by_op = flops.get_flop_counts().get("Global", {})
    return {
        "params": sum(p.numel() for p in params),
        "trainable_params": sum(p.numel() for p in params if p.requires_grad),
        "param_tensors": len(params),
        "flops": int(flops.get_total_flops()),
        "conv_flops": conv_flops(by_op),
        "ops": ops.ops,
        "activation_bytes_fp32": sum(saved.values()),
        "batch_bytes_fp32": sum(t.numel() * 4 for t in batch),
    }


def _load_cache(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def facts(
    wanted: list[tuple[str, str, int, dict[str, str]]], cache_path: Path | None
) -> dict[str, dict[str, Any]]:
    """Counts for each (workload, size, batch, options), keyed by ``hpubench.plan.cell.flops_key``; cached by
    source digest."""
    cache = _load_cache(cache_path)
    out: dict[str, dict[str, Any]] = {}
    changed = False
    for name, size, batch, options in wanted:
        wl = workloads.get(name, options)
        key = flops_key(name, size, batch, tuple(options.items()))
        digest = source_digest(wl)
        hit = cache.get(key)
        # A model that failed to count is counted again: the failure may be the user's --option (refused
        # below) or gone with a new torch; it costs only the time to fail.
        fresh = isinstance(hit, dict) and hit.get("digest") == digest and hit.get("version") == FACTS_VERSION
        if fresh and "error" not in hit:
            out[key] = hit
            continue
        t0 = time.perf_counter()
        try:
            entry: dict[str, Any] = count_model(wl, size, batch)
        except OptionValueError:
            raise  # the user's --option, refused as bad input (main)
        except Exception as exc:  # a model meta cannot run: no estimate for it, never a crash
            entry = {"error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"}
        entry.update(
            digest=digest,
            version=FACTS_VERSION,
            optimizer=wl.optimizer,
            count_s=round(time.perf_counter() - t0, 3),
        )
        out[key] = cache[key] = entry
        changed = True
    if changed and cache_path is not None:
        try:
            cache_path.parent.mkdir(parents=True, exist_ok=True)
            write_json_atomic(cache_path, cache)
        except OSError:
            pass  # a read-only cache directory only costs the next call its counting time
    return out


def _grow_rate(
    make: Callable[[int], tuple[Callable[[], object], float]],
    n: int,
    max_n: int,
    sync: Callable[[], None],
    window_s: float,
) -> float:
    """Best TFLOP/s of ``make(n)``'s operation (it returns the callable and its FLOPs), doubling ``n``
    while one run takes under CALIBRATION_GROW_S, the rate still rises and ``n`` stays within ``max_n``:
    a slow dtype stays small and quick, an accelerator grows until launches no longer hide its rate. The
    best of many short timings (for ``window_s`` at each size) is the rate when nothing interrupted."""
    best_rate = 0.0
    while True:
        fn, flop = make(n)
        fn()  # first run: library start-up and autotuning, never timed
        sync()
        best = float("inf")
        end = time.perf_counter() + window_s
        for i in range(2000):
            t0 = time.perf_counter()
            fn()
            sync()
            best = min(best, time.perf_counter() - t0)
            if i >= 1 and time.perf_counter() > end:
                break
        rate = flop / best / 1e12
        saturated = rate < best_rate * CALIBRATION_SATURATED
        best_rate = max(best_rate, rate)
        if best > CALIBRATION_GROW_S or saturated or n * 2 > max_n:
            return best_rate
        n *= 2


def _linear(dtype: torch.dtype, device: torch.device) -> Callable[[int], tuple[Callable[[], object], float]]:
    """Square ``F.linear`` products (the path a Linear layer takes, autocast included)."""

    def make(n: int) -> tuple[Callable[[], object], float]:
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype)
        return (lambda: F.linear(a, b)), 2.0 * n**3

    return make


def _conv(dtype: torch.dtype, device: torch.device) -> Callable[[int], tuple[Callable[[], object], float]]:
    """A 3x3 convolution's forward and backward (input and weight gradients) at ``channels`` in and out:
    training runs both, and on some devices the backward is the slow half."""

    def make(channels: int) -> tuple[Callable[[], object], float]:
        batch = max(1, channels // 16)
        x = torch.randn(batch, channels, CONV_HW, CONV_HW, device=device).to(dtype).requires_grad_()
        w = (torch.randn(channels, channels, 3, 3, device=device) * 0.05).to(dtype).requires_grad_()

        def step() -> object:
            out = F.conv2d(x, w, padding=1)
            return torch.autograd.grad(out, (x, w), torch.ones_like(out))

        return step, 3 * 2.0 * batch * channels * channels * 9 * CONV_HW * CONV_HW

    return make


def calibrate(accelerator: str, dtypes: list[str], host: bool, conv: bool = True) -> dict[str, Any]:
    """Linear-layer and convolution TFLOP/s per dtype on device 0, and the cost of one tiny op (what
    small cells are made of). ``conv=False`` leaves the convolution rates out: no cell to estimate has a
    convolution, and timing one is most of the probe's time on a CPU (docs/measurements.md).

    ``host``: the accelerator's devices are the host's cores (the inventory says so: CPU ranks share the
    host). Then the rates are timed on ONE thread and left per thread, and ``rank_threads[n - 1]`` says
    how many threads' worth each rank of an n-rank cell gets under the thread policy in force
    (``hpubench.measure.conditions.plan_threads``: cores-1 gives a one-rank cell 1 thread of 2 cores),
    never more than its share of the cores. Why one thread: with two threads a busy neighbour collapses
    every timing 40-100x (issue 11), while one thread's best timing still shows the quiet machine's rate.
    A loaded machine then shows up as cells slower than estimated, which a budgeted run corrects with
    measured times.
    """
    from hpubench import accelerators  # deferred: imports the device framework, only when asked

    acc = accelerators.get(accelerator)(0)
    acc.setup()
    device = acc.torch_device()
    threads = torch.get_num_threads()
    if host:
        torch.set_num_threads(1)
    where = "host" if host else "device"
    rates: dict[str, float] = {}
    conv_rates: dict[str, float] = {}
    for name in dtypes:
        dtype = DTYPES.get(name)
        if dtype is None:
            continue
        try:
            rates[name] = _grow_rate(
                _linear(dtype, device), 256, LINEAR_MAX_N[where], acc.synchronize, CALIBRATION_S[where]
            )
        except Exception:  # a dtype the device cannot multiply: no calibrated rate for it
            continue
        if conv:
            with contextlib.suppress(Exception):  # no convolution at this dtype here: linear rate only
                conv_rates[name] = _grow_rate(
                    _conv(dtype, device), 32, CONV_MAX_CHANNELS[where], acc.synchronize, CALIBRATION_S[where]
                )
    x = torch.ones(8, device=device)
    best = float("inf")
    for _ in range(20):
        t0 = time.perf_counter()
        for _ in range(100):
            x = x + 1
        acc.synchronize()
        best = min(best, (time.perf_counter() - t0) / 100)
    if host:
        torch.set_num_threads(threads)
    return {
        "tflops": rates,
        "conv_tflops": conv_rates,
        "per_op_s": best,
        "rank_threads": _rank_threads(threads) if host else [],
    }


def _rank_threads(default_threads: int) -> list[float]:
    """Threads' worth of compute each rank of an n-rank host cell gets (index n - 1), under the policy in
    this environment (the cells' own): its planned threads, torch's default where the plan leaves it,
    at most its share of the CPUs."""
    cpus = affinity()
    policy = thread_policy(os.environ)
    out = []
    for n in range(1, len(cpus) + 1):
        planned = plan_threads(policy, cpus, n, 0, os.environ).threads
        out.append(min(float(planned if planned is not None else default_threads), len(cpus) / n))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hpubench.run.probe")
    parser.add_argument("--out", required=True)
    parser.add_argument(
        "--cell", action="append", default=[], help="workload|size|batch[|options] (batch 0: default)"
    )
    parser.add_argument("--cache")
    parser.add_argument(
        "--calibrate", action="append", default=[], help="accelerator to calibrate; NAME:host for host cores"
    )
    parser.add_argument("--dtype", action="append", default=[])
    parser.add_argument("--workloads-from", action="append", default=[])
    args = parser.parse_args(argv)
    try:
        # Bounded: a file whose import hangs is given up on (hpubench.plugins.files).
        pluginload.load_files(args.workloads_from, workloads.load_file, os.environ, PROBE_USAGE_PREFIX)
        workloads.load_entry_points()
    except UsageError as exc:
        print(f"{PROBE_USAGE_PREFIX}{exc}", file=sys.stderr)
        return 2
    wanted = []
    for spec in args.cell:
        name, size, batch, options = parse_flops_key(spec)
        if name not in workloads.names():
            continue
        b = batch or workloads.get(name).sizes[size].batch_size
        wanted.append((name, size, b, options))
    try:
        result: dict[str, Any] = {"facts": facts(wanted, Path(args.cache) if args.cache else None)}
    except OptionValueError as exc:
        print(f"{PROBE_USAGE_PREFIX}{exc}", file=sys.stderr)
        return 2
    result["calibration"] = {}
    # a convolution's rate matters only to a cell with convolutions (plan.cost reads it for those alone)
    conv = any(f.get("conv_flops", 0) > 0 or "error" in f for f in result["facts"].values())
    # Rates are timed under the heap policy the cells get (hpubench.run.worker applies it the same way):
    # the timed products allocate their outputs every call, as a training step does.
    heap = apply_heap_plan(plan_heap(heap_policy(os.environ), os.environ)) if args.calibrate else {}
    for spec in args.calibrate:
        acc, _, host = spec.partition(":")
        result["calibration"][acc] = {**calibrate(acc, args.dtype, host == "host", conv), "heap": heap}
    write_json_atomic(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
