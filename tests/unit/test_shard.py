"""Shards of a matrix (hpubench.plan.shard): K/N parsing, Slurm job-array numbering, and a partition that is
the same whatever order the cells come in, covers every cell once and balances the cost."""

from __future__ import annotations

import random

import pytest

from hpubench.errors import UsageError
from hpubench.plan.shard import Shard, digest, loads, parse_shard, partition, resolve, shard_from_env


@pytest.mark.parametrize(("text", "k", "n"), [("1/3", 1, 3), ("3/3", 3, 3), (" 2 / 5 ", 2, 5), ("1/1", 1, 1)])
def test_parse_shard(text: str, k: int, n: int) -> None:
    s = parse_shard(text)
    assert (s.index, s.count) == (k, n)


@pytest.mark.parametrize("text", ["3/2", "0/0", "0/3", "a/b", "1/0", "-1/3", "2", "1/3/4", "", "1.5/3"])
def test_parse_shard_refuses(text: str) -> None:
    with pytest.raises(UsageError, match="--shard"):
        parse_shard(text)


def _env(task: int, count: int, first: int, step: int = 1) -> dict[str, str]:
    return {
        "SLURM_ARRAY_TASK_ID": str(task),
        "SLURM_ARRAY_TASK_COUNT": str(count),
        "SLURM_ARRAY_TASK_MIN": str(first),
        "SLURM_ARRAY_TASK_MAX": str(first + (count - 1) * step),
        "SLURM_ARRAY_TASK_STEP": str(step),
    }


@pytest.mark.parametrize(
    ("env", "k", "n"),
    [
        (_env(0, 3, 0), 1, 3),  # --array=0-2: task 0 is shard 1
        (_env(2, 3, 0), 3, 3),
        (_env(1, 3, 1), 1, 3),  # --array=1-3
        (_env(12, 5, 10), 3, 5),  # --array=10-14
        (_env(8, 3, 0, step=4), 3, 3),  # --array=0-8:4
    ],
)
def test_shard_from_slurm(env: dict[str, str], k: int, n: int) -> None:
    s = shard_from_env(env)
    assert s is not None and (s.index, s.count) == (k, n)
    assert "SLURM_ARRAY_TASK_ID" in s.source


def test_every_task_of_an_array_gets_its_own_shard() -> None:
    got = sorted(shard_from_env(_env(t, 4, 7)).index for t in range(7, 11))  # type: ignore[union-attr]
    assert got == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "3"}, "SLURM_ARRAY_TASK_ID"),
        ({"SLURM_ARRAY_TASK_ID": "1"}, "SLURM_ARRAY_TASK_COUNT"),
        ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "two"}, "SLURM_ARRAY_TASK_COUNT"),
        ({**_env(5, 3, 0)}, "outside the array"),
        ({**_env(1, 3, 0), "SLURM_ARRAY_TASK_MAX": "9"}, "gaps"),  # --array=0,1,9
        ({**_env(1, 3, 0, step=2)}, "outside the array"),  # id 1 is not in 0,2,4
        ({**_env(0, 3, 0), "SLURM_ARRAY_TASK_COUNT": "0"}, "not a job array"),
        ({**_env(1, 10**20, 0)}, "more than 100000 shards"),
    ],
)
def test_bad_slurm_environment(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment):
        shard_from_env(env)


def test_option_wins_over_the_environment_and_one_shard_is_everything() -> None:
    assert resolve("2/3", {"SLURM_ARRAY_TASK_ID": "garbage"}) == Shard(2, 3, "--shard")
    assert resolve(None, {}) is None
    assert resolve("1/1", _env(0, 3, 0)) is None


def test_partition_covers_every_cell_once_whatever_the_order() -> None:
    rng = random.Random(7)
    items = [(f"cell{i:02d}", rng.choice([5, 5, 100, 1000, 30])) for i in range(40)]
    first = dict(zip([k for k, _ in items], partition(items, 3), strict=True))
    for _ in range(5):
        shuffled = items[:]
        rng.shuffle(shuffled)
        again = dict(zip([k for k, _ in shuffled], partition(shuffled, 3), strict=True))
        assert again == first
    assert set(first.values()) == {1, 2, 3}
    keys = list(first)
    assert digest(keys, [first[k] for k in keys], 3) == digest(keys[::-1], [first[k] for k in keys[::-1]], 3)


