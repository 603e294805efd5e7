"""Which cells of several ranks the numerics check can judge, and the one-device replay of their step."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hpubench.run.cellrun.rankref import RankLosses, mean_over_ranks, model_obstacle, why_unchecked
from hpubench.run.cellrun.reference import RankMean, concat_ranks


def ranks(*sizes: int, reproducible: bool = True, obstacle: str | None = None) -> list[RankLosses]:
    return [RankLosses(r, (2.0 + r, 1.0 + r), b, reproducible, obstacle) for r, b in enumerate(sizes)]


def test_equal_ranks_of_seeded_data_are_checkable():
    assert why_unchecked(ranks(8, 8), True, "mlp") is None


def test_what_one_device_cannot_replay_stays_unchecked_with_its_reason():
    assert "not reproducible from the seed" in why_unchecked(ranks(8, 8), False, "mine")
    assert "unequal batch sizes" in why_unchecked(ranks(8, 4), True, "mlp")
    assert "dropout" in why_unchecked(ranks(8, 8, obstacle="dropout (p=0.1)"), True, "hf:gpt2")
    assert "rank(s) [0, 1]" in why_unchecked(ranks(8, 8, reproducible=False), True, "mlp")


def test_the_cells_loss_is_the_mean_over_ranks_of_the_steps_every_rank_has():
    two = [RankLosses(0, (2.0, 1.0, 0.5), 8, True), RankLosses(1, (4.0, 3.0), 8, True)]
    assert mean_over_ranks(two) == (3.0, 2.0)
    assert mean_over_ranks([]) == ()
    assert mean_over_ranks([RankLosses(0, (float("nan"),), 8, True)])[0] != 0.0


def test_dropout_and_syncbatchnorm_are_obstacles_batchnorm_is_not():
    assert model_obstacle(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))) is None
    assert model_obstacle(nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.0))) is None
    assert "dropout" in model_obstacle(nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1)))
    assert "SyncBatchNorm" in model_obstacle(nn.Sequential(nn.SyncBatchNorm(2)))


def test_the_ranks_batches_concatenate_step_by_step_tensor_by_tensor():
    a = [(torch.zeros(2, 3), torch.zeros(2)), (torch.ones(2, 3), torch.ones(2))]
    b = [(torch.full((2, 3), 5.0), torch.full((2,), 5.0)), (torch.full((2, 3), 6.0), torch.full((2,), 6.0))]
    out = concat_ranks([a, b])
    assert len(out) == 2 and out[0][0].shape == (4, 3) and out[0][1].tolist() == [0, 0, 5, 5]
    assert out[1][0][:, 0].tolist() == [1, 1, 6, 6]
    with pytest.raises(ValueError, match="different numbers"):
        concat_ranks([a, a[:1]])


class Summed:
    """A workload whose loss is a sum (not a mean) and whose model normalises over its batch."""

    lr = 0.1

    def loss(self, model: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return (model(batch[0]) * batch[0]).sum()


def test_the_replayed_loss_is_the_ranks_mean_whatever_the_reduction_and_batch_statistics():
    model = nn.BatchNorm1d(3, affine=False)
    x0, x1 = torch.randn(4, 3).square(), torch.randn(4, 3).square()
    mean = RankMean(Summed(), 2)
    got = mean.loss(model, (torch.cat([x0, x1]),))
    want = (Summed().loss(model, (x0,)) + Summed().loss(model, (x1,))) / 2
    assert torch.allclose(got, want)
    assert mean.lr == 0.1  # everything else is the workload's own
