"""C2: from bridge 1.19, ``import torch`` loads the bridge (torch's ``torch.backends`` entry points)
unless ``PT_HPU_AUTOLOAD=0``. The double registers its entry point in ``tests/fakes``; each case is a
fresh interpreter that only imports torch.
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


@pytest.mark.parametrize("autoload", [None, "1"])
def test_import_torch_alone_loads_the_bridge(autoload: str | None) -> None:
    loaded = _import_torch(**({} if autoload is None else {"PT_HPU_AUTOLOAD": autoload}))
    assert loaded == {"bridge": True, "core": True, "torch_hpu": "habana_frameworks.torch.hpu"}


def test_pt_hpu_autoload_0_leaves_the_bridge_unloaded() -> None:
    loaded = _import_torch(PT_HPU_AUTOLOAD="0")
    assert loaded == {"bridge": False, "core": False, "torch_hpu": None}


def test_torch_device_backend_autoload_0_switches_off_every_backend_entry_point() -> None:
    loaded = _import_torch(TORCH_DEVICE_BACKEND_AUTOLOAD="0")
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
