"""Tools a rollout calls mid-answer: the executor interface (``ToolRunner``), the call formats, the output span.

A ``ToolRunner`` holds one sandbox session per rollout. ``start(groups, group_size, setup)`` opens them (a
runner may open one session per problem, run ``setup`` there once and fork it G times), ``run(handle, code,
timeout_s)`` runs one cell in a rollout's session and returns a ``ToolResult``, ``close(handles)`` ends them.
Model output is only ever run through a runner, which sends it to the sandbox: the trainer never executes or
evaluates it (the call's JSON in the ``hermes`` format is read with ``json.loads``, a data parser).

The formats (``ToolsConfig.format``):

- ``python`` (default): a fenced block ```` ```python\\n<code>``` ```` ; the call is made when the block's
  closing fence is decoded. Output span: ``\\n<output>\\n...\\n</output>\\n``.
- ``hermes`` (Qwen2.5 / Hermes chat templates): ``<tool_call>{"name": "python", "arguments": {"code": ...}}
  </tool_call>``; the call is made at ``</tool_call>``. Output span: ``\\n<tool_response>\\n...\\n
  </tool_response>\\n``.

The output is cut to ``output_chars`` characters (with a note saying so), and a closing marker inside it is
defused, so a tool cannot end its own span. Whatever the span holds, the rollout's graded text is the policy's
own tokens only (trainer/rollout/tool_decode.py).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

ToolStatus = Literal["ok", "error", "timeout", "infra"]
# ok: ran to the end; error: the cell raised (or the call was malformed); timeout: the cell hit its limit;
# infra: the session itself failed (not the policy's fault: the rollout is masked out of the loss)


@dataclass(frozen=True)
class ToolResult:
    """One call's output text (stdout, then the error if any) and how it ended."""

    output: str
    status: ToolStatus = "ok"
    elapsed_s: float = 0.0


class ToolRunner(Protocol):
    """Runs a rollout's tool calls in that rollout's own sandbox session (see the module doc)."""

    def start(self, groups: int, group_size: int, setup: str = "") -> list[Any]:
        """groups * group_size handles, rows in group order (group g is rows g*G .. g*G+G-1)."""
        ...

    def run(self, handle: Any, code: str, timeout_s: float) -> ToolResult: ...

    def close(self, handles: Sequence[Any]) -> None: ...


@dataclass(frozen=True)
class CallFormat:
    """Where a call ends (``stop``) and begins (``start``) in the policy's text, and the output span around it."""

    name: str
    start: str
    stop: str
    open_output: str
    close_output: str

    def find_call(self, segment: str) -> str | None:
        """The call's body when ``segment`` (the policy's text since the last output) ends a call, else None."""
        end = segment.rfind(self.stop)
        if end < 0:
            return None
        begin = segment.rfind(self.start, 0, end)
        if begin < 0:
            return None
        return segment[begin + len(self.start) : end]

    def wrap(self, output: str, limit: int) -> str:
        """The output span appended to the context: cut to ``limit`` characters, its closing marker defused."""
        if len(output) > limit:
            output = output[:limit] + f"\n[output cut: {len(output) - limit} more characters]"
        output = output.replace(self.close_output, self.close_output.replace("</", "< /"))
        return f"{self.open_output}{output}{self.close_output}"


FORMATS = {
    "python": CallFormat("python", "```python", "```", "\n<output>\n", "\n</output>\n"),
    "hermes": CallFormat("hermes", "<tool_call>", "</tool_call>", "\n<tool_response>\n", "\n</tool_response>\n"),
}


