"""bench/training/vs_trl.py's shared inputs: the same work for both trainers (model, prompts, reward, settings).

The tiny Qwen2 (built from a config, ~0.85M parameters, character tokenizer) and the prompts are saved
once per run by ``build_inputs``; each trainer loads them from there, in its own process.
"""

from __future__ import annotations

import json
import re
import resource
import string
from pathlib import Path

G, PROMPTS, LR, BETA, SEED = 8, 4, 1e-5, 0.04, 0
# The DeepSeek-R1-Zero prompt template (DeepSeek-R1 paper, table 1), as RLVR recipes use it.
R1_TEMPLATE = (
    "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. "
    "The assistant first thinks about the reasoning process in the mind and then provides the user with the "
    "answer. The reasoning process and answer are enclosed within <think> </think> and <answer> </answer> tags, "
    "respectively, i.e., <think> reasoning process here </think> <answer> answer here </answer>. "
    "User: {q} Assistant:"
)
OVERLAP_STOPS, OVERLAP_MAX_NEW, OVERLAP_VERIFIER = (
    "abcdefghijkl",
    48,
    "bench_last_number",
)
VERIFIER_SOURCE = """import re

def verify(completion, reference, options):
    nums = re.findall(r"\\d+", completion)
    return 0.0 if not nums else (1.0 if nums[-1] == reference else 0.1)
"""
WORKLOADS = {
    "short": {"template": "{q}", "max_new": 32},  # bare "a+b=" prompts, ~6 tokens
    "r1": {
        "template": R1_TEMPLATE,
        "max_new": 64,
    },  # R1-Zero template, ~430 tokens (character tokenizer)
}


def reward(completion: str, answer: str) -> float:
    """1 for the right sum as the last number, 0.1 for any number, 0 otherwise (pure Python)."""
    nums = re.findall(r"\d+", completion)
    return 0.0 if not nums else (1.0 if nums[-1] == answer else 0.1)


def rows(workload: str, n: int = 256) -> list[dict[str, str]]:
    import random

    rng = random.Random(SEED)
    out = []
    for _ in range(n):
        a, b = rng.randint(10, 99), rng.randint(10, 99)
        out.append(
            {
                "prompt": WORKLOADS[workload]["template"].format(q=f"{a}+{b}="),
                "answer": str(a + b),
            }
        )
    return out


def build_inputs(folder: Path) -> Path:
    """Save the tiny model + tokenizer and the prompts under ``folder``."""
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    chars = [c for c in string.printable if c not in "\t\n\r\x0b\x0c"]
    vocab = {t: i for i, t in enumerate(["<pad>", "<eos>", "<unk>", *chars])}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tk.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        pad_token="<pad>",
        eos_token="<eos>",
        unk_token="<unk>",
        padding_side="left",
    )
    cfg = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=128,
        intermediate_size=384,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=1024,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    torch.manual_seed(SEED)
    model = Qwen2ForCausalLM(cfg)
    model.generation_config.pad_token_id, model.generation_config.eos_token_id = 0, 1
    model.save_pretrained(folder / "model")
    tok.save_pretrained(folder / "model")
    # the overlap section's model: completions end at a dozen characters as well, at different lengths
    model.generation_config.eos_token_id = [
        1,
        *tok.convert_tokens_to_ids(list(OVERLAP_STOPS)),
    ]
    model.save_pretrained(folder / "model-stops")
    tok.save_pretrained(folder / "model-stops")
    for w in WORKLOADS:
        with (folder / f"data-{w}.jsonl").open("w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows(w))
    return folder


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
