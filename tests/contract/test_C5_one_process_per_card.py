"""C5: one process per card. A card held by a live process cannot be acquired by another until that
process exits (``os._exit`` included): ``_hpu_C.cleanup`` only syncs threads and clears the scalar cache
(``bindings.cpp``), and 1.19 has no Python call that releases a card."""

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
    hpu.synchronize()
    print(_cards.held_module(), flush=True)
    sys.stdin.readline()
    if sys.argv[1] == "cleanup":
        from habana_frameworks.torch import _hpu_C
        _hpu_C.cleanup()
        print("cleaned up", flush=True)
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
        hpu.synchronize()
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
        # With HABANA_VISIBLE_MODULES set a held module is refused; unset, the bridge would take another
        # free module instead ("Proceeding without moduleid", test_C15).
        env=double_env(
            **({"HLS_MODULE_ID": module, "HABANA_VISIBLE_MODULES": "0,1,2,3,4,5,6,7"} if module else {})
        ),
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


@pytest.mark.parametrize("how", ["exit", "cleanup"])
def test_a_held_card_is_refused_until_its_holder_exits(how: str) -> None:
    holder = _python(HOLDER, "2", how)
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "2"
        assert _run(ACQUIRE, "2").startswith("refused: ") and "Device acquire failed" in _run(ACQUIRE, "2")
        assert f"(2, '{holder.pid}')" in _run(HELD)
        assert _run(ACQUIRE, "3") == "acquired 3"  # another card is free
        holder.stdin.write("\n")
        holder.stdin.flush()
        if how == "cleanup":
            assert holder.stdout.readline().strip() == "cleaned up"
            assert _run(ACQUIRE, "2").startswith("refused: ")  # cleanup releases nothing
            holder.stdin.write("\n")
            holder.stdin.flush()
        holder.wait(timeout=60)
        assert _run(ACQUIRE, "2") == "acquired 2"
    finally:
        holder.kill()
        holder.wait(timeout=60)


def test_cleanup_before_the_device_was_initialised_asserts(bridge) -> None:
    bridge()
    from habana_frameworks.torch import _hpu_C

    with pytest.raises(RuntimeError, match="scalar_cache"):
        _hpu_C.cleanup()


def test_without_hls_module_id_a_process_gets_the_first_free_visible_module() -> None:
    holder = _python(HOLDER, "", "exit")
    try:
        assert holder.stdout is not None
        first = int(holder.stdout.readline().strip())
        assert _run(ACQUIRE) == f"acquired {first + 1}"
    finally:
        holder.kill()
        holder.wait(timeout=60)


def test_hpubench_never_cleans_up_a_device_it_did_not_set_up(bridge) -> None:
    """The bridge's cleanup asserts before device init: a process that only looked at the bridge (doctor's
    child, a skipped cell) must not run it when it gives its devices back."""
    core = bridge()
    from hpubench.accelerators.hpu.accelerator import HPUAccelerator

    acc = HPUAccelerator(0)
    acc.device_name()  # a look, no setup
    acc.release()
    assert not [c for c in core.CALLS if c[0] == "hpu.cleanup"]