def test_partition_is_balanced_longest_first() -> None:
    items = [("a", 7), ("b", 5), ("c", 4), ("d", 3), ("e", 3), ("f", 2)]  # 24 in all
    shards = partition(items, 3)
    assert loads([c for _, c in items], shards, 3) == [9, 8, 7]  # a+f, b+e, c+d; the best is 8,8,8
    assert shards == [1, 2, 3, 3, 2, 1]


def test_equal_costs_are_spread_by_count_and_ties_broken_by_key() -> None:
    items = [(k, 0) for k in "edcba"]  # e.g. skipped cells: no cost, still one shard each
    shards = partition(items, 2)
    assert dict(zip("edcba", shards, strict=True)) == {"a": 1, "b": 2, "c": 1, "d": 2, "e": 1}


def test_more_shards_than_cells_leaves_some_empty() -> None:
    assert sorted(partition([("x", 1), ("y", 1)], 4)) == [1, 2]


def _pod(index: str, count: str | None) -> dict[str, str]:
    env = {"JOB_COMPLETION_INDEX": index}
    if count is not None:
        env["HPUBENCH_SHARD_COUNT"] = count
    return env


def test_every_pod_of_an_indexed_job_gets_its_own_shard() -> None:
    got = [shard_from_env(_pod(str(i), "4")) for i in range(4)]
    assert [(s.index, s.count) for s in got] == [(1, 4), (2, 4), (3, 4), (4, 4)]  # type: ignore[union-attr]
    assert "JOB_COMPLETION_INDEX=2 of 4" in got[2].source  # type: ignore[union-attr]
    assert resolve("1/2", _pod("3", "4")) == Shard(1, 2, "--shard")  # the flag wins, the pod's env unread
    assert resolve(None, _pod("0", "1")) is None  # one completion: the whole matrix


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        (_pod("0", None), "JOB_COMPLETION_INDEX is set but HPUBENCH_SHARD_COUNT is not"),
        (_pod("x", "4"), "JOB_COMPLETION_INDEX='x' is not a whole number"),
        (_pod("0", "four"), "HPUBENCH_SHARD_COUNT='four' is not a whole number"),
        (_pod("4", "4"), "JOB_COMPLETION_INDEX=4 is outside the Job's 4 completions"),
        (_pod("-1", "4"), "outside"),
        (_pod("0", "0"), "HPUBENCH_SHARD_COUNT=0"),
        ({**_pod("0", "2"), "SLURM_ARRAY_TASK_ID": "1"}, "both SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX"),
    ],
)
def test_a_pod_s_bad_shard_environment_is_one_line_naming_the_fix(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(UsageError, match="fix") as info:
        shard_from_env(env)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_the_kubernetes_page_s_job_sets_what_a_pod_reads() -> None:
    """docs/kubernetes.md's manifest: an Indexed Job whose HPUBENCH_SHARD_COUNT is its completions, each
    pod holding Gaudi modules and writing its own shard's directory."""
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (it comes with the hf extra)")
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "kubernetes.md").read_text()
    job = yaml.safe_load(page.split("```yaml\n", 1)[1].split("```", 1)[0])
    spec = job["spec"]
    assert job["kind"] == "Job" and spec["completionMode"] == "Indexed"
    (container,) = spec["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert int(env["HPUBENCH_SHARD_COUNT"]) == spec["completions"]
    assert container["resources"]["limits"]["habana.ai/gaudi"] >= 1
    command = " ".join(container["args"])
    assert "--out /results/shard-$JOB_COMPLETION_INDEX --resume" in command and "--shard" not in command
    n = spec["completions"]
    last = shard_from_env({"JOB_COMPLETION_INDEX": str(n - 1), **env})
    assert last == Shard(n, n, f"JOB_COMPLETION_INDEX={n - 1} of {n}")
