"""The double's HPU tensors: tensors whose device is ``hpu:N`` and whose data is a host tensor inside.

With the device runtime loaded (``_runtime``), stock torch accepts the ``"hpu"`` device but has no kernel
for it. The double registers the few that ops reach on the HPU dispatch key itself: the allocations every
tensor creation on the device ends in (``empty.memory_format``, ``empty_strided``: ``torch.randn(...,
device="hpu")``, ``.to("hpu")``, ``model.to("hpu")``, ``torch.zeros_like`` ...), ``_copy_from`` and
``_fused_sdp_choice`` (asked below the Python key). They return an ``HPUTensor``: a wrapper subclass whose
``device`` is the HPU device and which holds a host tensor of the same shape. Every op on it goes through
``__torch_dispatch__``, which runs the op on the host tensors and wraps tensor results back onto the HPU
device, so autograd, optimizers, ``.item()`` and ``.cpu()`` work as on a device.

What the double refuses, as the bridge does for a tensor that lives on the card: an op that mixes an HPU
tensor with a host tensor (other than a 0-dim scalar, and the copies between them) raises torch's
"Expected all tensors to be on the same device" error, so harness code that forgets to move a batch, a
label or a buffer fails in tests as it would on a Gaudi.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.attention import SDPBackend
from torch.utils._python_dispatch import return_and_correct_aliasing
from torch.utils._pytree import tree_flatten, tree_map

from habana_frameworks import _double

MIXED_DEVICES = "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"
CPU = torch.device("cpu")
_COPY_OPS = frozenset({torch.ops.aten.copy_.default, torch.ops.aten._to_copy.default})
_LIB_ATTR = "_hpubench_fake_hpu_library"  # on the torch module: one registration per process


def _hpu_device(device: Any) -> torch.device:
    """One device per process (C15): the bridge's device guard refuses any index but 0."""
    dev = torch.device(device) if device is not None else torch.device("hpu")
    if dev.index not in (None, 0):
        raise RuntimeError(f"habana active device: {dev.index} != 0")
    return dev if dev.index is not None else torch.device("hpu", 0)


def on_device(host: torch.Tensor) -> torch.Tensor:
    """What the card can hold of ``host`` (C18, ``tensor_utils.cpp`` ``is_supported_type``): complex is
    refused, float16 on first-generation Gaudi too; float64 is stored as float32 (the tensor still says
    float64, its values carry float32's precision), and values beyond float32's range are refused."""
    dtype = host.dtype
    refuse_dtype(dtype)
    if dtype == torch.float64 and host.numel() and not _in_fake_mode():
        finite = host[torch.isfinite(host)]
        limit = torch.finfo(torch.float32).max
        if finite.numel() and finite.abs().max().item() > limit:
            lo, hi = finite.min().item(), finite.max().item()
            raise RuntimeError(
                f"Error when trying to cast Double to Float, Input values range [{lo}, {hi}] exceeds "
                f"Float range [{-limit}, {limit}]"
            )
        host.copy_(host.to(torch.float32))
    return host


def refuse_dtype(dtype: torch.dtype) -> None:
    """The dtypes the card refuses whatever the values (C18): complex, and float16 on first-generation
    Gaudi. An allocation is judged by this alone: its memory holds no values yet to range-check."""
    if dtype.is_complex:
        raise RuntimeError("Complex datatype is not supported on HPU device.")
    if dtype == torch.float16 and _double.is_first_generation():
        raise RuntimeError("float16/half is not supported on Gaudi.")


def _in_fake_mode() -> bool:
    return torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE) is not None


_AUTOCAST = torch.amp.autocast_mode.autocast
_fp16_autocast_depth = [0]  # open torch.autocast(device_type="hpu", dtype=float16) blocks


class _WatchedAutocast(_AUTOCAST):  # type: ignore[misc]
    """torch.autocast that notes an open fp16 HPU autocast: autocast's state is not readable inside
    ``__torch_dispatch__`` (the keys above Python are excluded there)."""

    def __enter__(self) -> Any:
        self._hpu_fp16 = self.device == "hpu" and self.fast_dtype == torch.float16 and self._enabled
        _fp16_autocast_depth[0] += int(self._hpu_fp16)
        return super().__enter__()

    def __exit__(self, *exc: Any) -> Any:
        _fp16_autocast_depth[0] -= int(getattr(self, "_hpu_fp16", False))
        return super().__exit__(*exc)


