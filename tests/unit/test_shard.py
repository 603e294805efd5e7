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
