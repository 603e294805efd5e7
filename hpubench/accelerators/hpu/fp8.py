"""fp8 training on Gaudi: transformer_engine's ``Linear`` swapped in for aligned ``nn.Linear`` layers.

``HPUAccelerator.prepare_fp8`` calls here; kept apart from ``hpu.py`` so the hook surface stays one short
class. The refusal by generation (C9) is ``hpu_rules.precision_refusal``, shared with the planner.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hpubench.accelerators.hpu.rules import precision_refusal
from hpubench.errors import CellSkipped

if TYPE_CHECKING:
    import torch

# The FP8 GEMMs want both matrix dimensions aligned to 16; other layers stay in higher precision.
FP8_ALIGNMENT = 16


def prepare_fp8(model: torch.nn.Module, device_name: str) -> tuple[torch.nn.Module, Callable[[], Any]]:
    """Swap aligned ``nn.Linear`` layers for transformer_engine's, the only fp8 training path on HPU.

    Only modules whose type is exactly ``nn.Linear`` are swapped: subclasses (e.g. the output
    projection inside ``nn.MultiheadAttention``) are used through their weights by their parents, so a
    replacement there would silently not run in fp8.
    """
    refused = precision_refusal("fp8", device_name)
    if refused is not None:
        raise CellSkipped(refused)
    try:
        # deferred: habana_frameworks is optional, and importing the bridge fixes the mode (hpu_device)
        import habana_frameworks.torch.hpex.experimental.transformer_engine as te
    except ImportError as exc:
        raise CellSkipped(
            f"fp8 needs habana_frameworks' transformer_engine, which is missing ({exc})"
        ) from None

    replaced = swap_linears(model, te.Linear)
    if replaced == 0:
        raise CellSkipped(
            f"no nn.Linear layer with in/out features that are multiples of {FP8_ALIGNMENT}: "
            "nothing would run in fp8"
        )
    recipe_mod = getattr(te, "recipe", None)
    delayed_scaling = getattr(recipe_mod, "DelayedScaling", None)
    fp8_recipe = delayed_scaling() if delayed_scaling is not None else None

    def fp8_context() -> Any:
        return te.fp8_autocast(enabled=True, fp8_recipe=fp8_recipe)

    return model, fp8_context


def swap_linears(module: torch.nn.Module, linear_cls: type[torch.nn.Module]) -> int:
    """Replace aligned plain ``nn.Linear`` children (recursively) with ``linear_cls``; returns the count."""
    import torch  # deferred: accelerator modules stay torch-free at import (base.py)

    count = 0
    for child_name, child in list(module.named_children()):
        if (
            type(child) is torch.nn.Linear
            and child.in_features % FP8_ALIGNMENT == 0
            and child.out_features % FP8_ALIGNMENT == 0
        ):
            new = linear_cls(child.in_features, child.out_features, bias=child.bias is not None)
            new = new.to(device=child.weight.device, dtype=child.weight.dtype)
            with torch.no_grad():
                new.weight.copy_(child.weight)
                if child.bias is not None:
                    new.bias.copy_(child.bias)
            new.train(child.training)
            setattr(module, child_name, new)
            count += 1
        else:
            count += swap_linears(child, linear_cls)
    return count
