"""Assert mode apart for Go (issue 49): apart_compiled.py's design in Go. The candidate's package ``main`` (its
files, its ``main`` renamed, its ``init`` functions run there only) is built into ``rlvr_cand`` with a generated
dispatch; the tests' package ``main`` into ``main`` with a generated stub of each entry function of the same
declared signature (in_sandbox/code/rlvr_wire.go: the wire by reflection, the runner, the server). Only the
entry functions cross, as typed data; the candidate's other names, ``init`` functions and packages never enter
the tests' build.

Types: Go's integers, floats, ``bool``, ``string``, slices, arrays and maps of them nested freely, and several
results. A named type, an interface (``interface{}``, ``any``), a pointer, a function, a channel or a variadic
parameter cannot cross (``CannotCross``). The tests' asserts are ``if ... { panic(...) }``: not counted (only
the calls are).

>>> [(f.name, f.params, f.results) for f in go_functions("func add(a, b int) (int, error) { return 0, nil }")]
Traceback (most recent call last):
...
verifiers.kinds.code.apart_sig.CannotCross: the type 'error'
>>> [(f.name, f.params, f.results) for f in go_functions("func F(xs []int, m map[string][]float64) [2]int {}")]
[('F', ('[]int', 'map[string][]float64'), ('[2]int',))]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import in_sandbox.code
from languages.assemble import rename
from languages.parse import blank_literals
from verifiers.kinds.code.apart_sig import CannotCross, held

_DIR = Path(in_sandbox.code.__file__).parent
_BASIC = set(
    "int int8 int16 int32 int64 uint uint8 uint16 uint32 uint64 uintptr float32 float64 bool string byte rune".split()
)
# Go's predeclared names: a candidate's ``func len`` or ``func panic`` never crosses (its stub would replace the
# builtin the tests call); the tests keep the builtin
_PREDECLARED = set(
    "append cap clear close complex copy delete imag len make max min new panic print println real recover "
    "bool byte comparable complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string uint "
    "uint8 uint16 uint32 uint64 uintptr any true false iota nil main init".split()
)
_FUNC = re.compile(r"(?m)^func\s+([A-Za-z_]\w*)\s*\(")
_GO_MAIN = re.compile(r"(?m)^func\s+main\s*\(\s*\)\s*\{")
_PACKAGE = re.compile(r"(?m)^\s*package\s+\w+")


@dataclass(frozen=True)
class GoFunc:
    name: str
    params: tuple[str, ...]
    results: tuple[str, ...]


def _type(text: str) -> str:
    """``text`` as a Go type this wire carries (spaces removed), or ``CannotCross``."""
    t = re.sub(r"\s+", "", text)
    rest = t
    while True:
        if rest in _BASIC:
            return t
        if m := re.match(r"\[\d*\]", rest):
            rest = rest[m.end() :]
            continue
        if rest.startswith("map["):
            depth, j = 0, 3
            for j in range(3, len(rest)):
                depth += {"[": 1, "]": -1}.get(rest[j], 0)
                if depth == 0:
                    break
            _type(rest[4:j])
            rest = rest[j + 1 :]
            continue
        raise CannotCross(f"the type '{rest or text.strip()}'")


def _split(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += {"[": 1, "]": -1, "(": 1, ")": -1, "{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*out, cur.strip()] if cur.strip() else out


def _fields(text: str) -> tuple[str, ...]:
    """The types of a parameter or result list (``a, b int, c string``, or types alone)."""
    parts = _split(text)
    if any("..." in p for p in parts):
        raise CannotCross("a variadic parameter")
    named = any(re.match(r"[A-Za-z_]\w*\s+\S", p) for p in parts)
    out, pending = [], 0
    for p in parts:
        if named:
            m = re.match(r"([A-Za-z_]\w*)\s+(.+)", p, re.S)
            if m is None:  # a name whose type comes with a later one
                pending += 1
                continue
            ty = _type(m.group(2))
            out += [ty] * (pending + 1)
            pending = 0
        else:
            out.append(_type(p))
    if pending:
        raise CannotCross(f"the parameters '{text.strip()}'")
    return tuple(out)


def _close(clean: str, at: int, pair: str = "()") -> int:
    depth = 0
    for j in range(at, len(clean)):
        depth += {pair[0]: 1, pair[1]: -1}.get(clean[j], 0)
        if depth == 0:
            return j
    return -1


def _clean(code: str) -> str:
    """``code`` with comments, strings and raw (backquoted) strings blanked, lengths kept."""
    code = re.sub(r"`[^`]*`", lambda m: re.sub(r"[^\n]", " ", m.group(0)), code)
    return blank_literals(code)


def go_functions(code: str, names: set[str] | None = None) -> list[GoFunc]:
    """The top-level functions (not methods) of ``code`` (those named in ``names`` if given), typed."""
    clean, out = _clean(code), []
    for m in _FUNC.finditer(clean):
        name = m.group(1)
        if names is not None and name not in names:
            continue
        close = _close(clean, m.end() - 1)
        brace = clean.find("{", close)
        if close < 0 or brace < 0:
            continue
        try:
            params = _fields(clean[m.end() : close])
            res = clean[close + 1 : brace].strip()
            results = _fields(res[1:-1]) if res.startswith("(") else (_type(res),) if res else ()
        except CannotCross as e:
            raise CannotCross(f"the entry function '{name}': {e}") if names is not None else e from None
        out.append(GoFunc(name, params, results))
    return out


def go_entries(candidate: str, tests: str) -> list[GoFunc]:
    """The candidate's top-level functions the tests use and do not define, typed."""
    used = set(re.findall(r"[A-Za-z_]\w*", _clean(tests)))
    own = set(_FUNC.findall(_clean(tests)))
    wanted = {n for n in _FUNC.findall(_clean(candidate)) if n in used and n not in own and n not in _PREDECLARED}
    return go_functions(candidate, wanted)


