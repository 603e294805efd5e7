"""C14: the bridge registers ``hccl`` for HPU tensors only (``register_backend("hccl", ...,
devices=["hpu"], extended_api=True)``, ``distributed/hccl/__init__.py`` 1.19): a collective on host tensors
in an hccl group fails in torch ("No backend type associated with device type cpu"); object collectives
and barriers go through the device. hpubench's DDP cells exchange only through those."""

from __future__ import annotations

import datetime

import pytest
import torch
import torch.distributed as dist


@pytest.fixture
def hccl_group(bridge, tmp_path):
    bridge(PT_HPU_LAZY_MODE="0")
    import habana_frameworks.torch.distributed.hccl  # noqa: F401  (registers the backend)

    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("hccl", store=store, rank=0, world_size=1, timeout=datetime.timedelta(seconds=60))
    try:
        yield dist.group.WORLD
    finally:
        dist.destroy_process_group()
        from habana_frameworks import _cards

        _cards.release()


def test_a_host_tensor_in_an_hccl_collective_is_refused(hccl_group) -> None:
    with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
        dist.all_reduce(torch.ones(3))


def test_hpu_tensors_objects_and_barriers_go_through(hccl_group) -> None:
    x = torch.ones(3, device="hpu")
    dist.all_reduce(x)
    assert x.device.type == "hpu" and x.cpu().tolist() == [1.0, 1.0, 1.0]
    out: list[object] = [None]
    dist.all_gather_object(out, {"rank": 0})
    assert out == [{"rank": 0}]
    dist.barrier()
