"""``llama``: a Llama-class decoder (RMSNorm, rotary positions, SwiGLU, grouped-query attention).

The sizes follow the published Hugging Face configurations of Meta's models, so tokens/s and MFU can be
set beside vendors' Llama training figures:

- ``standard``: Llama-3.2-1B, 1.24B parameters: hidden 2048, 16 layers, 32 heads, 8 KV heads
  (head_dim 64), intermediate 8192, vocab 128256, tied embeddings, rope_theta 500000, RMSNorm eps 1e-5.
  Checked against the model's config.json as mirrored from meta-llama/Llama-3.2-1B, e.g.
  https://huggingface.co/Emm9625/Llama-3.2-1B-chatml/blob/main/config.json ("Duplicate from
  unsloth/Llama-3.2-1B", ``_name_or_path`` meta-llama/Llama-3.2-1B).
- ``large``: Llama-3.1-8B, 8.03B parameters: hidden 4096, 32 layers, 32 heads, 8 KV heads (head_dim
  128), intermediate 14336, vocab 128256, untied embeddings, rope_theta 500000, eps 1e-5. Checked against
  https://huggingface.co/NbAiLab/nb-llama-3.1-8B/blob/main/config.json (``_name_or_path``
  meta-llama/Llama-3.1-8B) and https://huggingface.co/mlx-community/Meta-Llama-3.1-8B-bf16 (config.json).
  With AdamW at fp32 it needs ~128 GiB for weights, gradients and optimizer states alone: on most devices
  the matrix skips it with its memory estimate (a sharded strategy is what trains it).
- ``tiny``: the same ingredients at 1.8M parameters (CI).

Left out, because they change neither the arithmetic nor the memory of a training step: Llama 3's
rope-frequency rescaling for long contexts (``rope_scaling`` type llama3) and dropout (there is none).
The sequence length is 2048 for the Llama sizes (``--option seq_len=N`` changes it per cell). Tokens are
uniform noise; the loss is next-token cross-entropy over the whole 128256-word vocabulary.

Written here in plain torch; attention goes through ``scaled_dot_product_attention`` so each backend
picks its fused kernel, with the KV heads shared by query groups inside the kernel where torch supports
it (``enable_gqa``, torch >= 2.5) and repeated before it otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from workloads.base import Batch, SizeSpec, Workload
from workloads.registry import register

SEQ_LEN = "seq_len"
_SDPA_GQA = torch.__version__ >= "2.5"  # scaled_dot_product_attention(enable_gqa=...) since 2.5


@dataclass(frozen=True)
class LlamaConfig:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    seq_len: int
    tied: bool
    rope_theta: float = 500000.0
    eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


CONFIGS: dict[str, LlamaConfig] = {
    "tiny": LlamaConfig(
        hidden=128, layers=4, heads=4, kv_heads=2, intermediate=384, vocab=8192, seq_len=64, tied=True
    ),
    "standard": LlamaConfig(
        hidden=2048, layers=16, heads=32, kv_heads=8, intermediate=8192, vocab=128256, seq_len=2048, tied=True
    ),
    "large": LlamaConfig(
        hidden=4096,
        layers=32,
        heads=32,
        kv_heads=8,
        intermediate=14336,
        vocab=128256,
        seq_len=2048,
        tied=False,
    ),
}


class RMSNorm(nn.Module):
    """x / rms(x) * weight, computed in fp32 whatever the input's dtype (as the reference does)."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * normed.to(x.dtype)


