"""``hf:<model type>`` and ``hf:<directory>``: Hugging Face transformers models, built from a configuration
alone (no download: random weights, works offline), trained on synthetic batches shaped as the model's
``forward`` takes them.

- ``hf:gpt2``, ``hf:llama``, ``hf:bert``, ... (``MODEL_TYPES``): the model type's configuration class
  (``transformers.CONFIG_MAPPING``). Size ``standard`` keeps the class's default dimensions (GPT-2 small
  for gpt2, BERT-base for bert, a 7B model for llama and mistral); size ``tiny`` shrinks them to
  ``TINY_DIMS`` (CI-fast, a few hundred thousand parameters).
- ``hf:<name>`` for a directory given as ``-w hf:/path/to/dir`` or ``--workloads-from /path/to/dir``:
  the directory's ``config.json`` (``standard``: as written; ``tiny``: shrunk like the above). The task
  comes from its ``architectures`` (``...ForCausalLM``, ``...ForMaskedLM``,
  ``...ForSequenceClassification``), else from the model type.

Tasks and their batches: causal LM, ``input_ids`` + ``labels`` (= the inputs; the model shifts them);
masked LM, 15% of the positions masked (``labels`` -100 elsewhere); sequence classification, one label per
sequence. The model computes its own loss. Per-cell overrides (``--option name=value``): ``seq_len`` and
the dimensions in ``DIM_OPTIONS``.

transformers is an optional extra (``pip install 'hpubench[hf]'``); without it ``hf:`` cells are skipped
with that reason (``Workload.unavailable``), never crashed. It is imported only when a model is built.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from typing import Any, ClassVar

import torch
from torch import nn

from hpubench.plan.modeldirs import directory_name
from workloads.base import Batch, SizeSpec, Workload

PREFIX = "hf:"  # as hpubench.plan.modeldirs names directories
CAUSAL, MASKED, CLASSIFY = "causal-lm", "masked-lm", "sequence-classification"
# Model types offered by name, with their task. Any other type works through a directory's config.json.
MODEL_TYPES: dict[str, str] = {
    "gpt2": CAUSAL,
    "gpt_neox": CAUSAL,
    "llama": CAUSAL,
    "mistral": CAUSAL,
    "qwen2": CAUSAL,
    "bert": MASKED,
    "roberta": MASKED,
}
# The tiny size: these attributes, where the configuration has them (aliases such as gpt2's n_embd are
# mapped by transformers itself).
TINY_DIMS: dict[str, int] = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 1024,
}
DIM_OPTIONS = (*TINY_DIMS, "head_dim")
SEQ_LEN = "seq_len"
SEQ = {"tiny": 64, "standard": 512}
MASK_FRACTION = 0.15
NUM_LABELS = 2
MISSING = "transformers is not installed; pip install 'hpubench[hf]' (or pip install transformers)"
_ARCH_TASKS = (("ForCausalLM", CAUSAL), ("LMHeadModel", CAUSAL), ("ForMaskedLM", MASKED))


def transformers_missing() -> str | None:
    """Why hf: cells cannot run here, or None. A lookup, not an import (transformers takes seconds)."""
    try:
        found = importlib.util.find_spec("transformers") is not None
    except (ImportError, ValueError):  # a finder that refuses it, a half-removed install
        found = False
    return None if found else MISSING


def _task_of(architectures: list[str] | None, model_type: str) -> str:
    for arch in architectures or ():
        if arch.endswith("ForSequenceClassification"):
            return CLASSIFY
        for suffix, task in _ARCH_TASKS:
            if arch.endswith(suffix):
                return task
    return MODEL_TYPES.get(model_type, CAUSAL)


class HFWorkload(Workload):
    """One transformers model; subclasses set ``model_type`` or ``config_dir`` (``make_class``)."""

    description = "Hugging Face transformers model from its configuration (random weights, no download)"
    sizes: ClassVar[dict[str, SizeSpec]] = {
        "tiny": SizeSpec(8, f"{TINY_DIMS['num_hidden_layers']} layers, d={TINY_DIMS['hidden_size']}, seq 64"),
        "standard": SizeSpec(4, "the configuration's own dimensions, seq 512 (or its maximum)"),
    }
    workload_options: ClassVar[dict[str, str]] = {
        SEQ_LEN: "tokens per sample",
        **{d: f"the configuration's {d}" for d in DIM_OPTIONS},
    }
    lr = 1e-4
    model_type: ClassVar[str | None] = None
    config_dir: ClassVar[str | None] = None
    task: ClassVar[str] = CAUSAL
    unavailable: ClassVar[str | None] = None  # set at registration: why it cannot run here

    def config(self, size: str) -> Any:
        if size not in self.sizes:
            known = ", ".join(self.sizes)
            raise ValueError(f"unknown size {size!r} for workload {self.name!r}; known: {known}")
        # deferred: transformers takes seconds to import and is optional; only a built model needs it.
        import transformers

        transformers.logging.set_verbosity_error()  # config notices would flood every cell's log
        if self.config_dir is not None:
            cfg = transformers.AutoConfig.from_pretrained(self.config_dir, local_files_only=True)
        else:
            cfg = transformers.CONFIG_MAPPING[self.model_type]()
        if size == "tiny":
            self._set(cfg, TINY_DIMS)
        self._set(cfg, {d: self.int_option(d, 0) for d in DIM_OPTIONS if d in self.options})
        limit = getattr(cfg, "max_position_embeddings", None)
        seq = self.seq_len(size, cfg)
        if isinstance(limit, int) and limit < seq + 2:
            cfg.max_position_embeddings = seq + 2  # roberta's positions start at 2
        if self.task == CLASSIFY:
            cfg.num_labels = getattr(cfg, "num_labels", NUM_LABELS) or NUM_LABELS
            if getattr(cfg, "pad_token_id", None) is None:
                cfg.pad_token_id = 0  # classification pools at the last non-pad token
        return cfg

    @staticmethod
    def _set(cfg: Any, dims: dict[str, int]) -> None:
        for key, value in dims.items():
            if hasattr(cfg, key):
                setattr(cfg, key, value)
        reshaped = {"hidden_size", "num_attention_heads"} & set(dims) and "head_dim" not in dims
        if reshaped and getattr(cfg, "head_dim", None):
            cfg.head_dim = cfg.hidden_size // cfg.num_attention_heads  # heads stay consistent when resized

    def seq_len(self, size: str, cfg: Any | None = None) -> int:
        default = SEQ[size]
        limit = getattr(cfg, "max_position_embeddings", None) if cfg is not None else None
        if size == "standard" and isinstance(limit, int):
            default = min(default, limit - 2 if self.model_type == "roberta" else limit)
        return self.int_option(SEQ_LEN, default)

    def build_model(self, size: str) -> nn.Module:
        import transformers  # deferred: see config()

        auto = {
            CAUSAL: transformers.AutoModelForCausalLM,
            MASKED: transformers.AutoModelForMaskedLM,
            CLASSIFY: transformers.AutoModelForSequenceClassification,
        }[self.task]
        return auto.from_config(self.config(size), attn_implementation="sdpa")

    def make_batch(
        self, size: str, batch_size: int, device: torch.device, generator: torch.Generator | None
    ) -> Batch:
        cfg = self.config(size)
        seq = self.seq_len(size, cfg)
        ids = torch.randint(0, cfg.vocab_size, (batch_size, seq), generator=generator, device=device)
        if self.task == CAUSAL:
            return ids, ids.clone()
        if self.task == CLASSIFY:
            labels = torch.randint(0, cfg.num_labels, (batch_size,), generator=generator, device=device)
            return ids, labels
        # Masked LM: exactly 15% of each row, chosen by ranking random scores (static shapes).
        scores = torch.rand((batch_size, seq), generator=generator, device=device)
        masked = scores.argsort(dim=1).argsort(dim=1) < max(1, round(MASK_FRACTION * seq))
        mask_id = getattr(cfg, "mask_token_id", None) or 0
        inputs = torch.where(masked, torch.full_like(ids, mask_id), ids)
        return inputs, torch.where(masked, ids, torch.full_like(ids, -100))

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        input_ids, labels = batch
        return model(input_ids=input_ids, labels=labels).loss

    def fingerprint(self) -> bytes:
        if self.config_dir is None:
            return b""
        try:
            with open(os.path.join(self.config_dir, "config.json"), "rb") as f:
                return f.read()
        except OSError:
            return b"unreadable"

    def tokens_per_sample(self, size: str) -> int | None:
        if self.unavailable is not None:
            return self.int_option(SEQ_LEN, SEQ[size])
        return self.seq_len(size, self.config(size))


def make_class(name: str, **attrs: Any) -> type[HFWorkload]:
    """A registrable subclass for one model type or directory (``name`` without the prefix)."""
    cls_name = "HF_" + re.sub(r"\W", "_", name)
    return type(cls_name, (HFWorkload,), {"name": PREFIX + name, "__module__": __name__, **attrs})


def class_for_directory(path: str) -> type[HFWorkload]:
    """The workload class of a directory holding a transformers ``config.json``; ValueError if unusable."""
    file = os.path.join(path, "config.json")
    try:
        with open(file, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {file}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("model_type"), str):
        raise ValueError(f"{file} names no model_type: not a transformers configuration")
    task = _task_of(data.get("architectures"), data["model_type"])
    return make_class(directory_name(path), config_dir=os.path.abspath(path), task=task)


def builtin_classes() -> list[type[HFWorkload]]:
    return [make_class(t, model_type=t, task=task) for t, task in MODEL_TYPES.items()]
