"""Multi-node from the command line: two `hpubench run --nodes 2` on one machine, failures, bad setups.

Every hpubench process here carries a unique mark in its environment, which every process it starts
inherits (agents, ranks, anything they spawn): after each run no process with the mark may be alive.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import psutil
import pytest

MARK = "HPUBENCH_TEST_MARK"
CLUSTER_VARS = ("NODE_RANK", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")
QUICK = ["--steps", "4", "--warmup-steps", "1"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in CLUSTER_VARS and not k.startswith(("SLURM_", "OMPI_", "PT_HPU", "HPUBENCH_"))
    }
    env[MARK] = uuid.uuid4().hex
    env.update(extra)
    return env


def start(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hpubench", *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def marked_alive(mark: str) -> list[psutil.Process]:
    alive = []
    for p in psutil.process_iter():
        try:
            if p.pid != os.getpid() and p.environ().get(MARK) == mark and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.Error:
            continue
    return alive


def assert_nothing_left(mark: str) -> None:
    left = marked_alive(mark)
    for p in left:
        p.kill()
    assert not left, f"processes left behind: {[(p.pid, p.cmdline()) for p in left]}"


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "cells.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_two_nodes_on_one_machine_form_one_group_and_only_node_zero_records(tmp_path: Path) -> None:
    port = free_port()
    common = dict(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), HPUBENCH_DDP_CHECK="1")
    env0 = clean_env(NODE_RANK="0", **common)
    env1 = {**env0, "NODE_RANK": "1"}
    args = ["run", "-w", "mlp", "--nodes", "2", *QUICK, "--timeout", "150"]
    node1 = start([*args, "-o", str(tmp_path / "node1")], env1, tmp_path)
    node0 = start([*args, "-o", str(tmp_path / "node0")], env0, tmp_path)
    _, err0 = node0.communicate(timeout=240)
    _, err1 = node1.communicate(timeout=240)
    assert node0.returncode == 0, err0[-3000:]
    assert node1.returncode == 0, err1[-3000:]

    (rec,) = records(tmp_path / "node0")
    assert rec["status"] == "ok" and rec["key"] == "mlp/tiny/cpu/1x2/32-true/eager/nographs/bsdefault"
    dist = rec["runtime"]["distributed"]
    assert dist["world_size"] == 2 and dist["nodes"] == 2 and dist["local_world_size"] == 1
    assert [(r["rank"], r["node_rank"], r["local_rank"]) for r in dist["ranks"]] == [(0, 0, 0), (1, 1, 0)]
    checks = dist["replica_check"]
    assert checks[0]["param_digest"] == checks[1]["param_digest"]  # one model across the two "nodes"
    assert checks[0]["local_grad"] != checks[1]["local_grad"]
    assert rec["metrics"]["samples_per_step"] == 2 * rec["runtime"]["batch_size"]
    assert (tmp_path / "node0" / "meta.json").exists()

    # node 1 trained too, but stores nothing and says so
    assert not (tmp_path / "node1" / "cells.jsonl").exists()
    assert not (tmp_path / "node1" / "meta.json").exists()
    assert "node 0 writes every record" in err1
    assert list((tmp_path / "node1" / "logs").glob("*.node1.log"))
    assert_nothing_left(env0[MARK])


RANK_BOOM = textwrap.dedent(
    """
    import os
    from workloads import register
    from workloads.mlp import MLP

    @register
    class RankBoom(MLP):
        name = "rankboom"
        calls = 0

        def loss(self, model, batch):
            self.calls += 1
            if os.environ.get("RANK") == "1" and self.calls > 2:
                raise RuntimeError("rank 1 exploded on purpose")
            return super().loss(model, batch)
    """
)


@pytest.mark.slow
def test_a_rank_that_raises_fails_its_cell_with_that_reason(tmp_path: Path) -> None:
    (tmp_path / "boom.py").write_text(RANK_BOOM)
    env = clean_env()
    run = tmp_path / "run"
    args = ["run", "-w", "rankboom", "--devices", "2", *QUICK, "--timeout", "120", "-o", str(run)]
    args += ["--workloads-from", str(tmp_path / "boom.py")]
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "hpubench", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert time.monotonic() - t0 < 300
    assert proc.returncode == 1, proc.stderr[-3000:]
    (boom,) = records(run)
    assert boom["status"] == "failed"
    reason = boom["reason"]
    assert reason.startswith("rank 1 failed: RuntimeError: rank 1 exploded on purpose"), reason
    assert "rank 0" in reason  # the rank the failure took down with it is named too
    assert "Traceback" in boom["traceback_tail"] and "exploded on purpose" in boom["traceback_tail"]
    assert boom["wall_s"] < 120
    assert boom["runtime"]["distributed"]["launch"]["nproc_per_node"] == 2
    assert_nothing_left(env[MARK])


@pytest.mark.slow
@pytest.mark.serial
def test_node_one_never_starting_fails_the_cell_within_its_timeout(tmp_path: Path) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text(
        'workload = "mlp"\nsteps = 3\nwarmup_steps = 1\n[[grid]]\nnodes = 2\n[[grid]]\nnodes = 1\n'
    )
    env = clean_env(NODE_RANK="0", MASTER_PORT=str(free_port()))
    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "hpubench", "run", "-m", str(matrix), "-o", str(run), "--timeout", "15"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    lonely, single = records(run)
    assert lonely["status"] == "failed" and lonely["cell"]["nodes"] == 2
    assert "waiting for node 1 to join" in lonely["reason"] and "1 of 2 nodes joined" in lonely["reason"]
    assert lonely["wall_s"] <= 15 + 1
    assert single["status"] == "ok"  # the matrix went on
    assert_nothing_left(env[MARK])


@pytest.mark.parametrize(
    ("env", "args", "needle"),
    [
        ({"NODE_RANK": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}, [], "NODE_RANK=2 but"),
        ({"NODE_RANK": "1", "MASTER_PORT": "29500"}, [], "MASTER_ADDR is not set on node 1"),
        ({"NODE_RANK": "0"}, [], "MASTER_PORT is not set"),
        ({"MASTER_PORT": "29500"}, ["--node-rank", "3"], "--node-rank=3 but"),
        ({"MASTER_PORT": "99999"}, [], "MASTER_PORT=99999 is not a TCP port"),
        ({"SLURM_JOB_ID": "9", "SLURM_PROCID": "5", "SLURM_NNODES": "2", "SLURM_NTASKS": "8"}, [], "ntasks"),
    ],
)
def test_bad_multi_node_setup_is_one_line_and_exit_2(
    tmp_path: Path, env: dict[str, str], args: list[str], needle: str
) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hpubench",
            "run",
            "-w",
            "mlp",
            "--nodes",
            "2",
            "-o",
            str(tmp_path / "r"),
            *args,
        ],
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], proc.stderr
    assert not (tmp_path / "r").exists()


def test_port_in_use_on_node_zero_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "hpubench", "run", "-w", "mlp", "--nodes", "2", "-o", str(tmp_path / "r")],
            env=clean_env(NODE_RANK="0", MASTER_PORT=str(port)),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"MASTER_PORT={port} is already in use on node 0" in lines[0]


@pytest.mark.slow
def test_world_size_that_contradicts_the_matrix_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hpubench", "run", "-w", "mlp", "--nodes", "2", "-o", str(tmp_path / "r")],
        env=clean_env(NODE_RANK="0", MASTER_PORT=str(free_port()), WORLD_SIZE="4"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "WORLD_SIZE=4 (total processes = nodes x devices)" in lines[0], proc.stderr
    assert "2 nodes x 1 devices = 2" in lines[0]
