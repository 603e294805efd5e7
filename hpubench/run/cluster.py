"""Where this ``hpubench run`` sits in a multi-node run: its node rank, and node 0's address and port.

Multi-node works the way Lightning's HPU docs describe: the *same* ``hpubench run`` is started on every
node (by hand, by ``srun``, by ``mpirun``) and each instance learns its place from its environment.
Each value is taken from the first source that has it:

    CLI option (--node-rank, --master-addr, --master-port)
    > torch / Lightning variables (NODE_RANK, MASTER_ADDR, MASTER_PORT, WORLD_SIZE)
    > SLURM (SLURM_NODEID or SLURM_PROCID, SLURM_NNODES, first host of SLURM_JOB_NODELIST)
    > Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE)

WORLD_SIZE keeps Lightning's meaning, the total number of training processes (nodes x devices). hpubench
starts the per-device processes itself, so WORLD_SIZE is never used to derive anything: when set, it is
checked against every multi-node cell, so a job script and a matrix that disagree fail before any work.

Everything here is pure (it reads only the mapping it is given) except :func:`check_port_free`, so each
resolution rule and each error line is unit-tested without a cluster. Errors are ``UsageError`` with one
line that names the variable and the fix: a misconfigured node must fail at once, not hang a rendezvous.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hpubench.errors import UsageError
from hpubench.plan.cell import Cell

# Node 0 reaches its own store over loopback; only the other nodes need a routable MASTER_ADDR.
NODE0_DEFAULT_ADDR = "127.0.0.1"
# SLURM names no port; a job-derived default lets several jobs share a node without colliding.
SLURM_PORT_BASE = 20000
SLURM_PORT_SPAN = 10000


@dataclass(frozen=True)
class ClusterEnv:
    """This node's place in a multi-node run; ``*_from`` name the source of each value for messages."""

    node_rank: int
    master_addr: str
    master_port: int
    node_rank_from: str = "default"
    master_addr_from: str = "default"
    master_port_from: str = "default"
    nnodes: int | None = None  # what the scheduler allocated (SLURM_NNODES, OMPI size); None: unknown
    world_size: int | None = None  # WORLD_SIZE when given: total processes, nodes x devices

    @property
    def is_node_zero(self) -> bool:
        return self.node_rank == 0

    def takes_part(self, cell: Cell) -> bool:
        """Whether this node runs ``cell``: node 0 runs everything, the others only cells spanning them."""
        return self.node_rank == 0 or (cell.nodes > 1 and self.node_rank < cell.nodes)

    def describe(self) -> str:
        return (
            f"node {self.node_rank} ({self.node_rank_from}), node 0 at {self.master_addr}:{self.master_port}"
        )


def expand_nodelist(nodelist: str) -> list[str]:
    """SLURM's compact host list (``node[01-03,07],gpu-[1-2]-x``) as host names, in order.

    Several bracket groups in one name expand as a product (``r[1-2]n[1-2]`` -> r1n1 r1n2 r2n1 r2n2);
    zero padding follows the range's first bound, as SLURM writes it.
    """
    hosts: list[str] = []
    for expr in _split_top_level(nodelist.strip()):
        hosts += _expand_one(expr)
    return hosts


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current = ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in {text!r}")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if depth != 0:
        raise ValueError(f"unbalanced '[' in {text!r}")
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def _expand_one(expr: str) -> list[str]:
    m = re.search(r"\[([^\]]*)\]", expr)
    if m is None:
        return [expr]
    head, tail = expr[: m.start()], expr[m.end() :]
    out: list[str] = []
    for item in m.group(1).split(","):
        item = item.strip()
        if not item:
            continue
        if "-" in item:
            lo, hi = item.split("-", 1)
            if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
                raise ValueError(f"bad range {item!r} in {expr!r}")
            width = len(lo)
            values = [str(i).zfill(width) for i in range(int(lo), int(hi) + 1)]
        else:
            values = [item]
        for v in values:
            out += _expand_one(head + v + tail)
    return out


def _int(env: Mapping[str, str], name: str, what: str) -> int | None:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        return int(raw.strip())
    except ValueError:
        raise UsageError(f"{name}={raw!r} is not a whole number; set {name} to {what}") from None


def _first(*candidates: tuple[str, object | None]) -> tuple[object | None, str]:
    for source, value in candidates:
        if value is not None:
            return value, source
    return None, "default"


