"""The ``tools`` section of a GRPO run (tool-integrated reasoning, docs/train.md "Tool rollouts"): how a
rollout calls Python in the middle of its answer. Absent (the default): rollouts are one pass of decoding,
as before. Field descriptions are the documentation."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ToolFormat = Literal["python", "hermes"]


class ToolsConfig(BaseModel):
    """A rollout may call a Python tool: decoding stops at a call, the call runs in the rollout's sandbox session,
    its output is appended inside a marked span the loss never trains on, decoding goes on."""

    model_config = ConfigDict(extra="forbid")
    format: ToolFormat = Field(
        "python",
        description="the call's shape: 'python' (a ```python fenced block, the call runs when the block is closed "
        'by ```), or \'hermes\' (Qwen2.5 / Hermes chat templates: <tool_call>{"name": "python", "arguments": '
        '{"code": ...}}</tool_call>)',
    )
    max_calls: int = Field(4, ge=1, description="calls per rollout; a call past this ends the rollout (it is not run)")
    output_chars: int = Field(
        512, ge=16, description="a call's output is cut to this many characters (the tail marked as cut)"
    )
    timeout_s: float = Field(5.0, gt=0, le=600, description="wall-clock limit of one call (one cell)")
    workers: int = Field(16, ge=1, le=256, description="calls of a step run in parallel on this many threads")
    setup: str = Field("", description="Python run once per problem in a session its G rollouts fork from")
