"""HPU graphs and the bridge's graph compilations: ``ModuleCacher`` step wrapping and its counter.

``HPUAccelerator.graphed_step`` and ``compile_counters`` call here; kept apart from ``hpu.py`` so the hook
surface stays one short class. ``habana_frameworks`` is imported only when called (see ``hpu_device``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpubench.accelerators.hpu.device import hpu_api
from hpubench.errors import CellSkipped
from hpubench.measure.compilecount import CompileCounter, Unavailable

if TYPE_CHECKING:
    import torch

# optimum-habana's setting for use_hpu_graphs_for_training; enough for one input shape per phase.
MODULE_CACHER_MAX_GRAPHS = 10


class BridgeGraphCompilations(CompileCounter):
    """The bridge's own count of graph compilations: ``metric_global("graph_compilation")`` TotalNumber.

    Contract C7: a lazy-mode input shape change compiles a new graph and increments it; HPU graph
    captures and ``hpu_backend`` compiles go through the same graph compiler. The global metric counts
    from its creation (when the metrics module is imported), which ``__init__`` does, before the warm-up.
    """

    name = 'HPU bridge metric_global("graph_compilation") TotalNumber'

    def __init__(self) -> None:
        # deferred: habana_frameworks is optional, and importing the bridge fixes the mode (hpu_device)
        from habana_frameworks.torch.hpu.metrics import metric_global

        metric = metric_global("graph_compilation")
        if metric is None:
            raise RuntimeError('the bridge has no "graph_compilation" metric')
        self._metric = metric

    def snapshot(self) -> dict[str, int]:
        return {"hpu_graph_compilations": int(dict(self._metric.stats())["TotalNumber"])}


def graph_compilations() -> CompileCounter:
    """The bridge's graph compilations; a bridge without the metrics API gives an ``Unavailable`` that
    says why."""
    try:
        return BridgeGraphCompilations()
    except (ImportError, RuntimeError) as exc:
        return Unavailable(BridgeGraphCompilations.name, f"not counted: {type(exc).__name__}: {exc}")


def module_cacher(model: torch.nn.Module) -> torch.nn.Module:
    """HPU graphs the way optimum-habana trains with them: ``ModuleCacher`` wraps the model in place.

    It must see the model itself, before any ``DistributedDataParallel`` wrapping (C17): the bridge
    refuses a forward that takes ``*args`` (DDP's) at wrap time and a DDP model at its first capture.
    Capture happens on the first training forward, i.e. during the worker's warm-up steps, so capture
    time never leaks into the timed steps; the cacher keys graphs on the shapes it sees.
    """
    cacher_cls = getattr(hpu_api(), "ModuleCacher", None)
    if cacher_cls is None:
        raise CellSkipped(
            "HPU graphs are not available: habana_frameworks.torch.hpu has no ModuleCacher "
            "(the graph APIs exist only in lazy mode, PT_HPU_LAZY_MODE=1)"
        )
    wrapped = cacher_cls(max_graphs=MODULE_CACHER_MAX_GRAPHS)(model=model, inplace=True)
    return wrapped if wrapped is not None else model
