"""Rollout: sampling shapes and masks, log-probs equal to generate's own, batch assembly with masks."""

from __future__ import annotations

import string

import pytest
import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from trainer.config import GRPOConfig
from trainer.data import DataStream, Example, load_examples
from trainer.grpo.rewards import PythonReward, Score, informative_groups
from trainer.grpo.step import collect_batch, concat_rollouts
from trainer.pipelines import tiny
from trainer.rollout.decode import Rollout, generate_rollout
from trainer.rollout.decode_loop import completion_mask_from_eos, decode, fast_decode_supported
from trainer.rollout.logprobs import completion_logprobs

torch.set_num_threads(1)

CHARS = list(string.digits + string.ascii_lowercase + "+-*=<>/ ")
R1_TAGS = ["<think>", "</think>", "<answer>", "</answer>"]


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """Character-level: one token per character, <pad> 0, <eos> 1, the R1 tags as single tokens."""
    vocab = {t: i for i, t in enumerate(["<pad>", "<eos>", "<unk>", *CHARS])}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tk.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>", padding_side="left"
    )
    tok.add_tokens(R1_TAGS)
    return tok


def tiny_model(tok, seed: int = 0, hidden: int = 64, layers: int = 2) -> Qwen2ForCausalLM:
    cfg = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(cfg)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    return model


EXAMPLES = [Example("1+2=", "3"), Example("12+30=", "42"), Example("7*6=", "42")]


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def model(tok):
    return tiny_model(tok)


def test_rollout_shapes_groups_and_masks(tok, model):
    torch.manual_seed(0)
    ro = generate_rollout(model, tok, EXAMPLES, 4, max_new_tokens=10, temperature=1.0)
    n = len(EXAMPLES) * 4
    assert ro.prompt_ids.shape[0] == ro.completion_ids.shape[0] == n and ro.completion_ids.shape[1] <= 10
    assert ro.prompts == [e.prompt for e in EXAMPLES for _ in range(4)]
    assert ro.references == [e.reference for e in EXAMPLES for _ in range(4)]
    lengths = ro.completion_mask.sum(1)
    for i in range(n):
        ids = ro.completion_ids[i].tolist()
        if ro.truncated[i]:
            assert lengths[i] == 10 and tok.eos_token_id not in ids
        else:  # mask runs up to and including the first EOS, padding after it
            assert ids[lengths[i] - 1] == tok.eos_token_id
            assert all(t == tok.pad_token_id for t in ids[lengths[i] :])
        assert ro.completion_mask[i, : lengths[i]].all() and not ro.completion_mask[i, lengths[i] :].any()
    # left padding: every prompt ends at the right edge
    assert ro.prompt_mask[:, -1].all()


def test_completion_mask_from_eos():
    ids = torch.tensor([[5, 1, 7, 1], [5, 6, 7, 8], [1, 0, 0, 0]])
    mask, truncated = completion_mask_from_eos(ids, [1])
    assert mask.tolist() == [[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]]
    assert truncated.tolist() == [False, True, False]


def test_logprobs_equal_generate_scores(tok, model):
    """The training forward (left padding, position ids from the mask) scores exactly what generate sampled."""
    torch.manual_seed(3)
    enc = tok([e.prompt for e in EXAMPLES for _ in range(2)], return_tensors="pt", padding=True)
    out = model.generate(
        **enc,
        max_new_tokens=8,
        do_sample=True,
        temperature=0.7,
        top_k=0,
        output_logits=True,
        return_dict_in_generate=True,
        pad_token_id=0,
        eos_token_id=1,
    )
    ids = out.sequences[:, enc["input_ids"].shape[1] :]
    want = torch.log_softmax(torch.stack(out.logits, 1) / 0.7, -1).gather(-1, ids[..., None])[..., 0]
    mask, trunc = completion_mask_from_eos(ids, [1])
    ro = Rollout(enc["input_ids"], enc["attention_mask"], ids.masked_fill(mask == 0, 0), mask, trunc, [])
    with torch.no_grad():
        got, ent = completion_logprobs(model, ro, temperature=0.7, with_entropy=True)
    assert torch.allclose(got * mask, want * mask, atol=1e-5)
    assert ent.shape == got.shape and (ent >= 0).all()
    # any subset of rows gives the same numbers (prompt padding trimmed per subset)
    with torch.no_grad():
        sub, _ = completion_logprobs(model, ro, temperature=0.7, rows=torch.tensor([4, 5]))
    assert torch.allclose(sub * mask[4:], got[4:] * mask[4:], atol=1e-5)