def call_code(fmt: CallFormat, body: str) -> tuple[str | None, str]:
    """(code to run, or None when the call is malformed; the error to show the policy instead)."""
    if fmt.name == "python":
        return body.strip("\n"), ""
    try:
        call = json.loads(body)
    except ValueError as e:
        return None, f"invalid tool call: not JSON ({e.msg})"
    args = call.get("arguments") if isinstance(call, dict) else None
    if isinstance(args, str):  # some templates send the arguments as a JSON string
        try:
            args = json.loads(args)
        except ValueError:
            args = None
    if not isinstance(call, dict) or call.get("name") != "python" or not isinstance(args, dict):
        return None, 'invalid tool call: expected {"name": "python", "arguments": {"code": "..."}}'
    code = args.get("code")
    if not isinstance(code, str):
        return None, "invalid tool call: arguments.code must be a string"
    return code, ""


def run_calls(runner: ToolRunner, calls: Sequence[tuple[Any, str]], timeout_s: float, workers: int) -> list[ToolResult]:
    """Run (handle, code) calls in parallel threads; results in order. A runner that raises gives that call
    an ``infra`` result (the session failed), never the step's end."""

    def one(call: tuple[Any, str]) -> ToolResult:
        t0 = time.perf_counter()
        try:
            res = runner.run(call[0], call[1], timeout_s)
        except Exception as e:  # noqa: BLE001 - a dead session is this rollout's failure, not the run's
            return ToolResult(f"tool session failed: {type(e).__name__}", "infra", time.perf_counter() - t0)
        return res if res.elapsed_s else ToolResult(res.output, res.status, time.perf_counter() - t0)

    if len(calls) <= 1:
        return [one(c) for c in calls]
    with ThreadPoolExecutor(max_workers=min(workers, len(calls)), thread_name_prefix="tool") as pool:
        return list(pool.map(one, calls))


class ScriptedToolRunner:
    """A deterministic runner for tests and benchmarks: it runs nothing. ``outputs`` maps a call's code
    (stripped) to its ``ToolResult`` (or output text); other code gets ``default``. ``dead`` handles raise,
    as a session that died would. Every call is kept in ``calls`` as (handle, code)."""

    def __init__(
        self,
        outputs: dict[str, ToolResult | str] | None = None,
        default: ToolResult | str = "",
        dead: Sequence[int] = (),
    ):
        self.outputs = {
            k.strip(): v if isinstance(v, ToolResult) else ToolResult(v) for k, v in (outputs or {}).items()
        }
        self.default = default if isinstance(default, ToolResult) else ToolResult(default)
        self.dead, self.calls, self.closed = set(dead), [], []
        self.started: list[tuple[int, int, str]] = []

    def start(self, groups: int, group_size: int, setup: str = "") -> list[int]:
        self.started.append((groups, group_size, setup))
        return list(range(groups * group_size))

    def run(self, handle: int, code: str, timeout_s: float) -> ToolResult:
        self.calls.append((handle, code))
        if handle in self.dead:
            raise ConnectionError(f"session {handle} is gone")
        return self.outputs.get(code.strip(), self.default)

    def close(self, handles: Sequence[int]) -> None:
        self.closed.extend(handles)


@dataclass
class ToolTrace:
    """What the tools did in a rollout, per row: calls made, calls that failed (error, timeout, malformed), whether
    the session failed (``infra``: the row is masked out of the loss), and the step's seconds in tools."""

    calls: list[int]
    errors: list[int]
    infra: list[bool]
    tool_s: float = 0.0
    outputs: list[list[str]] = field(default_factory=list)  # per row: each call's output as the runner gave it
    codes: list[list[str]] = field(default_factory=list)  # per row: each call's code (as text; the signals read it)

    def __post_init__(self) -> None:
        if not self.outputs:
            self.outputs = [[] for _ in self.calls]
        if not self.codes:
            self.codes = [[] for _ in self.calls]

    def select(self, rows: Sequence[int]) -> ToolTrace:
        return ToolTrace(
            [self.calls[i] for i in rows],
            [self.errors[i] for i in rows],
            [self.infra[i] for i in rows],
            self.tool_s,
            [self.outputs[i] for i in rows],
            [self.codes[i] for i in rows],
        )


