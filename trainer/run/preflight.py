"""Checks made before a run starts anything (the verifier service, an evaluation, a training step), so
that a mismatch between the user's tokenizer and the chosen verifier is an error, not a run whose every
reward is 0.

The trainer decodes completions with ``skip_special_tokens=True`` (trainer/rollout/decode.py): a tag that the
tokenizer declares a *special* token is dropped from the text the verifier grades. A tokenizer trained
with ``<think>``/``</think>``/``<answer>``/``</answer>`` among its special tokens therefore hands
``think_format`` and ``r1`` completions without their tags: every sample grades ``NO_ANSWER``. The fix
is to make those tags normal added tokens (the same ids, so the model needs no change):

    python -m trainer.run.preflight MODEL_DIR --fix-tags      # rewrites tokenizer.json (a copy is kept)

``check`` also renders one prompt as the trainer will (chat template or not), so it can be read in the
run folder (``prompt.txt``), and warns when the prompt plus ``max_new_tokens`` exceeds the model's
positions or the tokenizer has no EOS.

``python -m trainer.run.preflight MODEL_DIR [--verifier r1] [--data FILE]`` runs the same checks alone.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from trainer.data import render_prompt
from trainer.errors import TrainerError

TAGS = ("<think>", "</think>", "<answer>", "</answer>")
# the tags a verifier cannot grade without (the think_format contract, docs/verifiers.md)
REQUIRED: dict[str, tuple[str, ...]] = {"think_format": TAGS, "r1": TAGS}
# tags it reads when present (math takes \boxed{} first, else <answer>...</answer>)
OPTIONAL: dict[str, tuple[str, ...]] = {"math": ("<answer>", "</answer>")}
NO_TAGS = frozenset({"code", "arith_steps"})  # built-ins that read no tag
PROMPT_FILE = "prompt.txt"


class PreflightError(TrainerError):
    """The tokenizer, the model or the prompt cannot give the chosen verifier something to grade."""


@dataclass
class Report:
    """What ``check`` found: errors (the run must not start), warnings, and the rendered prompt."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    prompt: str = ""
    prompt_tokens: int = 0


def lost_tag(tokenizer, tag: str) -> str | None:
    """Why ``tag`` does not survive encode -> decode as the trainer decodes (None: it survives)."""
    ids = tokenizer.encode(tag, add_special_tokens=False)
    back = tokenizer.decode(ids, skip_special_tokens=True)
    if tag in back:
        return None
    if tag in tokenizer.decode(ids, skip_special_tokens=False):
        return f"is a special token of this tokenizer (id {ids[0] if len(ids) == 1 else ids}), and decoding skips special tokens"
    return f"does not survive encode -> decode (it comes back as {back!r})"


def fix_hint(model_dir: str | None, tags: list[str]) -> str:
    where = model_dir or "MODEL_DIR"
    return (
        f"Fix: make {' '.join(tags)} normal tokens (same ids; the model is unchanged): "
        f"`python -m trainer.run.preflight {where} --fix-tags` (rewrites tokenizer.json, keeping tokenizer.json.orig), "
        "or in your tokenizer script add them with tokenizer.add_tokens([...]) instead of as special tokens"
    )


def tag_findings(tokenizer, verifiers: Iterable[str], model_dir: str | None = None) -> tuple[list[str], list[str]]:
    """(errors, warnings) about the tags each verifier in ``verifiers`` reads."""
    errors, warnings = [], []
    for name in dict.fromkeys(verifiers):
        if name in NO_TAGS:
            continue
        required = REQUIRED.get(name, ())
        optional = OPTIONAL.get(name, () if name in REQUIRED else TAGS)  # an unknown (registered) one: may read any
        lost = {t: why for t in (*required, *optional) if (why := lost_tag(tokenizer, t))}
        hard = [t for t in required if t in lost]
        soft = [t for t in optional if t in lost]
        if hard:
            why = "; ".join(f"{t!r} {lost[t]}" for t in hard)
            errors.append(
                f"verifier {name!r} needs {' '.join(required)} in the completions it grades, but {why}: "
                f"every completion would reach {name!r} without them and grade NO_ANSWER. "
                f"{fix_hint(model_dir, hard)}"
            )
        if soft:
            why = "; ".join(f"{t!r} {lost[t]}" for t in soft)
            warnings.append(
                f"verifier {name!r} may read {' '.join(soft)}, but {why}: an answer written inside them "
                f"reaches the verifier without them. {fix_hint(model_dir, soft)}"
            )
    return errors, warnings


