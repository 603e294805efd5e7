"""Double of the bridge's ``habana_frameworks.torch.hpu.graphs`` (HPU graphs; lazy mode only, C6).

What the double keeps of the bridge's ``graphs.py`` (contract C17, docs/hpu-contract.md):
- A cached graph's outputs are the graph's own static tensors: every replay writes into them, so outputs
  kept from an earlier step read the latest step's values (``wrap_in_hpu_graph`` returns the same objects;
  ``ModuleCacher`` returns tensors sharing their storage). The double runs the original forward and copies
  its results into the static outputs, gradients flowing as before.
- The cache key is every argument of the forward (defaults filled in), each with whether autocast is on:
  a tensor by shape and layout, any other value by value. A new key captures (a graph compilation).
- ``ModuleCacher`` refuses at wrap time a forward with ``*args`` or positional-only parameters
  ("Unsupported argument type : VAR_POSITIONAL"), so a ``DistributedDataParallel`` model cannot be
  wrapped; a DataParallel/DDP model meets "Use DataParallel/DistributedDataParallel only after wrapping
  with ModuleCacher" at its first cached forward. It caches only when training, with grad, in lazy mode
  (``PT_HPU_LAZY_MODE`` read at wrap time).
- A capture stays open until the next ``mark_step``: an hccl collective then fails ("collective nonSFG is
  not supported during hpu graph capturing") unless ``PT_HPU_ENABLE_LAZY_COLLECTIVES`` is on (``_tensor``).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import os
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from habana_frameworks import _double
from habana_frameworks._double import record

__all__ = ["HPUGraph", "ModuleCacher", "graph", "make_graphed_callables", "wrap_in_hpu_graph"]

UNSUPPORTED_KINDS = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL)
DATA_PARALLEL = "Use DataParallel/DistributedDataParallel only after wrapping with ModuleCacher"


def _autocast_on() -> bool:
    return torch.is_autocast_enabled("hpu")


def input_hash(obj: Any) -> int:
    """The bridge's ``input_hash``: structure, tensor shape and layout, other values, autocast on/off."""
    if isinstance(obj, dict):
        return input_hash(tuple(obj.items()))
    if isinstance(obj, list) or (isinstance(obj, tuple) and not isinstance(obj, torch.Size)):
        return hash((tuple(input_hash(el) for el in obj), _autocast_on()))
    if isinstance(obj, torch.Tensor):
        return hash((tuple(obj.shape), tuple(obj.stride()), obj.storage_offset(), _autocast_on()))
    return hash((obj, _autocast_on()))


class _IntoStatic(torch.autograd.Function):
    """Writes a fresh output into the graph's static tensor and returns a view of that tensor: the value
    a replay returns lives in the cache, while gradients still reach what computed it."""

    @staticmethod
    def forward(ctx: Any, fresh: torch.Tensor, static: torch.Tensor) -> torch.Tensor:
        static.copy_(fresh)
        return static.view_as(static)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad, None


def _into_static(out: Any, statics: list[Any] | None) -> tuple[Any, list[Any]]:
    leaves, spec = tree_flatten(out)
    if statics is None:
        statics = [leaf.detach().clone() if isinstance(leaf, torch.Tensor) else None for leaf in leaves]
    merged = [
        _IntoStatic.apply(leaf, static) if isinstance(leaf, torch.Tensor) and static is not None else leaf
        for leaf, static in zip(leaves, statics, strict=True)
    ]
    return tree_unflatten(merged, spec), statics


def _forward_params(forward: Callable[..., Any]) -> list[tuple[str, Any]]:
    """The forward's parameters with defaults, as ``GraphModel.process_function_signature`` reads them."""
    params: list[tuple[str, Any]] = []
    for name, param in inspect.signature(forward).parameters.items():
        assert param.kind not in UNSUPPORTED_KINDS, f"Unsupported argument type : {param.kind}"
        if param.kind == inspect.Parameter.VAR_KEYWORD:
            print("[WARNING] Variable keyword arguments will not be supported.")
            continue
        params.append((name, param.default))
    return params