def policy_text(tokenizer, toks: Sequence[int], own: Sequence[int]) -> str:
    """What a tool rollout's grader reads: the tokens the policy sampled (``own`` 1), decoded; tool output never."""
    return tokenizer.decode([t for t, o in zip(toks, own, strict=True) if o], skip_special_tokens=True)


def transcript_text(tokenizer, segments: Sequence[tuple[str, bool]]) -> str:
    """The graded text of a transcript ``[(text, written by the policy), ...]``, by the tool loop's own rule
    (``policy_text``): the alarm's tool canaries go through it (trainer/alarm/tool_canaries.py)."""
    toks: list[int] = []
    own: list[int] = []
    for text, mine in segments:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        toks += ids
        own += [int(mine)] * len(ids)
    return policy_text(tokenizer, toks, own)


ANSWER_MARKS = ("\\boxed", "<answer>", "</answer>")  # what a final answer looks like (the one rule's markers)
# code that reaches past the cell's own values: files, the environment, other processes (read as text, never run)
_READS = re.compile(
    r"\bopen\s*\(|\bos\s*\.|\bpathlib\b|\bPath\s*\(|\bglob\b|\bsubprocess\b|\bshutil\b|\bio\s*\.\s*open\b"
    r"|__import__|\bimportlib\b|\bsys\s*\.\s*modules\b|\benviron\b|\bgetenv\b|^\s*[!%]",
    re.MULTILINE,
)
# the signals that mark an exploit attempt (the alarm's audit refuses a paid completion that carries one:
# trainer/alarm/watch.py); tool.answer_marker and tool.answer_only_in_output are never paid anyway
TOOL_EXPLOITS = ("tool.read_files", "tool.printed_reference")


def tool_signals(
    outputs: Sequence[str], reference: str, codes: Sequence[str] = (), own_text: str | None = None
) -> list[str]:
    """Exploit signals of one rollout's tool use (informative, like the verifier's: they never change the reward;
    docs/verifiers.md's signal table):

    - ``tool.answer_marker``: a call's output holds a box or an answer tag, the shape of a final answer
      (never graded there: the graded text is the policy's own tokens);
    - ``tool.answer_only_in_output``: the reference is in a call's output and nowhere in the policy's own text
      (``own_text``): the rollout left its answer to the tool;
    - ``tool.printed_reference``: a call printed the reference verbatim from a literal of its code (it did not
      compute it: the reference came from somewhere the policy should not see);
    - ``tool.read_files``: a call's code opens files, lists folders, reads the environment or starts processes
      (the task gives it none: a policy that does this is looking for the answer).

    >>> tool_signals(["4042"], "4042", ["print(47*86)"], "<answer>4042</answer>")
    []
    >>> tool_signals(["4042"], "4042", ["print(open('/srv/ref').read())"], "<answer>4042</answer>")
    ['tool.read_files']
    >>> tool_signals(["\\\\boxed{4042}"], "4042", ["print('\\\\boxed{4042}')"], "")
    ['tool.answer_marker', 'tool.answer_only_in_output', 'tool.printed_reference']
    """
    out = []
    if any(m in o for o in outputs for m in ANSWER_MARKS):
        out.append("tool.answer_marker")
    ref = reference.strip()
    printed = [o for o in outputs if ref and _holds(o, ref)]
    if printed and own_text is not None and not _holds(own_text, ref):
        out.append("tool.answer_only_in_output")
    if printed and any(_holds(c, ref) for c in codes):
        out.append("tool.printed_reference")
    if any(_READS.search(c) for c in codes):
        out.append("tool.read_files")
    return out


def _holds(text: str, ref: str) -> bool:
    """``ref`` stands in ``text`` as a whole (not inside a longer number or word: 42 is not in 1425)."""
    return re.search(rf"(?<![\w.]){re.escape(ref)}(?![\w])", text) is not None