def resolve(
    env: Mapping[str, str],
    *,
    max_nodes: int,
    node_rank: int | None = None,
    master_addr: str | None = None,
    master_port: int | None = None,
) -> ClusterEnv | None:
    """This node's place for a matrix whose largest cell spans ``max_nodes`` nodes; None if single-node.

    A node rank > 0 without any multi-node cell is refused too: that process would only repeat node 0's
    single-node cells and race it for the same results.
    """
    slurm = "SLURM_JOB_ID" in env or "SLURM_NODEID" in env or "SLURM_PROCID" in env
    rank, rank_from = _node_rank(env, node_rank)
    if max_nodes <= 1:
        if rank > 0:
            raise UsageError(
                f"{rank_from}={rank} but no cell spans more than one node; this process would repeat node "
                "0's cells: run multi-node cells (e.g. --nodes 2) or start hpubench on node 0 only"
            )
        return None
    nnodes = _job_nodes(env, rank_from, slurm)
    if nnodes is not None and nnodes < max_nodes:
        raise UsageError(
            f"the matrix has cells on {max_nodes} nodes but the job has {nnodes} node(s); "
            f"allocate {max_nodes} nodes or lower --nodes"
        )
    if rank >= max_nodes:
        raise UsageError(
            f"{rank_from}={rank} but the matrix spans at most {max_nodes} nodes "
            f"(node ranks 0-{max_nodes - 1}); give each node its index from 0 to {max_nodes - 1}, "
            "or raise --nodes"
        )
    addr, addr_from = _master_addr(env, master_addr, rank)
    port, port_from = _master_port(env, master_port, slurm)
    return ClusterEnv(
        node_rank=rank,
        master_addr=addr,
        master_port=port,
        node_rank_from=rank_from,
        master_addr_from=addr_from,
        master_port_from=port_from,
        nnodes=nnodes,
        world_size=_world_size(env),
    )


def _node_rank(env: Mapping[str, str], given: int | None) -> tuple[int, str]:
    """(node rank, where it came from), from the first source that has one in the module's order, so an
    explicit option always beats what a scheduler set; 0 ("default") when none has."""
    rank_what = "this node's index (0 on the node that hosts MASTER_PORT)"
    rank_value, rank_from = _first(
        ("--node-rank", given),
        ("NODE_RANK", _int(env, "NODE_RANK", rank_what)),
        ("SLURM_NODEID", _int(env, "SLURM_NODEID", rank_what)),
        ("SLURM_PROCID", _int(env, "SLURM_PROCID", rank_what)),
        ("OMPI_COMM_WORLD_RANK", _int(env, "OMPI_COMM_WORLD_RANK", rank_what)),
    )
    rank = int(rank_value) if rank_value is not None else 0  # type: ignore[call-overload]
    if rank < 0:
        raise UsageError(f"{rank_from}={rank} is negative; node ranks count from 0")
    return rank, rank_from


def _job_nodes(env: Mapping[str, str], rank_from: str, slurm: bool) -> int | None:
    """The nodes the scheduler that placed this node allocated (None: unknown, e.g. set by hand).

    Only the scheduler the rank came from is asked, and a job shaped for one process per device is
    refused here: hpubench starts those processes itself, so each node must run exactly one hpubench.
    """
    nnodes: int | None = None
    if rank_from.startswith("SLURM") or (slurm and rank_from == "default"):
        nnodes = _int(env, "SLURM_NNODES", "the job's node count") or _int(
            env, "SLURM_JOB_NUM_NODES", "the job's node count"
        )
        ntasks = _int(env, "SLURM_NTASKS", "the job's task count")
        if nnodes is not None and ntasks is not None and ntasks != nnodes:
            raise UsageError(
                f"SLURM_NTASKS={ntasks} on SLURM_NNODES={nnodes}: hpubench starts one process per device "
                "itself, so launch one task per node (srun --ntasks-per-node=1 hpubench run ...)"
            )
    elif rank_from == "OMPI_COMM_WORLD_RANK":
        nnodes = _int(env, "OMPI_COMM_WORLD_SIZE", "the number of mpirun processes")
        local_size = _int(env, "OMPI_COMM_WORLD_LOCAL_SIZE", "the processes per node")
        if local_size is not None and local_size > 1:
            raise UsageError(
                f"OMPI_COMM_WORLD_LOCAL_SIZE={local_size}: hpubench starts one process per device itself, "
                "so start one hpubench per node (mpirun --map-by ppr:1:node hpubench run ...)"
            )
    return nnodes


