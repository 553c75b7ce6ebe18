"""A tiny model the project builds itself: a character tokenizer and a small Qwen2 decoder.

Nothing is downloaded. The tokenizer is a ``tokenizers`` WordLevel model over printable ASCII, split
one character per token, with the R1 tags ``<think>``, ``</think>``, ``<answer>``, ``</answer>`` and
the chat markers as single added tokens, wrapped in ``PreTrainedTokenizerFast`` with a chat template.
The model is ``Qwen2ForCausalLM`` built from a ``Qwen2Config``. Both save and load with
``save_pretrained`` / ``from_pretrained`` like any hub model, so the trainer treats them the same way.

>>> tok = build_tokenizer()
>>> tok.convert_ids_to_tokens(tok("<think>12</think>")["input_ids"])
['<think>', '1', '2', '</think>']
>>> tok.apply_chat_template([{"role": "user", "content": "1+2=?"}], tokenize=False, add_generation_prompt=True)
'<|user|>1+2=?<|assistant|>'
"""

from __future__ import annotations

import string
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from trainer.config import TinyConfig

PAD, UNK, EOS = "<|pad|>", "<|unk|>", "<|end|>"
USER, ASSISTANT, SYSTEM = "<|user|>", "<|assistant|>", "<|system|>"
R1_TAGS = ["<think>", "</think>", "<answer>", "</answer>"]
SPECIAL = [PAD, UNK, EOS, USER, ASSISTANT, SYSTEM]
CHARS = [c for c in string.printable if c not in "\t\n\r\x0b\x0c"] + ["\n"]

# Messages are concatenated after their role marker; the assistant turn ends with EOS.
CHAT_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'system' %}<|system|>{{ m['content'] }}"
    "{% elif m['role'] == 'user' %}<|user|>{{ m['content'] }}"
    "{% else %}<|assistant|>{{ m['content'] }}<|end|>{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_tokenizer() -> PreTrainedTokenizerFast:
    """Character-level tokenizer with the R1 tags and chat markers as single tokens."""
    vocab = {t: i for i, t in enumerate(SPECIAL + R1_TAGS + CHARS)}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tk.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, pad_token=PAD, unk_token=UNK, eos_token=EOS, bos_token=None, padding_side="left"
    )
    tok.add_special_tokens({"additional_special_tokens": [USER, ASSISTANT, SYSTEM]})
    # The R1 tags are ordinary (non-special) added tokens: they survive skip_special_tokens decoding.
    tok.add_tokens(R1_TAGS)
    tok.chat_template = CHAT_TEMPLATE
    tok.model_max_length = 512
    return tok


def build_model(tok: PreTrainedTokenizerFast, cfg: TinyConfig | None = None, seed: int = 0) -> Qwen2ForCausalLM:
    """A freshly initialised Qwen2 decoder sized for ``tok`` (seeded)."""
    import torch

    cfg = cfg or TinyConfig()
    config = Qwen2Config(
        vocab_size=len(tok),
        num_key_value_heads=cfg.num_attention_heads,
        tie_word_embeddings=True,
        rope_theta=10000.0,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
        **cfg.model_dump(),
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    return model


def build(out_dir: str | Path, cfg: TinyConfig | None = None, seed: int = 0) -> Path:
    """Build, save (``save_pretrained``) and return the folder of a fresh tiny model + tokenizer."""
    tok = build_tokenizer()
    model = build_model(tok, cfg, seed)
    out = Path(out_dir)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out
