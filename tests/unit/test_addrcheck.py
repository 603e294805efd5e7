"""Issue 14 item 8: node 0's address is resolved before anything starts, within a bounded time.

The lookups are real (``socket.getaddrinfo``): names under ``.invalid`` never resolve (RFC 2606), and
``localhost`` / loopback literals always do, network or not. Only the hung-DNS case needs a stand-in
resolver: a lookup that never answers cannot be produced on purpose on a machine without a network.
"""

from __future__ import annotations

import threading
import time

import pytest

from hpubench import api
from hpubench.errors import UsageError
from hpubench.plan.cliparse import parse_dimensions
from hpubench.run import addrcheck

TWO_NODES = api.resolve_spec(None, parse_dimensions(workload=["mlp"], accelerator=["cpu"], nodes=["2"]))
SECOND_NODE = {"NODE_RANK": "1", "MASTER_PORT": "29500"}


def refusal(env: dict[str, str], **kw: object) -> str:
    with pytest.raises(UsageError) as exc:
        api.resolve_cluster(TWO_NODES, env, **kw)  # type: ignore[arg-type]
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_unresolvable_master_addr_is_refused_before_anything_starts() -> None:
    t0 = time.monotonic()
    msg = refusal({**SECOND_NODE, "MASTER_ADDR": "nosuchhost.invalid"})
    assert time.monotonic() - t0 < addrcheck.RESOLVE_TIMEOUT_S + 1.0
    assert "MASTER_ADDR 'nosuchhost.invalid' does not resolve" in msg
    assert "set MASTER_ADDR / --master-addr to node 0's hostname or IP" in msg


def test_the_option_is_named_when_the_address_came_from_it() -> None:
    msg = refusal({**SECOND_NODE, "MASTER_ADDR": "localhost"}, master_addr="node0.invalid")
    assert msg.startswith("--master-addr 'node0.invalid' does not resolve"), msg


def test_node_zero_resolves_a_given_address_too() -> None:
    # Node 0's own ranks reach the rendezvous through MASTER_ADDR as well.
    msg = refusal({"NODE_RANK": "0", "MASTER_PORT": "29500", "MASTER_ADDR": "nosuchhost.invalid"})
    assert "does not resolve" in msg


def test_a_slurm_derived_address_is_named_with_its_source() -> None:
    env = {"SLURM_JOB_ID": "77", "SLURM_NODEID": "1", "SLURM_JOB_NODELIST": "gpu[1-2].invalid"}
    msg = refusal(env)
    assert "'gpu1.invalid'" in msg and "SLURM_JOB_NODELIST" in msg, msg


@pytest.mark.parametrize("addr", ["localhost", "127.0.0.1", "::1"])
def test_resolvable_addresses_are_accepted(addr: str) -> None:
    node = api.resolve_cluster(TWO_NODES, {**SECOND_NODE, "MASTER_ADDR": addr})
    assert node is not None and node.master_addr == addr
    addrcheck.check_resolves(addr, "MASTER_ADDR", 29500)


def test_a_hung_lookup_is_cut_off_and_said_to_have_timed_out() -> None:
    release = threading.Event()

    def never_answers(host: str, port: int) -> object:
        release.wait(60)
        return []

    t0 = time.monotonic()
    try:
        with pytest.raises(UsageError) as exc:
            addrcheck.check_resolves(
                "slowdns.example", "MASTER_ADDR", 29500, timeout_s=0.3, resolver=never_answers
            )
    finally:
        release.set()
    assert time.monotonic() - t0 < 2.0
    msg = str(exc.value)
    assert "MASTER_ADDR 'slowdns.example'" in msg and "timed out" in msg and "0.3 s" in msg, msg
    assert "--master-addr" in msg


def test_the_default_bound_is_a_few_seconds() -> None:
    assert 1.0 <= addrcheck.RESOLVE_TIMEOUT_S <= 10.0
