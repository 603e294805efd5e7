"""The reference workloads: they train, they are deterministic, their sizes and FLOP counts are honest."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

import pytest
import torch
from torch import nn

import workloads
from workloads.base import Workload
from workloads.flops import count_flops

BUILTINS = ("bert", "gpt", "llama", "mlp", "resnet")
# Classes the tiny sizes choose between (vocabulary size for the language models): at init the loss
# must be close to ln of this, or the initialisation or the loss is wrong.
TINY_CLASSES = {"mlp": 10, "resnet": 10, "gpt": 512, "bert": 1024, "llama": 8192}
CPU = torch.device("cpu")
META = torch.device("meta")


@pytest.fixture(autouse=True)
def _registry_restored() -> Iterator[None]:
    saved = dict(workloads.registry._REGISTRY)
    yield
    workloads.registry._REGISTRY.clear()
    workloads.registry._REGISTRY.update(saved)


@pytest.fixture(autouse=True)
def _few_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(min(before, 2))
    yield
    torch.set_num_threads(before)


def _tiny_setup(name: str, seed: int) -> tuple[Workload, nn.Module, tuple[torch.Tensor, ...]]:
    wl = workloads.get(name)
    torch.manual_seed(seed)
    model = wl.build_model("tiny")
    gen = torch.Generator().manual_seed(seed)
    return wl, model, wl.make_batch("tiny", wl.sizes["tiny"].batch_size, CPU, gen)


def _param_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())  # parameters() counts tied weights once


def _meta_model(wl: Workload, size: str) -> nn.Module:
    with META:
        return wl.build_model(size)


def test_builtins_register_on_import() -> None:
    assert set(BUILTINS) <= set(workloads.names())
    for name in BUILTINS:
        assert workloads.catalog()[name][:2] == ("tiny", "standard")


@pytest.mark.parametrize("name", BUILTINS)
def test_tiny_step_trains_every_parameter(name: str) -> None:
    wl, model, batch = _tiny_setup(name, seed=0)
    loss = wl.loss(model, batch)
    assert loss.dim() == 0 and torch.isfinite(loss)
    assert loss.item() == pytest.approx(math.log(TINY_CLASSES[name]), rel=0.15)
    loss.backward()
    dead = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not dead, f"no gradient reaches {dead}"


@pytest.mark.parametrize("name", BUILTINS)
def test_optimizer_steps_reduce_loss_on_a_fixed_batch(name: str) -> None:
    """The class's optimizer and lr must at least fit one batch: a guard against diverging defaults."""
    wl, model, batch = _tiny_setup(name, seed=1)
    if wl.optimizer == "sgd":
        opt: torch.optim.Optimizer = torch.optim.SGD(model.parameters(), lr=wl.lr, momentum=0.9)
    else:
        assert wl.optimizer == "adamw"
        opt = torch.optim.AdamW(model.parameters(), lr=wl.lr)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = wl.loss(model, batch)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("name", BUILTINS)
def test_same_seed_same_batch_and_loss(name: str) -> None:
    wl, model_a, batch_a = _tiny_setup(name, seed=7)
    _, model_b, batch_b = _tiny_setup(name, seed=7)
    assert len(batch_a) == len(batch_b)
    assert all(torch.equal(a, b) for a, b in zip(batch_a, batch_b, strict=True))
    assert torch.equal(wl.loss(model_a, batch_a), wl.loss(model_b, batch_b))


@pytest.mark.parametrize("name", BUILTINS)
def test_different_seeds_give_different_batches(name: str) -> None:
    _, _, batch_a = _tiny_setup(name, seed=1)
    _, _, batch_b = _tiny_setup(name, seed=2)
    assert not all(torch.equal(a, b) for a, b in zip(batch_a, batch_b, strict=True))


@pytest.mark.parametrize("name", BUILTINS)
@pytest.mark.parametrize("size", ["tiny", "standard"])
def test_everything_works_on_meta_without_a_generator(name: str, size: str) -> None:
    wl = workloads.get(name)
    model = _meta_model(wl, size)
    assert all(p.is_meta for p in model.parameters())
    batch = wl.make_batch(size, 2, META, None)
    assert all(t.is_meta and t.shape[0] == 2 for t in batch)
    loss = wl.loss(model, batch)
    assert loss.is_meta and loss.dim() == 0


@pytest.mark.parametrize("name", BUILTINS)
def test_unknown_size_is_a_value_error(name: str) -> None:
    wl = workloads.get(name)
    with pytest.raises(ValueError, match="huge"):
        wl.build_model("huge")
    with pytest.raises(ValueError, match="huge"):
        wl.make_batch("huge", 2, META, None)
    with pytest.raises(ValueError, match="huge"):
        count_flops(wl, "huge", 2)


