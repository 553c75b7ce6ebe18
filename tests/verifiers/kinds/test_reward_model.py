"""The reward_model kind over real gRPC: a tiny Qwen2ForSequenceClassification (num_labels=1) built from a
config and saved with the project's tokenizer, registered (admin token, path checks, spec errors),
called one by one and in a VerifyBatch (same rewards as scoring each item alone, fewer forward passes
than items), composed with a rule reward, listed with its spec, and still there after a restart."""

from __future__ import annotations

import math
import re

import grpc
import pytest
import torch
from transformers import Qwen2Config, Qwen2ForSequenceClassification

from proto.verifier.v1 import verifier_pb2 as pb
from trainer.pipelines.tiny import build_tokenizer
from verifiers.client import VerifierClient, VerifierError
from verifiers.kinds.reward_model import to_reward
from verifiers.launch import LocalServer

pytestmark = pytest.mark.docker
TOKEN = "rm-admin-token-7c1"
PAIRS = [
    (f"{a}+{b}=?", f"<think>{a}+{b}</think><answer>{a + b + k}</answer>")
    for a, b, k in [(1, 2, 0), (3, 4, 1), (9, 9, 0), (12, 30, 5), (7, 0, 0), (5, 55, 2), (8, 1, 0), (2, 2, 9)]
] * 2


def save_model(path, num_labels: int = 1, seed: int = 0):
    tok = build_tokenizer()
    tok.model_max_length = 256
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        intermediate_size=128,
        max_position_embeddings=256,
        pad_token_id=tok.pad_token_id,
        num_labels=num_labels,
    )
    torch.manual_seed(seed)
    model = Qwen2ForSequenceClassification(config)
    torch.nn.init.normal_(model.score.weight, std=0.5)  # scores spread enough to tell items apart
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return model.eval(), tok


def direct_score(model, tok, prompt: str, completion: str) -> float:
    """The oracle: one pair alone, no padding, the chat template's text."""
    text = tok.apply_chat_template(
        [{"role": "user", "content": prompt}, {"role": "assistant", "content": completion}], tokenize=False
    )
    ids = tok(text, return_tensors="pt", add_special_tokens=False)
    with torch.inference_mode():
        return float(model(**ids).logits[0, 0])


@pytest.fixture(scope="module")
def rm(tmp_path_factory):
    d = tmp_path_factory.mktemp("rm")
    model, tok = save_model(d / "rm")
    save_model(d / "two-labels", num_labels=2)
    (d / "not-a-model").mkdir()
    (d / "not-a-model" / "README").write_text("nothing to load")
    return d, model, tok


@pytest.fixture(scope="module")
def server(rm):
    d = rm[0]
    with LocalServer(
        pool_size=1,
        registry=str(d / "registry.sqlite"),
        log_path=str(d / "server.log"),
        env={"VERIFIER_ADMIN_TOKEN": TOKEN},
    ) as srv:
        yield srv


@pytest.fixture(scope="module")
def admin(server):
    with VerifierClient(server.target, token=TOKEN, retries=0) as c:
        yield c


def rm_request(name: str, path, **kw) -> pb.RegisterVerifierRequest:
    replace = kw.pop("replace", False)
    return pb.RegisterVerifierRequest(
        name=name, reward_model=pb.RewardModelVerifier(path=str(path), **kw), replace=replace
    )


@pytest.mark.slow
def test_rewards_over_grpc_match_the_model_alone_and_in_one_batch(rm, admin):
    d, model, tok = rm
    info = admin.register(rm_request("tiny-rm", d / "rm"))
    assert info.kind == "reward_model" and info.reward_model.path == str(d / "rm")
    assert info.reward_model.mapping == "sigmoid"
    expect = [to_reward(direct_score(model, tok, p, c), "sigmoid", 0, 0) for p, c in PAIRS]
    assert max(expect) - min(expect) > 1e-3  # the items really score differently
    one = admin.verify("tiny-rm", PAIRS[3][1], prompt=PAIRS[3][0])
    assert math.isclose(one.reward, expect[3], abs_tol=1e-5)
    results = admin.verify_batch([{"verifier": "tiny-rm", "prompt": p, "completion": c} for p, c in PAIRS])
    for r, e in zip(results, expect, strict=True):
        assert r.outcome in ("CORRECT", "INCORRECT") and math.isclose(r.reward, e, abs_tol=1e-5), r.detail
    sizes = [int(re.search(r"forward pass of (\d+)", r.detail).group(1)) for r in results]
    assert max(sizes) > 1, sizes  # a batch's items share forward passes
    assert len({(r.reward, r.detail) for r in results}) > 1


