"""``POST /get_reward``: OpenRLHF's remote reward model shape, answered by a named verifier.

OpenRLHF (``--remote_rm_url http://host:port/get_reward?verifier=math``) posts
``{"query": [...], "prompts": [...], "labels": [...]}``: each query is the decoded prompt + response
(``skip_special_tokens=False``), the prompt the text it was generated from, the label the dataset's
answer column. It reads ``{"rewards": [...], "scores": [...], "extra_logs": {...}}``: ``rewards`` feed
the advantages, ``scores`` (rewards in [0, 1]) its dynamic filtering, and every ``extra_logs`` entry is
logged per sample, so each is a list aligned with the queries.

Here the response is the query with its prompt prefix removed (``split_completion``), the label is
the reference, and the verifier is the query parameter ``verifier`` (default: the server's
``--reward-verifier``); every other query parameter is one of its options (``&fallback=last_number``). The whole request is one ``VerifierService.verify_batch`` call. The body is read
as JSON whatever its Content-Type (OpenRLHF sends ``application/json``; ``curl -d`` sends a form type,
none at all is common), as the ``/v1`` routes read theirs. OpenRLHF has no
"cannot grade" value, so an infrastructure failure scores 0 and is flagged in ``extra_logs.sandbox_error``.
"""

from __future__ import annotations

import json

from fastapi import APIRouter, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field, ValidationError

from verifiers.fronts.http.common import HttpError, run_blocking
from verifiers.shapes.base import ServiceError
from verifiers.shapes.outcome import OUTCOMES
from verifiers.shapes.request import Request as VerifyRequest

openrlhf_router = APIRouter(tags=["openrlhf"])


class RewardRequest(BaseModel):
    query: list[str] = Field(..., description="prompt + response, as decoded by OpenRLHF")
    prompts: list[str] | None = Field(None, description="the prompts, to strip from each query")
    labels: list[str | int | float | None] | None = Field(None, description="references (gold answers or tests)")


class RewardResponse(BaseModel):
    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]


def split_completion(query: str, prompt: str) -> str:
    """The response part of an OpenRLHF query: after the prompt when the query starts with it (or holds
    it: a tokenizer may decode a leading space or BOS differently), else the whole query.

    >>> split_completion("Q: 1+1? A: \\\\boxed{2}", "Q: 1+1? A:")
    ' \\\\boxed{2}'
    >>> split_completion("<s>Q: hi</s>", "Q: hi")
    '</s>'
    >>> split_completion("no prompt here", "Q:")
    'no prompt here'
    """
    if not prompt:
        return query
    if query.startswith(prompt):
        return query[len(prompt) :]
    at = query.find(prompt)
    return query[at + len(prompt) :] if at >= 0 else query


def build_requests(body: RewardRequest, verifier: str, options: dict[str, str] | None = None) -> list[VerifyRequest]:
    n = len(body.query)
    for name in ("prompts", "labels"):
        got = getattr(body, name)
        if got is not None and len(got) != n:
            raise HttpError("INVALID_ARGUMENT", f"'{name}' has {len(got)} items but 'query' has {n}: they must align")
    prompts = body.prompts or [""] * n
    labels = ["" if x is None else str(x) for x in (body.labels or [None] * n)]
    return [
        VerifyRequest(verifier, split_completion(q, p), ref, p, options or {}, id=str(i))
        for i, (q, p, ref) in enumerate(zip(body.query, prompts, labels, strict=True))
    ]


def reward_response(verdicts: list) -> dict:
    rewards = [float(v.reward) for v in verdicts]
    logs = {o.value.lower(): [float(v.outcome is o) for v in verdicts] for o in OUTCOMES}
    logs["elapsed_s"] = [float(v.elapsed_s) for v in verdicts]
    logs["signalled"] = [float(bool(v.signals)) for v in verdicts]  # any exploit signal (docs/verifiers.md)
    return {"rewards": rewards, "scores": rewards, "extra_logs": logs}


def parse_body(raw: bytes) -> RewardRequest:
    """The JSON body, whatever the Content-Type header said; FastAPI's 422 (as for a typed body) otherwise."""
    try:
        return RewardRequest.model_validate(json.loads(raw or b"{}"))
    except ValidationError as e:
        raise RequestValidationError([{**err, "loc": ("body", *err["loc"])} for err in e.errors()]) from None
    except ValueError as e:  # json.JSONDecodeError, UnicodeDecodeError
        raise RequestValidationError(
            [{"type": "json_invalid", "loc": ("body",), "msg": f"JSON decode error: {e}", "input": {}}]
        ) from None


BODY_DOC = {
    "requestBody": {"required": True, "content": {"application/json": {"schema": RewardRequest.model_json_schema()}}}
}


@openrlhf_router.post("/get_reward", response_model=RewardResponse, openapi_extra=BODY_DOC)
async def get_reward(
    request: Request,
    verifier: str = Query("", description="verifier to grade with (default: the server's --reward-verifier)"),
) -> dict:
    """OpenRLHF remote reward: one reward per query, graded by a named verifier."""
    body = parse_body(await request.body())
    name = verifier or request.app.state.reward_verifier
    if not name:
        raise HttpError(
            "INVALID_ARGUMENT",
            "no verifier named: add ?verifier=NAME to the URL "
            "(GET /v1/verifiers lists them) or start the server with --reward-verifier",
        )
    # every other query parameter is an option of the verifier (?verifier=math&fallback=last_number): the
    # service refuses a key the verifier does not know, as it does on /v1/verify
    options = {k: v for k, v in request.query_params.items() if k != "verifier"}
    reqs = build_requests(body, name, options)
    if not reqs:
        return {"rewards": [], "scores": [], "extra_logs": {}}
    try:
        verdicts = await run_blocking(request, request.app.state.service.verify_batch, reqs)
    except ServiceError as e:
        raise HttpError(e.status, str(e)) from None
    return reward_response(verdicts)