@pytest.mark.parametrize(
    ("name", "expected", "rel"),
    [
        ("resnet", 25.6e6, 0.05),
        ("gpt", 124e6, 0.05),
        ("bert", 110e6, 0.05),
        ("mlp", 10.0e6, 0.05),
    ],
)
def test_standard_sizes_have_the_advertised_parameter_count(name: str, expected: float, rel: float) -> None:
    assert _param_count(_meta_model(workloads.get(name), "standard")) == pytest.approx(expected, rel=rel)


def test_resnet50_and_gpt2_small_match_their_reference_counts_exactly() -> None:
    # The published totals: ResNet-50 v1.5 (torchvision) and GPT-2 small with its tied LM head.
    assert _param_count(_meta_model(workloads.get("resnet"), "standard")) == 25_557_032
    assert _param_count(_meta_model(workloads.get("gpt"), "standard")) == 124_439_808


@pytest.mark.parametrize("name", BUILTINS)
@pytest.mark.parametrize("size", ["tiny", "standard"])
def test_size_descriptions_state_the_real_parameter_count(name: str, size: str) -> None:
    wl = workloads.get(name)
    found = re.search(r"([\d.]+)([KM]) params", wl.sizes[size].description)
    assert found, f"description of {name}/{size} does not state 'N.NM params'"
    stated = float(found.group(1)) * {"K": 1e3, "M": 1e6}[found.group(2)]
    assert _param_count(_meta_model(wl, size)) == pytest.approx(stated, rel=0.05)


@pytest.mark.parametrize("name", BUILTINS)
def test_tokens_per_sample(name: str) -> None:
    wl = workloads.get(name)
    for size in ("tiny", "standard"):
        tokens = wl.tokens_per_sample(size)
        if name in ("gpt", "bert", "llama"):
            assert tokens == wl.make_batch(size, 1, META, None)[0].shape[1]
        else:
            assert tokens is None


def test_bert_masks_fifteen_percent_and_ignores_the_rest() -> None:
    from workloads import bert

    wl = workloads.get("bert")
    gen = torch.Generator().manual_seed(0)
    input_ids, token_type_ids, labels = wl.make_batch("tiny", 4, CPU, gen)
    masked = labels != -100
    seq_len = input_ids.shape[1]
    assert (masked.sum(dim=1) == round(0.15 * seq_len)).all()
    assert (input_ids[masked] == bert.MASK_ID).all()
    assert (input_ids[~masked] >= bert.FIRST_WORD_ID).all() and (labels[masked] >= bert.FIRST_WORD_ID).all()
    assert set(token_type_ids.unique().tolist()) == {0, 1}


def test_gpt_targets_are_the_inputs_shifted_by_one() -> None:
    inputs, targets = workloads.get("gpt").make_batch("tiny", 2, CPU, torch.Generator().manual_seed(0))
    assert torch.equal(inputs[:, 1:], targets[:, :-1])


@pytest.mark.parametrize("name", BUILTINS)
def test_flops_are_positive_ints_linear_in_batch_size(name: str) -> None:
    wl = workloads.get(name)
    one = count_flops(wl, "tiny", 4)
    two = count_flops(wl, "tiny", 8)
    assert isinstance(one, int) and one > 0
    assert two == pytest.approx(2 * one, rel=0.01)


@pytest.mark.parametrize("name", BUILTINS)
def test_flops_of_standard_sizes_count_on_meta(name: str) -> None:
    wl = workloads.get(name)
    flops = count_flops(wl, "standard", wl.sizes["standard"].batch_size)
    # At least forward + backward of every non-embedding weight once per sample.
    assert isinstance(flops, int) and flops > 4 * 1e6 * wl.sizes["standard"].batch_size


@pytest.mark.parametrize("size", ["tiny", "standard"])
def test_mlp_flops_match_the_linear_layer_formula(size: str) -> None:
    """Per linear layer: forward 2*in*out*B, weight grad 2*in*out*B, input grad 2*in*out*B except for
    the first layer, whose input (the data) needs no gradient. Biases and activations count nothing."""
    wl = workloads.get("mlp")
    batch = 32
    shapes = [
        (m.in_features, m.out_features) for m in _meta_model(wl, size).modules() if isinstance(m, nn.Linear)
    ]
    macs = sum(i * o for i, o in shapes)
    first = shapes[0][0] * shapes[0][1]
    assert count_flops(wl, size, batch) == 6 * macs * batch - 2 * first * batch


def test_count_flops_rejects_a_bad_batch_size() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        count_flops(workloads.get("mlp"), "tiny", 0)
