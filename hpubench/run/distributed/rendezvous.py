"""The rendezvous of one distributed cell: torch's static TCP rendezvous, plus the checks a matrix needs.

torch's ``static`` backend (what torchrun uses with --node-rank/--master-addr/--master-port) lets node 0's
agent host a TCPStore on MASTER_PORT and the other nodes connect to it. A matrix runs many cells one
after another on the same port, which that backend was not made for: a node that finishes a cell first
can connect to node 0's store of the *previous* cell before it closes, and join the wrong group. This
handler keeps the static design and node ranks (node 0 hosts, node ranks are NODE_RANK) and adds:

- node 0 publishes the cell's rendezvous id in its store; another node joins only a store that serves its
  own id, and otherwise reconnects until its deadline (node 0 still closing the previous cell), or
  reports that node 0 has moved past this cell (node 0 resumed a run and already had its record);
- node 0 waits for every node to check in before the agents go on, and on its deadline names the nodes
  that never came (and what those that did connect were waiting for) instead of hanging;
- ranks that fail leave a one-line note in the store (``FAILED_PREFIX``), so node 0 can name a failing
  rank on another node as the root cause instead of the connection errors it caused on node 0.

It is registered with torch's rendezvous registry and driven by the elastic agent like any other backend.
"""

from __future__ import annotations

import datetime
import json
import socket
import time
from typing import Any

from torch.distributed import PrefixStore, Store, TCPStore
from torch.distributed.elastic.rendezvous import (
    RendezvousHandler,
    RendezvousInfo,
    RendezvousParameters,
    RendezvousStoreInfo,
    rendezvous_handler_registry,
)

BACKEND = "hpubench-cell"
CURRENT_KEY = "hpubench/plan/cell"  # node 0's store -> the rendezvous id it serves
JOINED_PREFIX = "hpubench/joined/"  # + id/node_rank: that node joined this cell
WAITING_PREFIX = "hpubench/waiting/"  # + node_rank -> the cell key that node waits for (a mismatch)
FAILED_PREFIX = "hpubench/failed/"  # + rank -> JSON note of a rank that failed
POLL_S = 0.05
RECONNECT_S = 0.5
CONNECT_TIMEOUT_S = 5.0
PING_S = 1.0  # how often a node other than 0 checks that node 0's store is still there

_last: CellRendezvous | None = None  # the handler the agent made, for reading failure notes afterwards


class RendezvousFailed(RuntimeError):
    """The nodes did not come together for this cell; ``node0_at`` is set when node 0 moved past it."""

    def __init__(self, reason: str, node0_at: str | None = None) -> None:
        super().__init__(reason)
        self.node0_at = node0_at


def _timedelta(seconds: float) -> datetime.timedelta:
    return datetime.timedelta(seconds=max(1.0, seconds))


