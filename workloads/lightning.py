"""``lightning:FILE.py:CLASS``: a user's ``LightningModule`` benchmarked by hpubench's own core.

The module class is imported from the file and built with no arguments. Its ``training_step`` becomes the
step's forward (``LightningStep``), so the core's precision, ``torch.compile``, graph capture and DDP/FSDP
wrap it exactly as they wrap a built-in model; its ``configure_optimizers`` gives the one optimizer (a
learning-rate scheduler it returns is not stepped: a benchmark measures steps, not a schedule). Batches:
the first ones of its ``train_dataloader()`` (else its ``example_input_array``), drawn once, with torch's
global generator seeded from the cell's seed so a reference retrains on the same data, and moved once to
the device. ``training_step`` gets ``batch_idx`` 0 every step: a Python int that changes would recompile a
compiled step each time.

The workload is named ``lightning:CLASS``; its sizes ``tiny`` and ``standard`` are both the module as its
constructor builds it (a matrix picks one), at the batch its dataloader gives. Registering it reads one
batch, with the module built on the meta device where its constructor allows (no weights allocated).
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn
from torch.utils._pytree import TreeSpec, tree_flatten, tree_unflatten

from hpubench.errors import UsageError
from hpubench.plan.modeldirs import LIGHTNING_PREFIX, split_lightning_source
from workloads.base import Batch, SizeSpec, Workload

INSTALL = "pip install 'hpubench[lightning]' (or pip install pytorch-lightning)"
MODULE_PREFIX = "hpubench_lightning_file_"


def as_loss(out: Any) -> torch.Tensor:
    """``training_step``'s result as the loss: a tensor, or a mapping's ``"loss"``; TypeError otherwise."""
    loss = out.get("loss") if isinstance(out, Mapping) else out
    if not isinstance(loss, torch.Tensor):
        raise TypeError(
            f"training_step returned {type(out).__name__}, not a loss tensor or a dict with 'loss'; "
            "hpubench's step needs the loss to call backward on"
        )
    return loss


class LightningStep(nn.Module):
    """The module's ``training_step`` as a forward over the batch's tensors (the core passes tensors)."""

    def __init__(self, module: nn.Module, spec: TreeSpec) -> None:
        super().__init__()
        self.module = module
        self.spec = spec

    def forward(self, *leaves: torch.Tensor) -> torch.Tensor:
        return as_loss(self.module.training_step(tree_unflatten(list(leaves), self.spec), 0))


def lightning_module(model: nn.Module) -> Any:
    """The user's module inside the model the core trains (under DDP's ``module``, compile's
    ``_orig_mod``)."""
    seen = model
    while not isinstance(seen, LightningStep):
        inner = getattr(seen, "module", None) or getattr(seen, "_orig_mod", None)
        if not isinstance(inner, nn.Module):
            raise TypeError(f"no LightningStep inside {type(model).__name__}")
        seen = inner
    return seen.module


def one_optimizer(configured: Any) -> torch.optim.Optimizer:
    """The optimizer ``configure_optimizers`` returned, in any of Lightning's forms; ValueError for
    several."""
    found = configured
    if isinstance(found, Mapping):
        found = found.get("optimizer")
    elif isinstance(found, (list, tuple)):
        first = found[0] if found else None
        optimizers = first if isinstance(first, (list, tuple)) else found  # ([opts], [schedulers])
        opts = [o.get("optimizer") if isinstance(o, Mapping) else o for o in optimizers]
        if len(opts) != 1:
            raise ValueError(
                f"configure_optimizers returned {len(opts)} optimizers; hpubench's step runs one "
                "(manual optimization is not benchmarked)"
            )
        found = opts[0]
    if not isinstance(found, torch.optim.Optimizer):
        raise ValueError(f"configure_optimizers returned {type(configured).__name__}, not an optimizer")
    return found


@dataclass(frozen=True)
class FirstBatch:
    """A module's first batch, with the batch source it came from and the rest of that pass over it, so a
    reader continues the pass instead of starting the source again (a loader may start worker processes or
    open files on each pass, and a shuffling one draws a new order from torch's generator)."""

    from_loader: bool  # from train_dataloader(), else example_input_array
    batch: Any
    source: Iterable[Any]
    rest: Iterator[Any]


class LightningWorkload(Workload):
    """One LightningModule class; ``class_for`` derives a subclass per class and file."""

    description = "a LightningModule: its training_step, configure_optimizers and train_dataloader"
    module_class: ClassVar[type[nn.Module]]
    source: ClassVar[str]  # lightning:/abs/file.py:CLASS, what every process loads
    spec: ClassVar[TreeSpec]
    first_batch: ClassVar[tuple[torch.Tensor, ...]]  # on the host, for the meta device's counts
    from_loader: ClassVar[bool] = True

    def __init__(self) -> None:
        self._batches: Iterator[Any] | None = None
        self._drawing: torch.Generator | None = None  # the draw in progress: a new generator starts over

    def build_model(self, size: str) -> nn.Module:
        return LightningStep(self.module_class(), self.spec)

    def make_optimizer(self, model: nn.Module, capturable: bool) -> torch.optim.Optimizer | None:
        return one_optimizer(lightning_module(model).configure_optimizers())

    def make_batch(
        self, size: str, batch_size: int, device: torch.device, generator: torch.Generator | None
    ) -> Batch:
        own = self.sizes["tiny"].batch_size
        if batch_size != own:
            raise ValueError(
                f"{self.name}'s train_dataloader gives batches of {own}; drop --batch-size (a "
                "LightningModule's batch is its dataloader's)"
            )
        if generator is None or device.type == "meta":
            return tuple(t.to(device) for t in self.first_batch)
        if self._batches is None or self._drawing is not generator:
            torch.manual_seed(generator.initial_seed())  # the module's own shuffling follows the seed
            self._batches = _cycle(_read_first(self.module_class))
            self._drawing = generator
        leaves, _ = tree_flatten(next(self._batches))
        return tuple(t.to(device) for t in leaves)

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        return model(*batch)

    def fingerprint(self) -> bytes:
        with open(self.source.split(":", 1)[1].rsplit(":", 1)[0], "rb") as f:
            return hashlib.sha1(f.read()).digest()


def _cycle(first: FirstBatch) -> Iterator[Any]:
    """The source's batches in its order, pass after pass, starting with the pass that gave ``first``."""
    yield first.batch
    yield from first.rest
    while True:
        empty = True
        for batch in first.source:
            empty = False
            yield batch
        if empty:
            raise ValueError("the module's train_dataloader gave no batch")


def load(source: str) -> type[LightningWorkload]:
    """The workload class of ``lightning:/abs/file.py:CLASS``; UsageError (one line, the fix) where the file
    cannot be imported, names no LightningModule of that name, or the module has no batch source."""
    path, class_name = split_lightning_source(source)
    where = f"--workload {LIGHTNING_PREFIX}{path}:{class_name}"
    module_class = _import_class(path, class_name, where)
    with torch.device("cpu"):
        first = _read_first(module_class, where)
    leaves, spec = tree_flatten(first.batch)
    odd = [type(v).__name__ for v in leaves if not isinstance(v, torch.Tensor)]
    if odd or not leaves:
        raise UsageError(
            f"{where}: its batches hold {', '.join(odd) or 'no tensor'}; hpubench moves batches of tensors "
            "only: return tensors (in tuples, lists or dicts) from train_dataloader"
        )
    size = next((int(t.shape[0]) for t in leaves if t.dim() > 0), 1)
    described = f"{class_name} from {os.path.basename(path)}, as its constructor builds it"
    return type(
        "Lightning_" + class_name,
        (LightningWorkload,),
        {
            "name": LIGHTNING_PREFIX + class_name,
            "__module__": __name__,
            "module_class": module_class,
            "source": f"{LIGHTNING_PREFIX}{path}:{class_name}",
            "spec": spec,
            "first_batch": tuple(t.detach().to("cpu") for t in leaves),
            "from_loader": first.from_loader,
            "sizes": {"tiny": SizeSpec(size, described), "standard": SizeSpec(size, described)},
        },
    )


def _import_class(path: str, class_name: str, where: str) -> type[nn.Module]:
    if not os.path.isfile(path):
        raise UsageError(f"{where}: {path!r} does not exist; give the Python file that defines the module")
    mod_name = MODULE_PREFIX + hashlib.sha1(path.encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    assert spec is not None and spec.loader is not None  # a .py path always has a source loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:
        sys.modules.pop(mod_name, None)
        hint = f"; {INSTALL}" if "lightning" in str(exc) else ""
        raise UsageError(f"{where}: importing the file failed: {type(exc).__name__}: {exc}{hint}") from None
    except (Exception, SystemExit) as exc:
        sys.modules.pop(mod_name, None)
        raise UsageError(f"{where}: importing the file failed: {type(exc).__name__}: {_line(exc)}") from None
    cls = getattr(module, class_name, None)
    if not (inspect.isclass(cls) and issubclass(cls, nn.Module) and hasattr(cls, "training_step")):
        found = [n for n, v in vars(module).items() if inspect.isclass(v) and hasattr(v, "training_step")]
        known = f" (it defines {', '.join(sorted(found))})" if found else ""
        raise UsageError(f"{where}: the file has no LightningModule named {class_name!r}{known}")
    return cls


def _read_first(module_class: type[nn.Module], where: str = "") -> FirstBatch:
    """The first batch of an instance built on the meta device (no weights allocated) where its
    constructor allows and its batches do not come out on meta (a dataset made in ``__init__``), else of
    one built for real; with the rest of its pass, so a caller need not start the loader again."""
    try:
        with torch.device("meta"):
            module = module_class()
        first = _first_batch(module, where)
        if not any(isinstance(t, torch.Tensor) and t.is_meta for t in tree_flatten(first.batch)[0]):
            return first
    except Exception:  # a constructor that reads its weights, a loader that cannot run on meta
        pass
    return _first_batch(_build(module_class, where), where)


def _build(module_class: type[nn.Module], where: str) -> nn.Module:
    try:
        return module_class()
    except Exception as exc:
        raise UsageError(
            f"{where}: {module_class.__name__}() failed: {type(exc).__name__}: {_line(exc)}; hpubench builds "
            "the module with no arguments: give its parameters defaults"
        ) from None


def _first_batch(module: Any, where: str) -> FirstBatch:
    """The module's first batch and its source; UsageError where it has no batch source."""
    try:
        loader = module.train_dataloader()
        rest = iter(loader)
        return FirstBatch(True, next(rest), loader, rest)
    except Exception as exc:
        example = getattr(module, "example_input_array", None)
        if example is not None:
            return FirstBatch(False, example, [example], iter(()))
        raise UsageError(
            f"{where}: no batch: train_dataloader() failed ({type(exc).__name__}: {_line(exc)}) and "
            "example_input_array is not set; define one of them on the module"
        ) from None


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]
