"""C11: the ``hccl`` backend exists only after ``import habana_frameworks.torch.distributed.hccl``; then
``init_process_group("hccl")`` forms a group. hpubench's side (the DDP strategy imports it before forming
the group) runs in tests/integration/test_ddp.py::test_two_hpu_devices_form_an_hccl_group_on_the_double."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from contract_doubles import ROOT, double_env

INIT = textwrap.dedent(
    """
    import sys
    import torch.distributed as dist
    if sys.argv[1] == "import":
        import habana_frameworks.torch.distributed.hccl  # noqa: F401
    try:
        dist.init_process_group("hccl", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    except Exception as exc:
        print("refused:", type(exc).__name__, exc)
    else:
        print("backend", dist.get_backend())
        dist.destroy_process_group()
    """
)


def _init(how: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", INIT, how],
        env=double_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_hccl_needs_the_bridge_import() -> None:
    assert _init("none").startswith("refused:")
    assert _init("import") == "backend hccl"
