"""Where a node sits in a multi-node run, from CLI options and the environment, and every error line."""

from __future__ import annotations

import socket

import pytest

from hpubench.errors import UsageError
from hpubench.plan.cell import Cell
from hpubench.run import cluster
from hpubench.run.cluster import ClusterEnv, check_cells, check_port_free, expand_nodelist, resolve


def usage_error(env: dict[str, str], **kw: object) -> str:
    with pytest.raises(UsageError) as exc:
        resolve(env, **kw)  # type: ignore[arg-type]
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


# ---- SLURM host lists -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodelist", "hosts"),
    [
        ("node01", ["node01"]),
        ("node[01-03]", ["node01", "node02", "node03"]),
        ("node[01-02,07],gpu5", ["node01", "node02", "node07", "gpu5"]),
        ("a[1-2]-b[8-9]", ["a1-b8", "a1-b9", "a2-b8", "a2-b9"]),
        ("rack-[9-11]", ["rack-9", "rack-10", "rack-11"]),
        ("n[098-100]", ["n098", "n099", "n100"]),
        ("x1, x2", ["x1", "x2"]),
    ],
)
def test_expand_nodelist(nodelist: str, hosts: list[str]) -> None:
    assert expand_nodelist(nodelist) == hosts


@pytest.mark.parametrize("bad", ["node[01-03", "node]1[", "node[3-1]", "node[a-b]"])
def test_expand_nodelist_rejects_malformed_lists(bad: str) -> None:
    with pytest.raises(ValueError):
        expand_nodelist(bad)


# ---- single node ------------------------------------------------------------------------------------


def test_single_node_matrix_needs_no_cluster_even_with_scheduler_variables() -> None:
    assert resolve({}, max_nodes=1) is None
    assert resolve({"SLURM_PROCID": "0", "SLURM_JOB_ID": "7", "MASTER_PORT": "x"}, max_nodes=1) is None


def test_a_second_node_without_multi_node_cells_is_refused() -> None:
    msg = usage_error({"NODE_RANK": "1"}, max_nodes=1)
    assert "NODE_RANK=1" in msg and "--nodes 2" in msg
    msg = usage_error({}, max_nodes=1, node_rank=1)
    assert msg.startswith("--node-rank=1")


# ---- precedence: CLI > env > SLURM > Open MPI ----------------------------------------------------------


def test_env_variables_lightning_style() -> None:
    env = {"NODE_RANK": "1", "MASTER_ADDR": "10.0.0.5", "MASTER_PORT": "29500", "WORLD_SIZE": "4"}
    c = resolve(env, max_nodes=2)
    assert c == ClusterEnv(
        node_rank=1,
        master_addr="10.0.0.5",
        master_port=29500,
        node_rank_from="NODE_RANK",
        master_addr_from="MASTER_ADDR",
        master_port_from="MASTER_PORT",
        world_size=4,
    )
    assert not c.is_node_zero


def test_cli_options_override_the_environment() -> None:
    env = {"NODE_RANK": "1", "MASTER_ADDR": "10.0.0.5", "MASTER_PORT": "29500"}
    c = resolve(env, max_nodes=2, node_rank=0, master_addr="head", master_port=1234)
    assert c is not None
    assert (c.node_rank, c.master_addr, c.master_port) == (0, "head", 1234)
    assert (c.node_rank_from, c.master_addr_from, c.master_port_from) == (
        "--node-rank",
        "--master-addr",
        "--master-port",
    )


def test_node_zero_defaults_to_loopback_and_node_rank_zero() -> None:
    c = resolve({"MASTER_PORT": "29500"}, max_nodes=2)
    assert c is not None
    assert (c.node_rank, c.master_addr, c.node_rank_from) == (0, cluster.NODE0_DEFAULT_ADDR, "default")


def test_slurm_one_task_per_node() -> None:
    env = {
        "SLURM_JOB_ID": "123456",
        "SLURM_PROCID": "1",
        "SLURM_NODEID": "1",
        "SLURM_NNODES": "2",
        "SLURM_NTASKS": "2",
        "SLURM_JOB_NODELIST": "gaudi[07-08]",
    }
    c = resolve(env, max_nodes=2)
    assert c is not None
    assert (c.node_rank, c.master_addr, c.nnodes) == (1, "gaudi07", 2)
    assert c.master_port == cluster.SLURM_PORT_BASE + 123456 % cluster.SLURM_PORT_SPAN
    assert (c.node_rank_from, c.master_addr_from, c.master_port_from) == (
        "SLURM_NODEID",
        "SLURM_JOB_NODELIST",
        "SLURM_JOB_ID",
    )
    # explicit variables still win over what SLURM implies
    c = resolve({**env, "MASTER_ADDR": "10.1.1.1", "MASTER_PORT": "29400"}, max_nodes=2)
    assert c is not None and (c.master_addr, c.master_port) == ("10.1.1.1", 29400)


def test_slurm_procid_when_nodeid_is_absent_and_old_nodelist_name() -> None:
    env = {"SLURM_JOB_ID": "5", "SLURM_PROCID": "0", "SLURM_NODELIST": "a1,a2", "SLURM_NNODES": "2"}
    c = resolve(env, max_nodes=2)
    assert c is not None and (c.node_rank, c.node_rank_from, c.master_addr) == (0, "SLURM_PROCID", "a1")