def _master_addr(env: Mapping[str, str], given: str | None, rank: int) -> tuple[str, str]:
    """(node 0's address, where it came from). Node 0 may default to loopback; any other node must be
    told, since a guess would only hang its rendezvous."""
    addr_value, addr_from = _first(
        ("--master-addr", given or None),
        ("MASTER_ADDR", (env.get("MASTER_ADDR") or "").strip() or None),
        ("SLURM_JOB_NODELIST", _slurm_first_host(env)),
    )
    if addr_value is None:
        if rank > 0:
            raise UsageError(
                f"MASTER_ADDR is not set on node {rank}: it must name node 0 (the host that runs "
                "NODE_RANK=0); set MASTER_ADDR=<node 0 host> or pass --master-addr"
            )
        addr_value = NODE0_DEFAULT_ADDR
    return str(addr_value), addr_from


def _master_port(env: Mapping[str, str], given: int | None, slurm: bool) -> tuple[int, str]:
    """(node 0's rendezvous port, where it came from). Under SLURM the job id picks one, so two jobs
    sharing a node do not collide; anywhere else it must be given, since every node has to agree."""
    port_from_slurm = None
    job_id = _int(env, "SLURM_JOB_ID", "the job id")
    if slurm and job_id is not None:
        port_from_slurm = SLURM_PORT_BASE + job_id % SLURM_PORT_SPAN
    port_value, port_from = _first(
        ("--master-port", given),
        ("MASTER_PORT", _int(env, "MASTER_PORT", "a free TCP port on node 0, e.g. 29500")),
        ("SLURM_JOB_ID", port_from_slurm),
    )
    if port_value is None:
        raise UsageError(
            "MASTER_PORT is not set: multi-node cells need a TCP port on node 0 that every node can reach; "
            "set MASTER_PORT (e.g. 29500) on every node or pass --master-port"
        )
    port = int(port_value)  # type: ignore[call-overload]
    if not 1 <= port <= 65535:
        raise UsageError(f"{port_from}={port} is not a TCP port; use a free port between 1024 and 65535")
    return port, port_from


def _world_size(env: Mapping[str, str]) -> int | None:
    """WORLD_SIZE when given (total processes, nodes x devices): only ever checked against the cells."""
    world_size = _int(env, "WORLD_SIZE", "the total number of processes, nodes x devices")
    if world_size is not None and world_size < 1:
        raise UsageError(f"WORLD_SIZE={world_size} must be at least 1 (total processes, nodes x devices)")
    return world_size


def _slurm_first_host(env: Mapping[str, str]) -> str | None:
    for name in ("SLURM_JOB_NODELIST", "SLURM_NODELIST"):
        raw = (env.get(name) or "").strip()
        if raw:
            try:
                hosts = expand_nodelist(raw)
            except ValueError as exc:
                raise UsageError(f"{name}={raw!r} cannot be parsed ({exc}); set MASTER_ADDR") from None
            if hosts:
                return hosts[0]
    return None


def check_cells(cluster: ClusterEnv | None, cells: Iterable[Cell]) -> None:
    """WORLD_SIZE, when given, must equal nodes x devices for every multi-node cell this node runs."""
    if cluster is None or cluster.world_size is None:
        return
    for cell in cells:
        if cell.nodes > 1 and cluster.takes_part(cell) and cell.world_size != cluster.world_size:
            raise UsageError(
                f"WORLD_SIZE={cluster.world_size} (total processes = nodes x devices) but cell "
                f"{cell.key} runs {cell.nodes} nodes x {cell.devices} devices = {cell.world_size}; "
                "fix WORLD_SIZE, or unset it to run cells of several sizes"
            )


def check_port_free(port: int, from_: str = "MASTER_PORT") -> None:
    """Node 0 hosts the rendezvous on ``port``: fail now if something else holds it, not at every cell.

    SO_REUSEADDR makes a port left in TIME_WAIT by an earlier run count as free, as it is for the store.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
        except OSError as exc:
            raise UsageError(
                f"{from_}={port} is already in use on node 0 ({exc.strerror or exc}); "
                "choose a free port for MASTER_PORT on every node"
            ) from None
