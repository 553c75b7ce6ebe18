"""A model folder as a practitioner makes one (issue 31): a byte-level BPE tokenizer trained with the
``tokenizers`` library, with a chat template and right padding, the R1 tags declared as special tokens
or as normal ones, and a tiny Qwen2 saved next to it with ``save_pretrained``."""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

TAGS = ["<think>", "</think>", "<answer>", "</answer>"]
CHAT = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TEXT = ["Natalia sold 48 clips in April and half as many in May. How many in all? The answer is 72."] * 20


def bpe_tokenizer(tags_special: bool) -> PreTrainedTokenizerFast:
    """A byte-level BPE trained on a few lines; the R1 tags special (dropped by skip_special_tokens) or not."""
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + (TAGS if tags_special else [])
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tk.train_from_iterator(TEXT, trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    if not tags_special:
        tok.add_tokens(TAGS)
    tok.padding_side = "right"
    tok.chat_template = CHAT
    return tok


def save_model_folder(out: Path, tags_special: bool, seed: int = 0) -> Path:
    """A tiny Qwen2 and its tokenizer, saved as a hub model is."""
    import torch

    tok = bpe_tokenizer(tags_special)
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
        tie_word_embeddings=True,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def gsm8k_style(path: Path, n: int = 24) -> Path:
    """{"prompt", "answer"} rows as GSM8K's are usually converted."""
    rows = [
        {"prompt": f"Tom has {i} apples and buys {i + 3} more. How many apples does he have?", "answer": str(2 * i + 3)}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