def test_greedy_rollout_is_deterministic(tok, model):
    a = generate_rollout(model, tok, EXAMPLES, 1, max_new_tokens=6, do_sample=False)
    b = generate_rollout(model, tok, EXAMPLES, 1, max_new_tokens=6, do_sample=False)
    assert a.texts == b.texts and torch.equal(a.completion_ids, b.completion_ids)


def test_concat_rollouts_pads_both_sides(tok, model):
    torch.manual_seed(0)
    a = generate_rollout(model, tok, EXAMPLES[:1], 2, max_new_tokens=3)
    b = generate_rollout(model, tok, EXAMPLES[1:2], 2, max_new_tokens=6)
    c = concat_rollouts([a, b], tok.pad_token_id)
    assert c.prompt_ids.shape[1] == max(a.prompt_ids.shape[1], b.prompt_ids.shape[1])
    assert c.completion_ids.shape[1] == max(a.completion_ids.shape[1], b.completion_ids.shape[1])
    assert c.prompt_mask[:, -1].all() and c.texts == a.texts + b.texts
    assert torch.equal(c.completion_mask.sum(1), torch.cat([a.completion_mask.sum(1), b.completion_mask.sum(1)]))


def test_informative_groups_ignore_sandbox_errors():
    rewards = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    valid = torch.tensor([True, True, True, True, True, False, True, False])
    assert informative_groups(rewards, valid, 2).tolist() == [True, False, False, False]


def test_data_stream_is_seeded_and_resumable():
    ex = [Example(str(i), str(i)) for i in range(5)]
    a = DataStream(ex, seed=1)
    first = [e.prompt for e in a.take(7)]
    state = a.state()
    rest = [e.prompt for e in a.take(6)]
    b = DataStream(ex, seed=1)
    b.load(state)
    assert [e.prompt for e in b.take(6)] == rest
    assert sorted(first[:5]) == [str(i) for i in range(5)]  # each epoch is a permutation


def test_dynamic_sampling_keeps_informative_groups(tok, model):
    """A reward that only separates completions of one prompt: dynamic sampling fills the batch with it."""
    ex = [Example("1+2=", "informative"), Example("7*6=", "flat")]
    reward = PythonReward(lambda c, r: float(len(c) % 2) if r == "informative" else 0.0)
    cfg = GRPOConfig(group_size=4, prompts_per_step=2, max_new_tokens=6, dynamic_sampling=True, max_refills=6)
    torch.manual_seed(0)
    batch = collect_batch(cfg, model, tok, DataStream(ex, 0), reward)
    assert len(batch.rollout) == 8 and batch.rollouts >= 2
    flags = informative_groups(batch.rewards, batch.valid, 4)
    assert flags.all() and set(batch.rollout.references) == {"informative"}