def _full_args(
    params: list[tuple[str, Any]], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    full = dict(params)
    full.update(zip([name for name, _ in params], args, strict=False))
    full.update(kwargs)
    return full


class ModuleCacher:
    """Training-graph cache (what optimum-habana's ``use_hpu_graphs_for_training`` uses)."""

    def __init__(self, max_graphs: int = 10) -> None:
        record("hpu.ModuleCacher", f"max_graphs={max_graphs}")
        self.max_graphs = max_graphs

    def __call__(
        self,
        model: Any,
        use_lfu: bool = False,
        inplace: bool = True,
        allow_unused_input: bool = False,
        asynchronous: bool = False,
        have_grad_accumulation: bool = False,
        log_frequency: int = 100,
        verbose: bool = False,
        disable_tensor_cache: bool = False,
        dry_run: bool = False,
    ) -> Any:
        record("hpu.ModuleCacher.__call__", f"inplace={inplace}")
        target = model if inplace else copy.deepcopy(model)
        checked = copy.copy(target)
        original = target.forward
        params = _forward_params(original)
        use_lazy_mode = os.environ.get("PT_HPU_LAZY_MODE", "1") == "1"
        cache: dict[int, list[Any]] = {}
        max_graphs = self.max_graphs

        @functools.wraps(original)
        def forward(*args: Any, **kwargs: Any) -> Any:
            full = _full_args(params, args, kwargs)
            if not (target.training and torch.is_grad_enabled() and use_lazy_mode):
                record("hpu.cached_forward", "bypass")
                return original(**full)
            key = input_hash(full)
            if key in cache:
                record("hpu.cached_forward", "replay")
                return _into_static(original(**full), cache[key])[0]
            if len(cache) >= max_graphs:
                record("hpu.cached_forward", "bypass (max_graphs reached)")
                return original(**full)
            assert not isinstance(
                checked, torch.nn.parallel.DataParallel | torch.nn.parallel.DistributedDataParallel
            ), DATA_PARALLEL
            record("hpu.cached_forward", "capture")
            _double.emit_graph_compilation(f"module_cacher_{len(cache) + 1}")
            _double.LAZY_GRAPHS.capturing = True
            out, cache[key] = _into_static(original(**full), None)
            return out

        target.forward = forward
        return target


def wrap_in_hpu_graph(
    module: Any,
    asynchronous: bool = False,
    disable_tensor_cache: bool = False,
    dry_run: bool = False,
    max_graphs: int | None = None,
) -> Any:
    """Returns the same module with ``forward`` replaced; a replay returns the same output objects."""
    record("hpu.wrap_in_hpu_graph", f"asynchronous={asynchronous} max_graphs={max_graphs}")
    original = module.forward
    cache: dict[int, Any] = {}

    @functools.wraps(original)
    def forward(*args: Any, **kwargs: Any) -> Any:
        key = input_hash((args, kwargs))
        if key not in cache and (max_graphs is None or len(cache) < max_graphs):
            record("hpu.graph_forward", "capture")
            _double.emit_graph_compilation(f"hpu_graph_{len(cache) + 1}")
            cache[key] = original(*args, **kwargs)
            return cache[key]
        if key not in cache:
            return original(*args, **kwargs)
        record("hpu.graph_forward", "replay")
        fresh = original(*args, **kwargs)
        with torch.no_grad():
            for static, value in zip(tree_flatten(cache[key])[0], tree_flatten(fresh)[0], strict=True):
                if isinstance(static, torch.Tensor):
                    static.copy_(value)
        return cache[key]

    module.forward = forward
    return module


def make_graphed_callables(
    callables: Any, sample_args: Any, num_warmup_iters: int = 3, allow_unused_input: bool = False
) -> Any:
    """Returns the callables unchanged (same container shape): the double runs them directly."""
    record("hpu.make_graphed_callables", f"num_warmup_iters={num_warmup_iters}")
    return callables


class HPUGraph:
    """Capture bookkeeping only: the double cannot replay recorded device work, so ``replay`` refuses
    rather than silently returning stale outputs."""

    def __init__(self) -> None:
        record("hpu.HPUGraph")
        self.captured = False
        self._capturing = False

    def capture_begin(self) -> None:
        record("hpu.HPUGraph.capture_begin")
        self._capturing = True

    def capture_end(self) -> None:
        record("hpu.HPUGraph.capture_end")
        self._capturing = False
        self.captured = True

    def replay(self) -> None:
        record("hpu.HPUGraph.replay")
        raise NotImplementedError(
            "the habana_frameworks test double cannot replay a captured HPUGraph (no device work is "
            "recorded); use ModuleCacher or wrap_in_hpu_graph, which the double runs eagerly"
        )


@contextlib.contextmanager
def graph(hpu_graph: HPUGraph, *args: Any, **kwargs: Any) -> Iterator[HPUGraph]:
    record("hpu.graph")
    hpu_graph.capture_begin()
    try:
        yield hpu_graph
    finally:
        hpu_graph.capture_end()
