"""``gpt``: a decoder-only transformer language model, the reference for attention-bound training.

The standard size is GPT-2 small (124M parameters) so tokens/s can be set beside published figures.
Attention goes through ``scaled_dot_product_attention`` so every backend picks its own fused kernel;
there is no dropout, so a seeded step is exactly reproducible. Tokens are uniform noise: the
vocabulary-sized softmax and the matmuls cost the same whatever the text says.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from workloads.base import Batch, SizeSpec, Workload
from workloads.registry import register


@dataclass(frozen=True)
class _Config:
    n_layer: int
    n_head: int
    d_model: int
    seq_len: int
    vocab: int


_CONFIGS = {
    "tiny": _Config(n_layer=2, n_head=4, d_model=64, seq_len=64, vocab=512),
    "standard": _Config(n_layer=12, n_head=12, d_model=768, seq_len=1024, vocab=50257),
}


def _config(size: str) -> _Config:
    try:
        return _CONFIGS[size]
    except KeyError:
        raise ValueError(f"unknown size {size!r} for workload 'gpt'; known: {', '.join(_CONFIGS)}") from None


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: _Config) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_head, d // self.n_head).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, cfg: _Config) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, 4 * cfg.d_model),
            nn.GELU(approximate="tanh"),
            nn.Linear(4 * cfg.d_model, cfg.d_model),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, cfg: _Config) -> None:
        super().__init__()
        self.tok_emb = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.seq_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        self.head.weight = self.tok_emb.weight  # tied: GPT-2's parameter count depends on it
        self._init_weights(cfg)

    def _init_weights(self, cfg: _Config) -> None:
        # GPT-2's scheme: small normal weights keep initial logits near zero, so the first loss is
        # ~ln(vocab) (a check the tests rely on), and residual projections shrink with depth.
        for name, p in self.named_parameters():
            if p.dim() < 2:
                continue
            residual_out = name.endswith(("proj.weight", "mlp.2.weight"))
            std = 0.02 / math.sqrt(2 * cfg.n_layer) if residual_out else 0.02
            nn.init.normal_(p, mean=0.0, std=std)
        for m in self.modules():
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


@register
class GPTWorkload(Workload):
    name = "gpt"
    description = "Decoder-only transformer LM (pre-LN, causal SDPA, tied LM head), next-token prediction"
    sizes: ClassVar[dict[str, SizeSpec]] = {
        "tiny": SizeSpec(8, "GPT-tiny (2 layers, d=64): 0.14M params, seq 64, vocab 512"),
        "standard": SizeSpec(8, "GPT-2-small-class (12 layers, d=768): 124M params, seq 1024, vocab 50257"),
    }
    lr = 6e-4

    def build_model(self, size: str) -> nn.Module:
        return GPT(_config(size))

    def make_batch(
        self, size: str, batch_size: int, device: torch.device, generator: torch.Generator | None
    ) -> Batch:
        cfg = _config(size)
        shape = (batch_size, cfg.seq_len + 1)
        tokens = torch.randint(0, cfg.vocab, shape, generator=generator, device=device)
        # Dense copies rather than strided views of one buffer: what a real data loader would deliver.
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        inputs, targets = batch
        logits = model(inputs)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    def tokens_per_sample(self, size: str) -> int | None:
        return _config(size).seq_len