def test_load_examples(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text('{"prompt": "1+1=", "answer": "2"}\n\n{"prompt": "f", "tests": "assert f()"}\n')
    assert load_examples(p) == [Example("1+1=", "2"), Example("f", "assert f()")]
    p.write_text('{"question": "x"}\n')
    with pytest.raises(ValueError, match="prompt"):
        load_examples(p)


def test_python_reward_outcomes():
    out = PythonReward(lambda c, r: None if not c else float(c == r))(["", "3", "4"], ["3", "3", "3"], [""] * 3)
    assert [s.outcome for s in out] == ["NO_ANSWER", "CORRECT", "INCORRECT"]
    assert isinstance(out[0], Score) and out[1].reward == 1.0


def test_shared_prefix_generation_equals_plain_generation(tok, model):
    a = generate_rollout(model, tok, EXAMPLES, 3, max_new_tokens=8, do_sample=False, share_prefix=True)
    b = generate_rollout(model, tok, EXAMPLES, 3, max_new_tokens=8, do_sample=False, share_prefix=False)
    assert torch.equal(a.completion_ids, b.completion_ids) and torch.equal(a.prompt_ids, b.prompt_ids)


def test_shared_prefix_logprobs_and_gradients_equal_the_plain_forward(tok):
    """Encoding each prompt once (KV cache repeated G times, inside the autograd graph) changes nothing."""
    model = tiny_model(tok, seed=5)
    torch.manual_seed(0)
    ro = generate_rollout(model, tok, EXAMPLES, 4, max_new_tokens=9)
    grads = []
    for g in (0, 4):
        model.zero_grad()
        logp, ent = completion_logprobs(model, ro, temperature=0.8, with_entropy=True, group_size=g)
        (logp * ro.completion_mask).sum().backward()
        grads.append((logp.detach(), ent, [p.grad.clone() for p in model.parameters()]))
    (lp0, e0, g0), (lp1, e1, g1) = grads
    m = ro.completion_mask.bool()
    assert torch.allclose(lp0[m], lp1[m], atol=1e-5) and torch.allclose(e0[m], e1[m], atol=1e-5)
    assert all(torch.allclose(x, y, atol=1e-5) for x, y in zip(g0, g1, strict=True))
    # a subset of whole groups, in any group order
    rows = torch.tensor([8, 9, 10, 11, 0, 1, 2, 3])
    with torch.no_grad():
        sub, _ = completion_logprobs(model, ro, temperature=0.8, rows=rows, group_size=4)
    assert torch.allclose(sub[m[rows]], lp0[rows][m[rows]], atol=1e-5)


# ---------------------------------------------------------------------------------------------
# the lean decode loop (fast_decode) against model.generate
# ---------------------------------------------------------------------------------------------

MIXED = [Example("1+2=", "3"), Example("12+30=", "42"), Example("7*6= <think>", "42"), Example("99-1=", "98")]


def _with_eos(model, extra: list[int]):
    """The same weights, with more EOS ids so that rows finish at different steps (EOS paths exercised)."""
    import copy

    m = copy.deepcopy(model)
    m.generation_config.eos_token_id = [m.generation_config.eos_token_id, *extra]
    return m


def _same(a: Rollout, b: Rollout) -> None:
    assert torch.equal(a.completion_ids, b.completion_ids)
    assert torch.equal(a.completion_mask, b.completion_mask) and torch.equal(a.truncated, b.truncated)
    assert torch.equal(a.prompt_ids, b.prompt_ids) and a.texts == b.texts


@pytest.mark.parametrize("share_prefix", [True, False])
def test_fast_decode_greedy_equals_generate(tok, model, share_prefix):
    """Left-padded prompts of mixed lengths: token for token what generate(do_sample=False) gives,
    and the same EOS masks and truncated flags when some rows stop early."""
    kw = {"max_new_tokens": 12, "do_sample": False, "share_prefix": share_prefix}
    plain = generate_rollout(model, tok, MIXED, 2, fast_decode=True, **kw)
    assert plain.prompt_mask[:, 0].eq(0).any()  # some rows really are left-padded
    _same(plain, generate_rollout(model, tok, MIXED, 2, fast_decode=False, **kw))
    # a token greedy emits mid-way in one row becomes an extra EOS: rows now finish at different steps
    stop = int(plain.completion_ids[2, 4])
    m = _with_eos(model, [stop])
    fast = generate_rollout(m, tok, MIXED, 2, fast_decode=True, **kw)
    assert fast.truncated.any() and not fast.truncated.all()
    _same(fast, generate_rollout(m, tok, MIXED, 2, fast_decode=False, **kw))


@pytest.mark.parametrize("top_p", [1.0, 0.9])
def test_fast_decode_samples_what_generate_samples(tok, model, top_p):
    """One multinomial draw per step from the same probabilities: under one seed, generate and the loop
    draw the same tokens (so the same distribution), with EOS ending rows at different steps."""
    m = _with_eos(model, [tok.convert_tokens_to_ids("1"), tok.convert_tokens_to_ids("=")])
    runs = []
    for fast in (True, False):
        torch.manual_seed(11)
        runs.append(
            generate_rollout(m, tok, MIXED, 4, max_new_tokens=10, temperature=1.3, top_p=top_p, fast_decode=fast)
        )
    _same(*runs)
    assert runs[0].truncated.any() and not runs[0].truncated.all()


def test_fast_decode_seeded_sampling_is_reproducible(tok, model):
    runs = []
    for _ in range(2):
        torch.manual_seed(7)
        runs.append(generate_rollout(model, tok, MIXED, 3, max_new_tokens=9, temperature=0.9))
    _same(*runs)
    torch.manual_seed(8)
    other = generate_rollout(model, tok, MIXED, 3, max_new_tokens=9, temperature=0.9)
    assert not torch.equal(other.completion_ids, runs[0].completion_ids)


def test_fast_decode_logits_are_what_completion_logprobs_scores(tok):
    """The distribution each token was drawn from (logits captured in the loop) is the one the training
    forward recomputes: log-probs equal to 1e-5, with and without the shared prompt cache."""
    model = tiny_model(tok, seed=2).eval()
    m = _with_eos(model, [tok.convert_tokens_to_ids("2")])
    side, tok.padding_side = tok.padding_side, "left"
    enc = tok([e.prompt for e in MIXED], return_tensors="pt", padding=True)
    tok.padding_side = side
    g, temp = 3, 0.8
    ids, attn = enc["input_ids"].repeat_interleave(g, 0), enc["attention_mask"].repeat_interleave(g, 0)
    logits: list[torch.Tensor] = []
    torch.manual_seed(0)
    with torch.no_grad():
        new = decode(m, ids, attn, max_new_tokens=10, eos_ids=[1, 6], pad_id=0, temperature=temp, logits_out=logits)
    mask, trunc = completion_mask_from_eos(new, [1, 6])
    assert trunc.any() and not trunc.all()
    want = torch.log_softmax(torch.stack(logits, 1) / temp, -1).gather(-1, new[..., None])[..., 0]  # (N, C)
    ro = Rollout(ids, attn, new.masked_fill(mask == 0, 0), mask, trunc, [])
    with torch.no_grad():
        for group in (0, g):
            got, _ = completion_logprobs(m, ro, temperature=temp, group_size=group)
            assert torch.allclose(got[mask.bool()], want[mask.bool()], atol=1e-5)


def test_checkpoint_penalties_do_not_change_the_sampling_distribution(tok, model):
    """Issue 14 (b): a checkpoint whose generation_config sets repetition_penalty 1.3 and top_k 5 (as Qwen's
    does) is sampled from the trainer's own settings only, by either path: the tokens are exactly those of the
    unpenalised policy the loss scores (greedy: the argmax of the scored distribution at every step)."""
    m = _with_eos(model, [])
    m.generation_config.repetition_penalty = 1.3
    m.generation_config.top_k = 5
    assert fast_decode_supported(m)  # the checkpoint's penalties do not force model.generate
    kw = {"max_new_tokens": 8, "do_sample": False}
    plain = generate_rollout(_with_eos(model, []), tok, MIXED, 2, **kw)
    for fast in (True, False):
        got = generate_rollout(m, tok, MIXED, 2, fast_decode=fast, **kw)
        _same(got, plain)
    # sampled (T=1): the recorded tokens follow the scored distribution (seeded: both paths draw the same)
    torch.manual_seed(0)
    a = generate_rollout(m, tok, MIXED, 2, max_new_tokens=8, fast_decode=False)
    torch.manual_seed(0)
    b = generate_rollout(_with_eos(model, []), tok, MIXED, 2, max_new_tokens=8, fast_decode=False)
    assert torch.equal(a.completion_ids, b.completion_ids)


def test_fast_decode_on_the_project_tiny_model(tmp_path):
    """The saved tiny model of trainer/pipelines/tiny.py, loaded as any hub model, chat template on: greedy equal to generate."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = tiny.build(tmp_path / "tiny")
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    tk = AutoTokenizer.from_pretrained(folder)
    kw = {"max_new_tokens": 16, "do_sample": False, "use_chat_template": True}
    _same(
        generate_rollout(model, tk, MIXED, 2, fast_decode=True, **kw),
        generate_rollout(model, tk, MIXED, 2, fast_decode=False, **kw),
    )
    torch.manual_seed(3)
    a = generate_rollout(model, tk, MIXED, 4, max_new_tokens=16, fast_decode=True)
    torch.manual_seed(3)
    _same(a, generate_rollout(model, tk, MIXED, 4, max_new_tokens=16, fast_decode=False))


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("temperature", [1.0, 0.8])
def test_recorded_sampling_logprobs_are_the_old_policy_logprobs_the_loss_uses(tok, model, fast, temperature):
    """Issue 14 (b): with a checkpoint whose generation_config sets repetition_penalty 1.3 and top_k 5, the
    rollout records the log-prob of every sampled token under the distribution it was drawn from, and these
    equal the pi_old log-probs the loss scores (train.score_logprobs) to 1e-4, on both sampling paths.
    Before, model.generate applied the checkpoint's penalty and top_k, so they differed."""
    from trainer.config import GRPOConfig
    from trainer.grpo.update import score_logprobs

    m = _with_eos(model, [])
    m.generation_config.repetition_penalty = 1.3
    m.generation_config.top_k = 5
    torch.manual_seed(0)
    ro = generate_rollout(m, tok, MIXED, 4, max_new_tokens=12, temperature=temperature, fast_decode=fast)
    assert ro.sample_logprobs is not None and ro.sample_logprobs.shape == ro.completion_ids.shape
    cfg = GRPOConfig(temperature=temperature, group_size=4, prompts_per_step=len(MIXED), max_new_tokens=12)
    old = score_logprobs(m, ro, cfg)
    mask = ro.completion_mask.bool()
    assert mask.sum() > 0
    assert torch.allclose(ro.sample_logprobs[mask], old[mask].float(), atol=1e-4, rtol=0)