class CellRendezvous(RendezvousHandler):
    def __init__(self, params: RendezvousParameters) -> None:
        host, _, port = params.endpoint.rpartition(":")
        self.master_addr = host or "127.0.0.1"
        self.master_port = int(port or 0)
        self.run_id = params.run_id
        self.nnodes = params.max_nodes
        cfg = params.config
        self.node_rank = int(cfg["node_rank"])
        self.deadline = float(cfg["deadline"])
        self.timeout_s = float(cfg["timeout_s"])
        self.cell_key = str(cfg["cell_key"])
        self.world_size = int(cfg["world_size"])
        self.ahead = tuple(cfg.get("ahead_ids") or ())
        self.launched_at = float(cfg.get("launched_at") or time.time())
        self.store: Store | None = None
        self._next_ping = 0.0

    # ---- RendezvousHandler ----------------------------------------------------------------------------
    def get_backend(self) -> str:
        return BACKEND

    @property
    def use_agent_store(self) -> bool:
        return True  # workers reach the same store through MASTER_ADDR/MASTER_PORT, like static

    def next_rendezvous(self) -> RendezvousInfo:
        if self.store is None:
            self.store = self._host() if self.node_rank == 0 else self._join()
        return RendezvousInfo(
            PrefixStore(self.run_id, self.store),
            self.node_rank,
            self.nnodes,
            RendezvousStoreInfo(self.master_addr, self.master_port),
        )

    def is_closed(self) -> bool:
        return False

    def set_closed(self) -> None:
        pass

    def num_nodes_waiting(self) -> int:
        """Called by the agent every monitor interval while the workers run: no elastic membership here,
        but on a node other than 0 it doubles as a liveness check of node 0. Node 0 ends a cell by
        closing its store (done, failed or timed out there); the other nodes must then stop too, not
        wait for their own timeout with workers stuck in collectives."""
        if self.node_rank > 0 and self.store is not None and time.monotonic() >= self._next_ping:
            self._next_ping = time.monotonic() + PING_S
            try:
                self.store.check([CURRENT_KEY])
            except Exception as exc:
                raise RendezvousFailed(
                    f"lost node 0 at {self.master_addr}:{self.master_port} while the ranks ran "
                    f"({' '.join(str(exc).split())[:120]}): node 0 ended this cell (a rank failed or it "
                    "timed out there; its record says which)"
                ) from None
        return 0

    def get_run_id(self) -> str:
        return self.run_id

    def shutdown(self) -> bool:
        return True  # the store lives until this process exits: failure notes are read after the run

    def _waited(self) -> str:
        return f"{time.time() - self.launched_at:.0f} s (cell timeout {self.timeout_s:g} s)"

    # ---- node 0 ---------------------------------------------------------------------------------------
    def _host(self) -> Store:
        try:
            store = TCPStore(
                self.master_addr,
                self.master_port,
                None,
                True,
                _timedelta(self.deadline - time.time()),
                wait_for_workers=False,
            )
        except Exception as exc:  # bind failures surface as RuntimeError subclasses (DistNetworkError)
            raise RendezvousFailed(
                f"node 0 cannot listen on MASTER_PORT={self.master_port} "
                f"({' '.join(str(exc).split())[:200]}); choose a free port"
            ) from None
        self.master_port = store.port  # port 0 (single node): the free port the store picked
        store.set(CURRENT_KEY, self.run_id)
        missing = list(range(1, self.nnodes))
        while missing:
            missing = [r for r in missing if not store.check([f"{JOINED_PREFIX}{self.run_id}/{r}"])]
            if not missing:
                break
            if time.time() >= self.deadline:
                raise RendezvousFailed(self._missing_reason(store, missing))
            time.sleep(POLL_S)
        return store

    def _missing_reason(self, store: Store, missing: list[int]) -> str:
        names = ", ".join(str(r) for r in missing)
        what = f"node {names}" if len(missing) == 1 else f"nodes {names}"
        joined = self.nnodes - len(missing)
        notes = []
        for r in missing:
            if store.check([f"{WAITING_PREFIX}{r}"]):
                other = store.get(f"{WAITING_PREFIX}{r}").decode(errors="replace")
                notes.append(
                    f"node {r} is connected but waiting for cell {other}: "
                    "are all nodes running the same matrix?"
                )
        hint = (
            f"start the same 'hpubench run' there with NODE_RANK set and MASTER_ADDR={socket.gethostname()} "
            f"MASTER_PORT={self.master_port}"
        )
        return (
            f"timed out after {self._waited()} waiting for {what} to join "
            f"({joined} of {self.nnodes} nodes joined); " + ("; ".join(notes) if notes else hint)
        )

    # ---- nodes > 0 ------------------------------------------------------------------------------------
    def _join(self) -> Store:
        seen: str | None = None
        error: str | None = None
        while True:
            remaining = self.deadline - time.time()
            if remaining <= 0:
                where = f"node 0 at {self.master_addr}:{self.master_port}"
                if seen is not None:
                    why = f"{where} was serving another cell ({seen}): is it running the same matrix?"
                elif error is not None:
                    why = f"{where} could not be reached ({error}): is node 0 running, and is the port open?"
                else:
                    why = f"{where} never opened this cell"
                raise RendezvousFailed(f"timed out after {self._waited()} waiting for node 0: {why}")
            try:
                store = TCPStore(
                    self.master_addr,
                    self.master_port,
                    None,
                    False,
                    _timedelta(min(remaining, CONNECT_TIMEOUT_S)),
                    wait_for_workers=False,
                )
                current = store.get(CURRENT_KEY).decode(errors="replace")
                if current == self.run_id:
                    store.set(f"{JOINED_PREFIX}{self.run_id}/{self.node_rank}", socket.gethostname())
                    return store
                if current in self.ahead:
                    raise RendezvousFailed(
                        "node 0 did not run this cell: it has moved on to a later one (with --resume it may "
                        "already hold this cell's record)",
                        node0_at=current,
                    )
                store.set(f"{WAITING_PREFIX}{self.node_rank}", self.cell_key)
                seen = current
                del store
            except RendezvousFailed:
                raise
            except Exception as exc:  # refused, reset, or node 0's previous store closing under us
                error = " ".join(str(exc).split())[:200]
            time.sleep(RECONNECT_S)

    # ---- after the run ---------------------------------------------------------------------------------
    def failure_notes(self) -> list[dict[str, Any]]:
        """Notes left by failed ranks (node 0 only: it hosts the store); empty when none or unreachable."""
        if self.store is None or self.node_rank != 0:
            return []
        notes = []
        for rank in range(self.world_size):
            key = f"{FAILED_PREFIX}{rank}"
            try:
                if self.store.check([key]):
                    notes.append(json.loads(self.store.get(key).decode(errors="replace")))
            except Exception:
                continue
        return notes


def _create(params: RendezvousParameters) -> RendezvousHandler:
    global _last
    _last = CellRendezvous(params)
    return _last


def register() -> None:
    """Make the backend known to torch's registry (idempotent: the registry accepts the same creator)."""
    rendezvous_handler_registry.register(BACKEND, _create)


def last_handler() -> CellRendezvous | None:
    return _last


def note_failure(addr: str, port: int, rank: int, note: dict[str, Any]) -> None:
    """From a failing rank: leave ``note`` in node 0's store. Best effort: the store may be gone."""
    try:
        store = TCPStore(addr, port, None, False, _timedelta(3.0), wait_for_workers=False)
        store.set(f"{FAILED_PREFIX}{rank}", json.dumps(note))
    except Exception:
        pass