def _stub(i: int, f: GoFunc) -> str:
    params = ", ".join(f"a{k} {t}" for k, t in enumerate(f.params))
    res = ", ".join(f.results)
    res = f"({res})" if len(f.results) > 1 else res
    decl = "".join(f"\tvar r{k} {t}\n" for k, t in enumerate(f.results))
    args = ", ".join(f"a{k}" for k in range(len(f.params)))
    ptrs = ", ".join(f"&r{k}" for k in range(len(f.results)))
    ret = f"\treturn {', '.join(f'r{k}' for k in range(len(f.results)))}\n" if f.results else ""
    return (
        f'func {f.name}({params}) {res} {{\n{decl}\trlvrCall({i}, "{", ".join(f.results) or "nothing"}", '
        f"[]interface{{}}{{{args}}}, []interface{{}}{{{ptrs}}})\n{ret}}}\n\n"
    )


def _case(i: int, f: GoFunc) -> str:
    decl = "".join(
        f"\t\tvar a{k} {t}\n\t\trlvrGet(in, reflect.ValueOf(&a{k}).Elem())\n" for k, t in enumerate(f.params)
    )
    call = f"{f.name}({', '.join(f'a{k}' for k in range(len(f.params)))})"
    rs = ", ".join(f"r{k}" for k in range(len(f.results)))
    got = f"\t\t{rs} := {call}\n\t\treturn []interface{{}}{{{rs}}}\n" if f.results else f"\t\t{call}\n\t\treturn nil\n"
    return f"\tcase {i}:\n{decl}{got}"


def _package(code: str) -> str:
    return code if _PACKAGE.search(blank_literals(code)) else "package main\n" + code


def go_apart(p) -> tuple[str, dict[str, str]]:  # p: asserts.Parts
    from languages.record import BadTests

    t = f"rlvrTests{p.tag}"
    program, _ = rename(_package(p.program), _GO_MAIN, f"rlvrUnusedMain{p.tag}")
    tests, m = rename(_package(p.tests), _GO_MAIN, t)
    if m is None:
        raise BadTests("code: go tests (the reference) need func main() { ... panic(...) ... }")
    funcs = go_entries(p.program, p.tests) if p.program.strip() else []
    stubs = "".join(_stub(i, f) for i, f in enumerate(funcs))
    runner = f"package main\n\n{stubs}func main() {{\n\trlvrStart()\n\t{t}()\n\trlvrFinish()\n}}\n"
    cases = "".join(_case(i, f) for i, f in enumerate(funcs))
    server = (
        f'package main\n\nimport "reflect"\n\nvar _ = reflect.ValueOf\n\n'
        f"func rlvrDispatch{p.tag}(f int64, in *rlvrIn) []interface{{}} {{\n\tswitch f {{\n{cases}\t}}\n"
        f'\tpanic("no such function")\n}}\n\nfunc main() {{\n\trlvrServe(rlvrDispatch{p.tag})\n}}\n'
    )
    wire = (_DIR / "rlvr_wire.go").read_text()
    files = {"rlvr_cand.go": program, "rlvr_server.go": server, "rlvr_stub.go": runner, "rlvr_wire.go": wire}
    return tests, {**files, "rlvr_nonce": p.a + p.b}


def go_compile() -> list[str]:
    """Go's compile apart: the candidate's package built while the tests' file and the sentinel are held away."""
    build = ["go", "build", "-ldflags=-s -w", "-o"]
    cand = [*build, "rlvr_cand", "rlvr_cand.go", "rlvr_server.go", "rlvr_wire.go"]
    return held(cand, [*build, "main", "main.go", "rlvr_stub.go", "rlvr_wire.go"], ["main.go", "rlvr_nonce"])