def rotary_tables(cfg: LlamaConfig, seq_len: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of position * frequency, (seq_len, head_dim), the two halves of a head sharing them."""
    half = cfg.head_dim // 2
    inv_freq = cfg.rope_theta ** (-torch.arange(half, device=device, dtype=torch.float32) / half)
    angles = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv_freq)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos(), angles.sin()


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each (i, i + head_dim/2) pair of ``x`` (batch, heads, seq, head_dim) by its angle."""
    first, second = x.chunk(2, dim=-1)
    rotated = torch.cat((-second, first), dim=-1)
    return (x * cos + rotated * sin).to(x.dtype)


class Attention(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = cfg.heads, cfg.kv_heads, cfg.head_dim
        self.q = nn.Linear(cfg.hidden, cfg.heads * cfg.head_dim, bias=False)
        self.k = nn.Linear(cfg.hidden, cfg.kv_heads * cfg.head_dim, bias=False)
        self.v = nn.Linear(cfg.hidden, cfg.kv_heads * cfg.head_dim, bias=False)
        self.o = nn.Linear(cfg.heads * cfg.head_dim, cfg.hidden, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        group = self.heads // self.kv_heads
        if _SDPA_GQA:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=group > 1)
        else:  # torch < 2.5: each KV head repeated for its query group
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(b, t, self.heads * self.head_dim))


class SwiGLU(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.gate = nn.Linear(cfg.hidden, cfg.intermediate, bias=False)
        self.up = nn.Linear(cfg.hidden, cfg.intermediate, bias=False)
        self.down = nn.Linear(cfg.intermediate, cfg.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(cfg.hidden, cfg.eps)
        self.attn = Attention(cfg)
        self.mlp_norm = RMSNorm(cfg.hidden, cfg.eps)
        self.mlp = SwiGLU(cfg)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.mlp(self.mlp_norm(x))


class Llama(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.hidden)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.hidden, cfg.eps)
        self.head = nn.Linear(cfg.hidden, cfg.vocab, bias=False)
        if cfg.tied:
            self.head.weight = self.embed.weight
        # Normal(0, 0.02) weights (the reference's initializer_range): the first loss is ~ln(vocab).
        for p in self.parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, mean=0.0, std=0.02)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        cos, sin = rotary_tables(self.cfg, idx.shape[1], idx.device)
        x = self.embed(idx)
        for layer in self.layers:
            x = layer(x, cos.to(x.dtype), sin.to(x.dtype))
        return self.head(self.norm(x))


def config(size: str, seq_len: int | None = None) -> LlamaConfig:
    try:
        cfg = CONFIGS[size]
    except KeyError:
        raise ValueError(f"unknown size {size!r} for workload 'llama'; known: {', '.join(CONFIGS)}") from None
    return cfg if seq_len is None else replace(cfg, seq_len=seq_len)


@register
class LlamaWorkload(Workload):
    name = "llama"
    description = "Llama-class decoder (RMSNorm, RoPE, SwiGLU, grouped-query SDPA), next-token prediction"
    sizes: ClassVar[dict[str, SizeSpec]] = {
        "tiny": SizeSpec(8, "Llama-tiny (4 layers, d=128, 4 heads / 2 KV): 1.8M params, seq 64, vocab 8192"),
        "standard": SizeSpec(
            4, "Llama-3.2-1B (16 layers, d=2048, 32 heads / 8 KV, tied): 1236M params, seq 2048, vocab 128256"
        ),
        "large": SizeSpec(
            1, "Llama-3.1-8B (32 layers, d=4096, 32 heads / 8 KV): 8030M params, seq 2048, vocab 128256"
        ),
    }
    workload_options: ClassVar[dict[str, str]] = {SEQ_LEN: "tokens per sample (default: the size's)"}
    lr = 3e-4

    def _config(self, size: str) -> LlamaConfig:
        cfg = config(size)
        return replace(cfg, seq_len=self.int_option(SEQ_LEN, cfg.seq_len))

    def build_model(self, size: str) -> nn.Module:
        return Llama(self._config(size))

    def make_batch(
        self, size: str, batch_size: int, device: torch.device, generator: torch.Generator | None
    ) -> Batch:
        cfg = self._config(size)
        shape = (batch_size, cfg.seq_len + 1)
        tokens = torch.randint(0, cfg.vocab, shape, generator=generator, device=device)
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        inputs, targets = batch
        logits = model(inputs)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))

    def tokens_per_sample(self, size: str) -> int | None:
        return self._config(size).seq_len