def test_minmax_mapping_and_composite_with_a_rule_reward(rm, admin):
    d, model, tok = rm
    admin.register(rm_request("tiny-rm-minmax", d / "rm", mapping="minmax", low=-0.5, high=0.5))
    admin.register(
        pb.RegisterVerifierRequest(
            name="rm-plus-format",
            composite=pb.CompositeVerifier(
                components=[
                    pb.Component(verifier="tiny-rm-minmax", weight=0.5),
                    pb.Component(verifier="think_format", weight=0.5),
                ]
            ),
        )
    )
    prompt, completion = PAIRS[1]
    score = direct_score(model, tok, prompt, completion)
    want_rm = min(1.0, max(0.0, score + 0.5))
    r = admin.verify("rm-plus-format", completion, prompt=prompt)
    assert math.isclose(r.components["tiny-rm-minmax"], want_rm, abs_tol=1e-5)
    assert r.components["think_format"] == 1.0
    assert math.isclose(r.reward, 0.5 * want_rm + 0.5, abs_tol=1e-5)


@pytest.mark.parametrize(
    ("name", "sub", "kw", "code", "needle"),
    [
        ("rm-missing", "no-such-dir", {}, grpc.StatusCode.FAILED_PRECONDITION, "is not a directory"),
        ("rm-empty", None, {}, grpc.StatusCode.INVALID_ARGUMENT, "reward_model.path is empty"),
        ("rm-junk", "not-a-model", {}, grpc.StatusCode.FAILED_PRECONDITION, "could not be loaded"),
        ("rm-two", "two-labels", {}, grpc.StatusCode.FAILED_PRECONDITION, "num_labels=2"),
        ("rm-map", "rm", {"mapping": "tanh"}, grpc.StatusCode.INVALID_ARGUMENT, "not one of sigmoid, minmax"),
        ("rm-mm", "rm", {"mapping": "minmax", "low": 1.0, "high": 1.0}, grpc.StatusCode.INVALID_ARGUMENT, "low < high"),
        ("rm-len", "rm", {"max_length": -3}, grpc.StatusCode.INVALID_ARGUMENT, "max_length"),
    ],
)
def test_registration_errors(rm, admin, name, sub, kw, code, needle):
    path = "" if sub is None else rm[0] / sub
    with pytest.raises(VerifierError) as e:
        admin.register(rm_request(name, path, **kw))
    assert e.value.code == code and needle in e.value.message, e.value.message


def test_registration_needs_the_admin_token(rm, server):
    with VerifierClient(server.target, retries=0) as anon, pytest.raises(VerifierError) as e:
        anon.register(rm_request("rm-anon", rm[0] / "rm"))
    assert e.value.code == grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.slow
def test_survives_a_restart(rm, admin, server):
    d, model, tok = rm
    admin.register(rm_request("rm-kept", d / "rm", max_length=64))
    with LocalServer(pool_size=1, registry=str(d / "registry.sqlite"), log_path=str(d / "server2.log")) as again:
        with VerifierClient(again.target, retries=0) as c:
            info = c.get_verifier("rm-kept")
            assert info.kind == "reward_model" and info.reward_model.max_length == 64
            prompt, completion = PAIRS[0]
            r = c.verify("rm-kept", completion, prompt=prompt)
            assert math.isclose(
                r.reward, to_reward(direct_score(model, tok, prompt, completion), "sigmoid", 0, 0), abs_tol=1e-5
            )
