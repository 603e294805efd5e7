"""``bert``: a bidirectional transformer encoder trained with masked-LM, the encoder-side reference.

The standard size is BERT-base (post-LN, 12 layers, d=768) at the phase-1 pretraining length of 128, so
throughput can be set beside published BERT pretraining figures. The pooler and next-sentence head are
left out: they add 0.6M parameters that masked-LM never trains. Exactly 15% of each sequence is masked,
so every batch does the same work, and logits are computed at every position with ignored labels rather
than gathered at masked ones: static shapes, which graph-compiling backends (HPU lazy mode) need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from workloads.base import Batch, SizeSpec, Workload
from workloads.registry import register

MASK_PROB = 0.15
MASK_ID = 4  # ids 0-4 are reserved specials ([PAD], [UNK], [CLS], [SEP], [MASK]); data uses 5..vocab-1
FIRST_WORD_ID = 5
IGNORE_INDEX = -100  # cross_entropy's default: unmasked positions carry no loss


@dataclass(frozen=True)
class _Config:
    n_layer: int
    n_head: int
    d_model: int
    seq_len: int
    vocab: int
    max_positions: int  # BERT-base keeps 512 position embeddings even when trained at 128


_CONFIGS = {
    "tiny": _Config(n_layer=2, n_head=4, d_model=64, seq_len=64, vocab=1024, max_positions=64),
    "standard": _Config(n_layer=12, n_head=12, d_model=768, seq_len=128, vocab=30522, max_positions=512),
}


def _config(size: str) -> _Config:
    try:
        return _CONFIGS[size]
    except KeyError:
        raise ValueError(f"unknown size {size!r} for workload 'bert'; known: {', '.join(_CONFIGS)}") from None


class EncoderLayer(nn.Module):
    """Post-LN as in the original BERT (the normalisation follows each residual add)."""

    def __init__(self, cfg: _Config) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln1 = nn.LayerNorm(cfg.d_model, eps=1e-12)
        self.ffn = nn.Sequential(
            nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(), nn.Linear(4 * cfg.d_model, cfg.d_model)
        )
        self.ln2 = nn.LayerNorm(cfg.d_model, eps=1e-12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_head, d // self.n_head).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(q, k, v)  # bidirectional: no mask, all positions are real
        x = self.ln1(x + self.proj(attn.transpose(1, 2).reshape(b, t, d)))
        return self.ln2(x + self.ffn(x))


class BertMLM(nn.Module):
    def __init__(self, cfg: _Config) -> None:
        super().__init__()
        self.word_emb = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.max_positions, cfg.d_model)
        self.type_emb = nn.Embedding(2, cfg.d_model)
        self.emb_ln = nn.LayerNorm(cfg.d_model, eps=1e-12)
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_layer))
        self.mlm_transform = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.d_model), nn.GELU(), nn.LayerNorm(cfg.d_model, eps=1e-12)
        )
        self.mlm_bias = nn.Parameter(torch.zeros(cfg.vocab))
        # BERT's initialisation: small normal weights make the first loss ~ln(vocab).
        for p in self.parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, mean=0.0, std=0.02)
        for m in self.modules():
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.emb_ln(self.word_emb(input_ids) + self.pos_emb(pos) + self.type_emb(token_type_ids))
        for layer in self.layers:
            x = layer(x)
        # The decoder is tied to the word embeddings, as in BERT.
        return F.linear(self.mlm_transform(x), self.word_emb.weight, self.mlm_bias)


def _mask_positions(
    batch_size: int, seq_len: int, device: torch.device, generator: torch.Generator | None
) -> torch.Tensor:
    """Exactly ``round(15%)`` masked positions per sequence, chosen by ranking random scores."""
    n_masked = max(1, round(MASK_PROB * seq_len))
    scores = torch.rand((batch_size, seq_len), generator=generator, device=device)
    ranks = scores.argsort(dim=1).argsort(dim=1)
    return ranks < n_masked


@register
class BertWorkload(Workload):
    name = "bert"
    description = "Bidirectional transformer encoder (post-LN, SDPA) with a masked-LM head, 15% masking"
    sizes: ClassVar[dict[str, SizeSpec]] = {
        "tiny": SizeSpec(8, "BERT-tiny (2 layers, d=64): 0.18M params, seq 64, vocab 1024"),
        "standard": SizeSpec(32, "BERT-base-class (12 layers, d=768): 110M params, seq 128, vocab 30522"),
    }
    lr = 1e-4

    def build_model(self, size: str) -> nn.Module:
        return BertMLM(_config(size))

    def make_batch(
        self, size: str, batch_size: int, device: torch.device, generator: torch.Generator | None
    ) -> Batch:
        cfg = _config(size)
        shape = (batch_size, cfg.seq_len)
        words = torch.randint(FIRST_WORD_ID, cfg.vocab, shape, generator=generator, device=device)
        masked = _mask_positions(batch_size, cfg.seq_len, device, generator)
        input_ids = torch.where(masked, torch.full_like(words, MASK_ID), words)
        labels = torch.where(masked, words, torch.full_like(words, IGNORE_INDEX))
        # Sentence pairs: segment A is the first half, segment B the second, as in pretraining data.
        segment = (torch.arange(cfg.seq_len, device=device) >= cfg.seq_len // 2).long()
        token_type_ids = segment.expand(batch_size, -1).contiguous()
        return input_ids, token_type_ids, labels

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        input_ids, token_type_ids, labels = batch
        logits = model(input_ids, token_type_ids)
        return F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE_INDEX
        )

    def tokens_per_sample(self, size: str) -> int | None:
        return _config(size).seq_len