def test_slurm_one_task_per_device_is_refused() -> None:
    env = {"SLURM_JOB_ID": "5", "SLURM_PROCID": "3", "SLURM_NNODES": "2", "SLURM_NTASKS": "16"}
    msg = usage_error(env, max_nodes=2)
    assert "SLURM_NTASKS=16" in msg and "--ntasks-per-node=1" in msg


def test_slurm_allocation_smaller_than_the_matrix() -> None:
    env = {"SLURM_JOB_ID": "5", "SLURM_NODEID": "0", "SLURM_NNODES": "2", "SLURM_NTASKS": "2"}
    msg = usage_error(env, max_nodes=4)
    assert "4 nodes" in msg and "2 node(s)" in msg


def test_open_mpi_one_process_per_node() -> None:
    env = {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "MASTER_ADDR": "h0", "MASTER_PORT": "1"}
    c = resolve(env, max_nodes=2)
    assert c is not None and (c.node_rank, c.node_rank_from, c.nnodes) == (1, "OMPI_COMM_WORLD_RANK", 2)


def test_open_mpi_several_processes_per_node_are_refused() -> None:
    env = {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "8", "MASTER_PORT": "29500"}
    msg = usage_error(env, max_nodes=2)
    assert "OMPI_COMM_WORLD_LOCAL_SIZE=8" in msg and "ppr:1:node" in msg


def test_open_mpi_without_master_addr_on_node_one() -> None:
    msg = usage_error({"OMPI_COMM_WORLD_RANK": "1", "MASTER_PORT": "29500"}, max_nodes=2)
    assert msg.startswith("MASTER_ADDR is not set on node 1")


# ---- the error lines ------------------------------------------------------------------------------------


def test_node_rank_not_below_the_node_count() -> None:
    msg = usage_error({"NODE_RANK": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, max_nodes=2)
    assert msg.startswith("NODE_RANK=2 but the matrix spans at most 2 nodes") and "0-1" in msg


def test_negative_or_malformed_node_rank() -> None:
    assert "negative" in usage_error({"NODE_RANK": "-1"}, max_nodes=2)
    msg = usage_error({"NODE_RANK": "one"}, max_nodes=2)
    assert msg.startswith("NODE_RANK='one' is not a whole number")


def test_missing_master_addr_on_a_later_node() -> None:
    msg = usage_error({"NODE_RANK": "1", "MASTER_PORT": "29500"}, max_nodes=2)
    assert msg.startswith("MASTER_ADDR is not set on node 1") and "--master-addr" in msg


def test_missing_master_port() -> None:
    msg = usage_error({"NODE_RANK": "0"}, max_nodes=2)
    assert msg.startswith("MASTER_PORT is not set") and "--master-port" in msg


@pytest.mark.parametrize(
    ("port", "needle"), [("0", "not a TCP port"), ("70000", "not a TCP port"), ("x", "whole")]
)
def test_bad_master_port(port: str, needle: str) -> None:
    assert needle in usage_error({"MASTER_PORT": port}, max_nodes=2)


def test_bad_world_size_value() -> None:
    assert "at least 1" in usage_error({"MASTER_PORT": "1", "WORLD_SIZE": "0"}, max_nodes=2)


def test_malformed_slurm_nodelist() -> None:
    env = {"SLURM_JOB_ID": "5", "SLURM_NODEID": "1", "SLURM_JOB_NODELIST": "n[1-"}
    msg = usage_error(env, max_nodes=2)
    assert msg.startswith("SLURM_JOB_NODELIST='n[1-' cannot be parsed") and "MASTER_ADDR" in msg


# ---- WORLD_SIZE and cells ------------------------------------------------------------------------------


def test_world_size_must_equal_nodes_times_devices() -> None:
    c = resolve({"MASTER_PORT": "1", "WORLD_SIZE": "4"}, max_nodes=2)
    check_cells(c, [Cell("mlp", devices=2, nodes=2), Cell("mlp")])  # the single-node cell is not checked
    with pytest.raises(UsageError) as exc:
        check_cells(c, [Cell("mlp", devices=1, nodes=2)])
    msg = str(exc.value)
    assert "WORLD_SIZE=4" in msg and "2 nodes x 1 devices = 2" in msg and "\n" not in msg
    check_cells(resolve({"MASTER_PORT": "1"}, max_nodes=2), [Cell("mlp", devices=1, nodes=2)])
    check_cells(None, [Cell("mlp", devices=1, nodes=2)])


def test_takes_part() -> None:
    node1 = ClusterEnv(node_rank=1, master_addr="h", master_port=1)
    node0 = ClusterEnv(node_rank=0, master_addr="h", master_port=1)
    assert node0.takes_part(Cell("mlp")) and node0.takes_part(Cell("mlp", nodes=2))
    assert not node1.takes_part(Cell("mlp")) and not node1.takes_part(Cell("mlp", devices=2))
    assert node1.takes_part(Cell("mlp", nodes=2))
    assert not ClusterEnv(node_rank=2, master_addr="h", master_port=1).takes_part(Cell("mlp", nodes=2))


# ---- the port on node 0 ---------------------------------------------------------------------------------


def test_port_in_use_on_node_zero() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(UsageError) as exc:
            check_port_free(port)
        assert f"MASTER_PORT={port} is already in use on node 0" in str(exc.value)
    check_port_free(port)  # free again once closed
