"""C2: ``import torch`` loads the bridge through torch's ``torch.backends`` entry point, as the bridge's
``autoload/__init__.py`` decides: ``PT_HPU_AUTOLOAD=1`` loads, ``0`` does not, and unset it loads only
outside lazy mode (``PT_HPU_LAZY_MODE`` unset or "1", the 1.19 default: no autoload). Each case is a fresh
interpreter with the double on its path that only imports torch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FAKES = Path(__file__).resolve().parents[1] / "fakes"

PROBE = (
    "import json, sys, torch; "
    "print(json.dumps({'bridge': 'habana_frameworks.torch' in sys.modules, "
    "'core': 'habana_frameworks.torch.core' in sys.modules, "
    "'torch_hpu': getattr(getattr(torch, 'hpu', None), '__name__', None)}))"
)


def _import_torch(**env_extra: str) -> dict[str, object]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PT_HPU", "HPUBENCH_FAKE", "TORCH_DEVICE_BACKEND"))
    }
    env.update(PYTHONPATH=os.pathsep.join([str(FAKES), env.get("PYTHONPATH", "")]), **env_extra)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "env", [{"PT_HPU_AUTOLOAD": "1"}, {"PT_HPU_LAZY_MODE": "0"}, {"PT_HPU_LAZY_MODE": "2"}]
)
def test_import_torch_alone_loads_the_bridge(env: dict[str, str]) -> None:
    loaded = _import_torch(**env)
    assert loaded == {"bridge": True, "core": True, "torch_hpu": "habana_frameworks.torch.hpu"}


@pytest.mark.parametrize("env", [{}, {"PT_HPU_LAZY_MODE": "1"}, {"PT_HPU_AUTOLOAD": "yes"}])
def test_in_lazy_mode_an_unset_autoload_leaves_the_bridge_unloaded(env: dict[str, str]) -> None:
    """ "If PT_HPU_AUTOLOAD isn't set, disable autoload for lazy mode" (bridge autoload/__init__.py)."""
    assert _import_torch(**env) == {"bridge": False, "core": False, "torch_hpu": None}


def test_pt_hpu_autoload_0_leaves_the_bridge_unloaded() -> None:
    loaded = _import_torch(PT_HPU_AUTOLOAD="0")
    assert loaded == {"bridge": False, "core": False, "torch_hpu": None}


def test_torch_device_backend_autoload_0_switches_off_every_backend_entry_point() -> None:
    loaded = _import_torch(TORCH_DEVICE_BACKEND_AUTOLOAD="0", PT_HPU_AUTOLOAD="1")
    assert loaded["core"] is False


def test_the_autoloaded_bridge_reads_the_lazy_mode_at_import_torch() -> None:
    """The mode is fixed by ``import torch`` now, not by the first explicit bridge import."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PT_HPU", "HPUBENCH_FAKE"))}
    env.update(PYTHONPATH=os.pathsep.join([str(FAKES), env.get("PYTHONPATH", "")]), PT_HPU_LAZY_MODE="0")
    code = (
        "import os, torch; os.environ['PT_HPU_LAZY_MODE'] = '1'; "
        "import habana_frameworks.torch.core as c; print(c.is_lazy())"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "False"