def check(
    tokenizer,
    model,
    verifiers: Iterable[str],
    prompt: str,
    *,
    use_chat_template: bool = True,
    max_new_tokens: int | None = None,
    model_dir: str | None = None,
) -> Report:
    """Every check on one prompt; returns the Report (``raise_errors`` turns its errors into a PreflightError)."""
    rep = Report()
    rep.errors, rep.warnings = tag_findings(tokenizer, verifiers, model_dir)
    try:
        rep.prompt = render_prompt(tokenizer, prompt, use_chat_template)
    except Exception as e:  # a broken chat template (jinja errors of every kind)
        rep.errors.append(
            f"the tokenizer's chat template cannot render a prompt ({type(e).__name__}: {e}); fix "
            "chat_template in tokenizer_config.json, or pass --grpo.use_chat_template false"
        )
        return rep
    rep.prompt_tokens = len(tokenizer(rep.prompt, add_special_tokens=False)["input_ids"])
    positions = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if positions and max_new_tokens and rep.prompt_tokens + max_new_tokens > positions:
        rep.warnings.append(
            f"a prompt of {rep.prompt_tokens} tokens + max_new_tokens {max_new_tokens} exceeds the "
            f"model's {positions} positions: lower max_new_tokens or shorten the prompts"
        )
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if tokenizer.eos_token_id is None and gen_eos is None:
        rep.warnings.append(
            "neither the tokenizer nor the model's generation_config has an EOS token: every "
            "completion runs to max_new_tokens"
        )
    return rep


def raise_errors(rep: Report) -> None:
    if rep.errors:
        raise PreflightError("preflight failed (nothing was started):\n- " + "\n- ".join(rep.errors))


def write_prompt(rep: Report, run_dir: Path, use_chat_template: bool) -> Path:
    """The rendered prompt, once, in the run folder (what the model sees, special tokens included)."""
    path = Path(run_dir) / PROMPT_FILE
    how = "with the tokenizer's chat template" if use_chat_template else "as written (use_chat_template: false)"
    path.write_text(f"# the first training prompt, rendered {how}; {rep.prompt_tokens} tokens\n{rep.prompt}\n")
    return path


# ---------------------------------------------------------------------------------------------
# the fix: tags as normal tokens
# ---------------------------------------------------------------------------------------------


def fix_tags(model_dir: str | Path, tags: Iterable[str] = TAGS) -> list[str]:
    """Mark ``tags`` as normal (non-special) added tokens in ``model_dir``'s tokenizer files, keeping a
    ``.orig`` copy of each file changed. Ids do not change. Returns the tags that were special."""
    d, wanted, changed = Path(model_dir), set(tags), []
    tj = d / "tokenizer.json"
    if not tj.exists():
        raise PreflightError(f"{tj} not found: --fix-tags rewrites a fast tokenizer's tokenizer.json")
    spec = json.loads(tj.read_text(encoding="utf-8"))
    for tok in spec.get("added_tokens", []):
        if tok.get("content") in wanted and tok.get("special"):
            tok["special"] = False
            changed.append(tok["content"])
    cfg_path = d / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8")) if cfg_path.exists() else {}
    for tok in (cfg.get("added_tokens_decoder") or {}).values():
        if tok.get("content") in wanted and tok.get("special"):
            tok["special"] = False
    extra = cfg.get("additional_special_tokens") or cfg.get("extra_special_tokens")
    if isinstance(extra, list):
        cfg["additional_special_tokens" if "additional_special_tokens" in cfg else "extra_special_tokens"] = [
            t for t in extra if (t.get("content") if isinstance(t, dict) else t) not in wanted
        ]
    if changed:
        for path, data in ((tj, spec), (cfg_path, cfg)):
            if path.exists():
                shutil.copy2(path, path.with_name(path.name + ".orig"))
                path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return changed


def parser():
    """``python -m trainer.run.preflight``'s command line (argparse)."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m trainer.run.preflight", description=__doc__.split("\n\n")[0])
    p.add_argument("model_dir")
    p.add_argument("--verifier", default="r1", help="verifier whose tags to check (default: r1)")
    p.add_argument("--data", help="JSONL whose first prompt is rendered (default: a sample prompt)")
    p.add_argument("--no-chat-template", action="store_true", help="render the prompt without the chat template")
    p.add_argument("--fix-tags", action="store_true", help="make <think> </think> <answer> </answer> normal tokens")
    return p


def main(argv: list[str] | None = None) -> int:
    """``python -m trainer.run.preflight MODEL_DIR [--verifier NAME] [--data FILE] [--fix-tags]``."""
    a = parser().parse_args(argv)
    if a.fix_tags:
        try:
            changed = fix_tags(a.model_dir)
        except PreflightError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(f"{a.model_dir}: {' '.join(changed)} now normal tokens" if changed else "no tag was a special token")
    from trainer.policy import load_tokenizer

    tok = load_tokenizer(a.model_dir)
    prompt = "What is 2 + 3?"
    if a.data:
        prompt = json.loads(Path(a.data).read_text(encoding="utf-8").splitlines()[0])["prompt"]
    rep = check(tok, None, [a.verifier], prompt, use_chat_template=not a.no_chat_template, model_dir=a.model_dir)
    for w in rep.warnings:
        print(f"warning: {w}", file=sys.stderr)
    for e in rep.errors:
        print(f"error: {e}", file=sys.stderr)
    print(f"rendered prompt ({rep.prompt_tokens} tokens):\n{rep.prompt}")
    return 1 if rep.errors else 0


if __name__ == "__main__":
    sys.exit(main())
