"""C5: one process per card. A card held by a live process cannot be acquired by another until that
process exits (``os._exit`` included: *inferred*) or releases it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from contract_doubles import ROOT, double_env

HOLDER = textwrap.dedent(
    """
    import os, sys
    from habana_frameworks.torch import hpu
    from habana_frameworks import _cards
    hpu.set_device(0)
    print(_cards.held_module(), flush=True)
    sys.stdin.readline()
    if sys.argv[1] == "release":
        _cards.release()
        print("released", flush=True)
        sys.stdin.readline()
    os._exit(0)
    """
)
ACQUIRE = textwrap.dedent(
    """
    from habana_frameworks.torch import hpu
    from habana_frameworks import _cards
    try:
        hpu.set_device(0)
    except RuntimeError as exc:
        print("refused:", exc)
    else:
        print("acquired", _cards.held_module())
    """
)
HELD = "from habana_frameworks import _cards; print(sorted(_cards.held_modules().items()))"


def _python(code: str, module: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=double_env(HLS_MODULE_ID=module),
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run(code: str, module: str = "") -> str:
    proc = _python(code, module)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    return out.strip()


@pytest.mark.parametrize("how", ["exit", "release"])
def test_a_held_card_is_refused_until_its_holder_exits_or_releases(how: str) -> None:
    holder = _python(HOLDER, "2", how)
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "2"
        assert _run(ACQUIRE, "2").startswith("refused: ") and "Device acquire failed" in _run(ACQUIRE, "2")
        assert f"(2, '{holder.pid}')" in _run(HELD)
        assert _run(ACQUIRE, "3") == "acquired 3"  # another card is free
        holder.stdin.write("\n")
        holder.stdin.flush()
        if how == "release":
            assert holder.stdout.readline().strip() == "released"
        else:
            holder.wait(timeout=60)
        assert _run(ACQUIRE, "2") == "acquired 2"
    finally:
        holder.kill()
        holder.wait(timeout=60)


def test_without_hls_module_id_a_process_gets_the_first_free_visible_module() -> None:
    holder = _python(HOLDER, "", "exit")
    try:
        assert holder.stdout is not None
        first = int(holder.stdout.readline().strip())
        assert _run(ACQUIRE) == f"acquired {first + 1}"
    finally:
        holder.kill()
        holder.wait(timeout=60)
