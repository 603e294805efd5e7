"""Environment variables: threads, heap, autocast op lists, multi-node, plugin imports, shards."""

from __future__ import annotations

from tests.badinput.cases.table import RUN, add

for value in ["some", "-1", "0", "cores-2", "ALL", "1.5", "pinned-ish"]:
    add(
        "env",
        f"HPUBENCH_CPU_THREADS={value}",
        [*RUN, "-w", "mlp", "-a", "cpu"],
        "HPUBENCH_CPU_THREADS",
        env={"HPUBENCH_CPU_THREADS": value},
    )
for value in ["fixed", "Steady", "0", "jemalloc"]:
    add(
        "env",
        f"HPUBENCH_MALLOC={value}",
        [*RUN, "-w", "mlp", "-a", "cpu"],
        "HPUBENCH_MALLOC",
        env={"HPUBENCH_MALLOC": value},
    )
for var in [
    "PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST",
    "LOWER_LIST",
    "PT_HPU_AUTOCAST_FP32_OPS_LIST",
    "FP32_LIST",
]:
    add("env", f"{var} missing file", [*RUN, "-w", "mlp"], var, env={var: "missing_ops.txt"})
    add(
        "env",
        f"{var} empty file",
        [*RUN, "-w", "mlp"],
        var,
        env={var: "empty_ops.txt"},
        files={"empty_ops.txt": ""},
    )
    add("env", f"{var} a directory", [*RUN, "-w", "mlp"], var, env={var: "opsdir"}, files={"opsdir/x": "add"})
for target, alias in [
    ("PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST", "LOWER_LIST"),
    ("PT_HPU_AUTOCAST_FP32_OPS_LIST", "FP32_LIST"),
]:
    add(
        "env",
        f"both {target} and {alias}",
        [*RUN, "-w", "mlp"],
        alias,
        env={target: "a.txt", alias: "b.txt"},
        files={"a.txt": "add\n", "b.txt": "mul\n"},
    )
MULTI = [*RUN, "-w", "mlp", "-a", "cpu", "--nodes", "2"]
for env, fragment in [
    ({"NODE_RANK": "x", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}, "NODE_RANK"),
    ({"NODE_RANK": "-1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}, "NODE_RANK"),
    ({"NODE_RANK": "5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}, "NODE_RANK"),
    ({"NODE_RANK": "1.5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}, "NODE_RANK"),
    ({"NODE_RANK": "1", "MASTER_PORT": "29500"}, "MASTER_ADDR"),
    ({"NODE_RANK": "1", "MASTER_ADDR": " ", "MASTER_PORT": "29500"}, "MASTER_ADDR"),
    ({"NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "x"}, "MASTER_PORT"),
    ({"NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "0"}, "MASTER_PORT"),
    ({"NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "70000"}, "MASTER_PORT"),
    ({"NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1"}, "MASTER_PORT"),
    ({"NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500", "WORLD_SIZE": "x"}, "WORLD_SIZE"),
    # Names under .invalid never resolve (RFC 2606): refused at once, not after a rendezvous timeout.
    ({"NODE_RANK": "1", "MASTER_ADDR": "nosuchhost.invalid", "MASTER_PORT": "29500"}, "does not resolve"),
    ({"NODE_RANK": "0", "MASTER_ADDR": "nosuchhost.invalid", "MASTER_PORT": "29500"}, "does not resolve"),
    ({"NODE_RANK": "1", "MASTER_ADDR": "node0.invalid.", "MASTER_PORT": "29500"}, "MASTER_ADDR"),
    ({"NODE_RANK": "1", "MASTER_ADDR": "bad host.invalid", "MASTER_PORT": "29500"}, "does not resolve"),
    (
        {"SLURM_JOB_ID": "77", "SLURM_NODEID": "1", "SLURM_JOB_NODELIST": "n[1-2].invalid"},
        "SLURM_JOB_NODELIST",
    ),
]:
    label = " ".join(f"{k}={v}" for k, v in env.items())
    add("env", label, MULTI, fragment, env=env)
add(
    "cli",
    "run --master-addr unresolvable",
    [*MULTI, "--node-rank", "1", "--master-addr", "nosuchhost.invalid", "--master-port", "29500"],
    "--master-addr 'nosuchhost.invalid' does not resolve",
)

# A plugin import's time limit (hpubench.plugins.files): a positive, finite number of seconds.
for value in ["0", "-1", "abc", "nan", "inf", "1e400", "5s", "100000"]:
    add(
        "env",
        f"HPUBENCH_PLUGIN_IMPORT_TIMEOUT={value}",
        [*RUN, "-w", "mlp", "--workloads-from", "p.py"],
        "HPUBENCH_PLUGIN_IMPORT_TIMEOUT",
        env={"HPUBENCH_PLUGIN_IMPORT_TIMEOUT": value},
        files={"p.py": "import time\ntime.sleep(3600)\n"},
    )

# A rank's wait on collectives (hpubench.strategy.pgtimeout): refused before any rank starts.
for value in ["abc", "0", "-5", "nan", "inf", "1e9"]:
    add(
        "env",
        f"HPUBENCH_PG_TIMEOUT_S={value}",
        [*RUN, "-w", "mlp", "--devices", "2"],
        "HPUBENCH_PG_TIMEOUT_S",
        env={"HPUBENCH_PG_TIMEOUT_S": value},
    )

# Shards (hpubench.plan.shard): --shard K/N numbered from 1, or a Slurm job array's environment.
for value in ["3/2", "0/0", "a/b", "", "1/0", "0/3", "2", "-1/3", "1/2/3"]:
    add("cli", f"run --shard {value!r}", [*RUN, "--shard", value], "--shard")
for env, fragment in [
    ({"SLURM_ARRAY_TASK_ID": "abc", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0"}, "TASK_ID"),
    # a Kubernetes Indexed Job's pod (docs/kubernetes.md)
    ({"JOB_COMPLETION_INDEX": "0"}, "HPUBENCH_SHARD_COUNT is not"),
    ({"JOB_COMPLETION_INDEX": "one", "HPUBENCH_SHARD_COUNT": "3"}, "JOB_COMPLETION_INDEX='one'"),
    ({"JOB_COMPLETION_INDEX": "3", "HPUBENCH_SHARD_COUNT": "3"}, "outside the Job's 3 completions"),
    ({"JOB_COMPLETION_INDEX": "0", "HPUBENCH_SHARD_COUNT": "-2"}, "HPUBENCH_SHARD_COUNT=-2"),
    ({"SLURM_ARRAY_TASK_ID": "1"}, "SLURM_ARRAY_TASK_COUNT"),
    ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "x", "SLURM_ARRAY_TASK_MIN": "0"}, "TASK_COUNT"),
    ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "?"}, "TASK_MIN"),
    ({"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0"}, "outside"),
    (
        {
            "SLURM_ARRAY_TASK_ID": "1",
            "SLURM_ARRAY_TASK_COUNT": "3",
            "SLURM_ARRAY_TASK_MIN": "0",
            "SLURM_ARRAY_TASK_MAX": "9",
        },
        "gaps",
    ),
]:
    add("env", " ".join(f"{k}={v}" for k, v in env.items()), [*RUN, "-w", "mlp"], fragment, env=env)