def _refuse_fp16_autocast_on_first_generation() -> None:
    """First-generation Gaudi refuses the first float16 tensor, which fp16 autocast makes at its first
    lowered op (the double lowers nothing, so it refuses at the first op under that autocast)."""
    if _fp16_autocast_depth[0] > 0 and _double.is_first_generation():
        raise RuntimeError("float16/half is not supported on Gaudi.")


def _collective(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A c10d op on HPU tensors: refused while an HPU graph capture is open (C17, lazy mode without lazy
    collectives), else run on the host tensors through the group's host twin (gloo)."""
    hccl = sys.modules.get("habana_frameworks.torch.distributed.hccl")
    core = sys.modules.get("habana_frameworks.torch.core")
    lazy = bool(getattr(core, "_LAZY", False))
    if _double.LAZY_GRAPHS.capturing and lazy and not getattr(hccl, "LAZY_COLLECTIVES", False):
        raise RuntimeError("collective nonSFG is not supported during hpu graph capturing")
    _double.record("hccl.collective", str(func))

    def swap(x: Any) -> Any:
        if isinstance(x, dist.ProcessGroup) and hccl is not None:
            return hccl.host_group(x)
        if isinstance(x, torch.ScriptObject) and hccl is not None and "ProcessGroup" in str(x._type()):
            return hccl.host_group(dist.ProcessGroup.unbox(x)).boxed()  # the group, as the op boxes it
        return _host_of(x)

    out = func(*tree_map(swap, args), **tree_map(swap, kwargs))
    # The op's tensor results alias its inputs (the host tensors inside the HPU tensors): hand back the
    # inputs' HPU wrappers, whose contents the collective wrote.
    hosts = {id(_host_of(x)): x for x in tree_flatten((args, kwargs))[0] if is_hpu_tensor(x)}
    return tree_map(lambda t: hosts.get(id(t), t) if isinstance(t, torch.Tensor) else t, out)


def is_hpu_tensor(x: Any) -> bool:
    # The class of an earlier import of the double (tests re-import it) counts too.
    return isinstance(x, torch.Tensor) and getattr(type(x), "hpubench_fake_hpu", False)


class HPUTensor(torch.Tensor):
    """A tensor on ``hpu:N`` (``.device``) backed by a host tensor (``.host``, the double's own API)."""

    hpubench_fake_hpu = True
    host: torch.Tensor

    @staticmethod
    def __new__(cls, host: torch.Tensor, device: torch.device) -> HPUTensor:
        return torch.Tensor._make_wrapper_subclass(  # type: ignore[attr-defined,no-any-return]
            cls,
            host.size(),
            strides=host.stride(),
            storage_offset=host.storage_offset(),
            dtype=host.dtype,
            layout=host.layout,
            device=device,
            requires_grad=False,
        )

    def __init__(self, host: torch.Tensor, device: torch.device) -> None:
        self.host = host

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        text = repr(self.host)
        suffix = f", device='{self.device}'"
        if self.requires_grad:
            suffix += ", requires_grad=True"
        return text[:-1] + suffix + ")" if text.endswith(")") else text

    def __tensor_flatten__(self) -> tuple[list[str], torch.device]:
        return ["host"], self.device

    @staticmethod
    def __tensor_unflatten__(
        inner: dict[str, torch.Tensor], device: torch.device, outer_size: Any, outer_stride: Any
    ) -> HPUTensor:
        return HPUTensor(inner["host"], device)

    @classmethod
    def __torch_dispatch__(
        cls, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        flat, _ = tree_flatten((args, kwargs))
        hpu_devices = {x.device for x in flat if isinstance(x, torch.Tensor) and x.device.type == "hpu"}
        target = kwargs.get("device")
        if target is not None:
            target = torch.device(target)
            if target.type not in ("hpu", "cpu"):
                raise RuntimeError(f"the habana_frameworks test double cannot move an HPU tensor to {target}")
            kwargs = {**kwargs, "device": CPU}
        if func not in _COPY_OPS:
            _refuse_mixed(func, flat, hpu_devices)
        _refuse_fp16_autocast_on_first_generation()
        if func.namespace == "c10d":
            return _collective(func, args, kwargs)
        out = func(*_to_host(args), **_to_host(kwargs))
        if func is torch.ops.aten.copy_.default:
            if is_hpu_tensor(args[0]):
                on_device(args[0].host)
            return args[0]  # copies in place into the destination, whichever side it is on
        if target is not None and target.type == "cpu":
            return out
        device = _hpu_device(target) if target is not None else min(hpu_devices, key=str)
        wrapped = tree_map(lambda t: HPUTensor(on_device(t), device) if _is_host(t) else t, out)
        return return_and_correct_aliasing(func, args, kwargs, wrapped)


def _is_host(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and not is_hpu_tensor(x) and x.device.type != "hpu"


def _host_of(x: Any) -> Any:
    if is_hpu_tensor(x):
        return x.host
    if isinstance(x, torch.Tensor) and x.device.type == "hpu":
        # Only under torch.compile's fake tensors: a tensor made on "hpu" while tracing never reaches the
        # HPU kernels, so it is a plain fake tensor with the HPU device; its host twin is a fake as well.
        return x.to(CPU)
    return x


def _to_host(tree: Any) -> Any:
    return tree_map(_host_of, tree)


def _refuse_mixed(func: Any, flat: list[Any], hpu_devices: set[torch.device]) -> None:
    """torch's rule for a device tensor: other tensor operands live on the same device (0-dim host
    scalars excepted); the double enforces it on the host tensors it would otherwise silently accept."""
    if len(hpu_devices) > 1:
        first, second = sorted(hpu_devices, key=str)[:2]
        raise RuntimeError(MIXED_DEVICES.format(first, second) + f" (in {func})")
    if any(_is_host(x) and x.dim() > 0 for x in flat):
        (device,) = hpu_devices
        raise RuntimeError(MIXED_DEVICES.format(device, "cpu") + f" (in {func})")


def _empty(
    size: Any,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: Any = None,
    memory_format: Any = None,
) -> HPUTensor:
    host = torch.empty(size, dtype=dtype, memory_format=memory_format or torch.contiguous_format)
    refuse_dtype(host.dtype)  # uninitialised: whatever bits it holds are no values to range-check
    return HPUTensor(host, _hpu_device(device))


def _empty_strided(
    size: Any, stride: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None
) -> HPUTensor:
    host = torch.empty_strided(size, stride, dtype=dtype)
    refuse_dtype(host.dtype)  # uninitialised, as in _empty
    return HPUTensor(host, _hpu_device(device))


def _copy_from(src: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    """Copies that reach the HPU kernel directly (torch's own constructors, e.g. ``torch.tensor(data,
    device="hpu")``, run with the Python dispatch key off)."""
    (dst.host if is_hpu_tensor(dst) else dst).copy_(src.host if is_hpu_tensor(src) else src)
    if is_hpu_tensor(dst):
        on_device(dst.host)
    return dst


def _fused_sdp_choice(*args: Any, **kwargs: Any) -> int:
    """Attention on HPU asks its backend which fused kernel to use: the double has none, so the math
    path (plain ops, each through ``__torch_dispatch__``)."""
    return int(SDPBackend.MATH.value)


def install() -> None:
    """Register the HPU kernels; a re-imported double replaces its predecessor's registration."""
    torch.autocast = _WatchedAutocast  # type: ignore[misc]
    previous = getattr(torch, _LIB_ATTR, None)
    for registration in previous or ():
        registration._destroy()
    lib = torch.library.Library("aten", "IMPL", "HPU")
    lib.impl("empty.memory_format", _empty)
    lib.impl("empty_strided", _empty_strided)
    lib.impl("_copy_from", _copy_from)
    lib.impl("_fused_sdp_choice", _fused_sdp_choice)
    # Stock torch has no autocast kernels for HPU (the bridge brings its own): every op falls through to
    # the HPU kernels in the tensors' own precision (what "What it cannot do" in tests/fakes says).
    autocast = torch.library.Library("_", "IMPL", "AutocastHPU")
    autocast.fallback(torch.library.fallthrough_kernel)
    setattr(torch, _LIB_ATTR, (lib, autocast))
