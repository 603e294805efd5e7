"""The ``llama`` workload: the published sizes, the FLOP count against the analytic formula, and the
Llama ingredients (grouped-query attention, rotary positions) doing what they claim."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
import torch
from torch import nn

import workloads
from workloads import llama
from workloads.flops import count_flops

META = torch.device("meta")
CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def _few_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(min(before, 2))
    yield
    torch.set_num_threads(before)


def _params(size: str, **options: str) -> int:
    with META:
        model = workloads.get("llama", options).build_model(size)
    return sum(p.numel() for p in model.parameters())  # a tied head counts once


def analytic_flops(cfg: llama.LlamaConfig, batch_size: int) -> int:
    """6 * N * tokens + 12 * L * T * d * tokens.

    N: the weights that multiply activations, every Linear and the LM head (the embedding lookup is a
    gather: no FLOPs; a tied head still multiplies). Attention term: per layer and token, the scores q.k
    over T keys and the weighted sum of T values, 2 * 2 * T * d forward, times 3 for forward + backward:
    12 * L * T * d, over the whole T x T matrix as the meta count does (a causal kernel may skip half).
    """
    d, kv = cfg.hidden, cfg.kv_heads * cfg.head_dim
    n = cfg.layers * (2 * d * d + 2 * d * kv + 3 * d * cfg.intermediate) + d * cfg.vocab
    tokens = batch_size * cfg.seq_len
    return 6 * n * tokens + 12 * cfg.layers * cfg.seq_len * cfg.heads * cfg.head_dim * tokens


def test_sizes_match_the_published_parameter_counts() -> None:
    # Llama-3.2-1B (tied embeddings) and Llama-3.1-8B (untied), as their config.json describe them.
    assert _params("standard") == 1_235_814_400
    assert _params("large") == 8_030_261_248
    assert 1e6 < _params("tiny") < 5e6
    assert llama.CONFIGS["standard"].tied and not llama.CONFIGS["large"].tied


@pytest.mark.parametrize("size", ["tiny", "standard"])
def test_flops_match_six_n_tokens_plus_attention_within_two_percent(size: str) -> None:
    wl = workloads.get("llama")
    batch = wl.sizes[size].batch_size
    counted = count_flops(wl, size, batch)
    expected = analytic_flops(llama.CONFIGS[size], batch)
    assert counted == pytest.approx(expected, rel=0.02), (counted, expected)


def test_seq_len_option_reaches_the_batch_the_flops_and_the_token_count() -> None:
    wl = workloads.get("llama", {"seq_len": "32"})
    inputs, targets = wl.make_batch("tiny", 2, META, None)
    assert inputs.shape == targets.shape == (2, 32)
    assert wl.tokens_per_sample("tiny") == 32
    cfg = llama.config("tiny", seq_len=32)
    assert count_flops(wl, "tiny", 2) == pytest.approx(analytic_flops(cfg, 2), rel=0.02)


@pytest.mark.parametrize("bad", ["0", "-3", "long"])
def test_a_bad_seq_len_is_one_value_error_naming_the_option(bad: str) -> None:
    with pytest.raises(ValueError, match=r"option seq_len takes a positive integer.*--option seq_len="):
        workloads.get("llama", {"seq_len": bad}).make_batch("tiny", 2, META, None)


def test_tiny_trains_every_parameter_from_a_loss_near_ln_vocab() -> None:
    wl = workloads.get("llama")
    torch.manual_seed(0)
    model = wl.build_model("tiny")
    batch = wl.make_batch("tiny", 8, CPU, torch.Generator().manual_seed(0))
    opt = torch.optim.AdamW(model.parameters(), lr=wl.lr)
    losses = []
    for step in range(4):
        opt.zero_grad()
        loss = wl.loss(model, batch)
        loss.backward()
        if step == 0:
            dead = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
            assert not dead, f"no gradient reaches {dead}"
        opt.step()
        losses.append(loss.item())
    assert losses[0] == pytest.approx(math.log(llama.CONFIGS["tiny"].vocab), rel=0.05)
    assert losses[-1] < losses[0]


def test_grouped_query_attention_shares_kv_heads_and_both_paths_agree(monkeypatch) -> None:
    cfg = llama.CONFIGS["tiny"]
    torch.manual_seed(0)
    attn = llama.Attention(cfg)
    assert attn.k.out_features == attn.v.out_features == cfg.kv_heads * cfg.head_dim < attn.q.out_features
    x = torch.randn(2, 16, cfg.hidden)
    cos, sin = llama.rotary_tables(cfg, 16, CPU)
    fused = attn(x, cos, sin)
    monkeypatch.setattr(llama, "_SDPA_GQA", False)  # the torch < 2.5 path: KV heads repeated
    assert torch.allclose(attn(x, cos, sin), fused, atol=1e-5)


def test_rotary_scores_depend_on_the_offset_only() -> None:
    """q at position m and k at position n score as a function of n - m: what makes RoPE relative."""
    cfg = llama.CONFIGS["tiny"]
    cos, sin = llama.rotary_tables(cfg, 40, CPU)
    q, k = torch.randn(cfg.head_dim), torch.randn(cfg.head_dim)

    def score(m: int, n: int) -> float:
        rq = llama.apply_rotary(q.view(1, 1, 1, -1), cos[m], sin[m])
        rk = llama.apply_rotary(k.view(1, 1, 1, -1), cos[n], sin[n])
        return float((rq * rk).sum())

    assert score(3, 10) == pytest.approx(score(23, 30), rel=1e-4)
    assert score(3, 10) != pytest.approx(score(3, 11), rel=1e-3)


def test_causal_outputs_ignore_later_tokens() -> None:
    wl = workloads.get("llama")
    torch.manual_seed(0)
    model: nn.Module = wl.build_model("tiny")
    inputs, _ = wl.make_batch("tiny", 1, CPU, torch.Generator().manual_seed(0))
    changed = inputs.clone()
    changed[0, -1] = (changed[0, -1] + 1) % llama.CONFIGS["tiny"].vocab
    with torch.no_grad():
        a, b = model(inputs), model(changed)
    assert torch.allclose(a[0, :-1], b[0, :-1], atol=1e-5) and not torch.allclose(a[0, -1], b[0, -1])
