"""Assert mode apart for Rust (issue 49): apart_compiled.py's design in Rust. The candidate's crate (its ``main``
renamed away; whatever it puts before ``main`` runs there only) gets a generated server, the tests' crate a stub of
each entry function of the same declared signature (in_sandbox/code/rlvr_wire.rs: the wire by two traits, the
runner, the server; the candidate's stdin and stdout are the channel, its prints go to stderr). Only the entry
functions cross, as owned values of the declared types; an ``impl PartialEq`` that says yes to everything stays
in the candidate's crate, and a type the wire does not know is ``CannotCross``.

Types: integers, floats, ``bool``, ``char``, ``String`` and ``&str``, ``Vec<T>``, ``&[T]``, ``&Vec<T>``,
``Option<T>``, ``HashMap``/``BTreeMap``, tuples of 2 to 4, nested freely. The tests' ``assert!``, ``assert_eq!``
and ``assert_ne!`` are counted.

>>> [(f.name, f.params, f.ret) for f in rust_functions("fn f(xs: &[i64], s: &str, m: HashMap<String, Vec<f64>>) -> Option<(i64, bool)> {}")]
[('f', (('&', 'Vec<i64>'), ('&', 'String'), ('', '::std::collections::HashMap<String,Vec<f64>>')), 'Option<(i64,bool)>')]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import in_sandbox.code
from languages.assemble import rename
from verifiers.kinds.code.apart_sig import CannotCross, held

_DIR = Path(in_sandbox.code.__file__).parent
_SCALAR = set("i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char String".split())
_GENERIC = {"Vec": 1, "Option": 1, "HashMap": 2, "BTreeMap": 2}
_FN = re.compile(r"(?m)^[ \t]*(?:pub(?:\([\w:]+\))?\s+)?fn\s+([A-Za-z_]\w*)\s*([(<])")
_MAIN = re.compile(r"\bfn\s+main\s*\(\s*\)\s*\{")
_ASSERT = re.compile(r"\b(assert|assert_eq|assert_ne)!\s*([(\[{])")
_PREDECLARED = {"main", "drop", "panic", "assert", "print", "println", "format", "vec", "Some", "None", "Ok", "Err"}


@dataclass(frozen=True)
class RustFunc:
    name: str
    params: tuple[tuple[str, str], ...]  # (reference: "", "&" or "&mut", the owned type)
    ret: str


def _blank(code: str) -> str:
    """Comments, strings and char literals blanked (lifetimes kept), lengths kept."""
    out, i, n = [], 0, len(code)
    pat = re.compile(r'//[^\n]*|/\*.*?\*/|r(#*)".*?"\1|b?"(?:\\.|[^"\\])*"|b?\'(?:\\.|[^\\\'\n])\'', re.S)
    for m in pat.finditer(code):
        out.append(code[i : m.start()])
        out.append(re.sub(r"[^\n]", " ", m.group(0)))
        i = m.end()
    out.append(code[i:n])
    return "".join(out)


def _owned(t: str) -> str:
    """``t`` (spaces removed) as an owned type the wire carries, or ``CannotCross``."""
    if t in _SCALAR:
        return t
    if t == "str":
        return "String"
    if t.startswith("[") and t.endswith("]") and ";" not in t:
        return f"Vec<{_owned(t[1:-1])}>"
    if t.startswith("(") and t.endswith(")"):
        parts = [p for p in _split(t[1:-1]) if p]
        if not 2 <= len(parts) <= 4:
            raise CannotCross(f"the tuple '{t}'")
        return "(" + ",".join(_owned(p) for p in parts) + ")"
    m = re.fullmatch(r"(?:(?:std::)?collections::)?(\w+)<(.*)>", t)
    if m and m.group(1) in _GENERIC:
        args = _split(m.group(2))
        if len(args) != _GENERIC[m.group(1)]:
            raise CannotCross(f"the type '{t}'")
        path = "::std::collections::" if m.group(1) in ("HashMap", "BTreeMap") else ""
        return f"{path}{m.group(1)}<{','.join(_owned(a) for a in args)}>"
    raise CannotCross(f"the type '{t}'")


def _split(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += {"<": 1, ">": -1, "(": 1, ")": -1, "[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [*out, cur] if cur else out


def _param(text: str) -> tuple[str, str]:
    name, _, ty = text.partition(":")
    if not ty or not re.fullmatch(r"(?:mut\s+)?[A-Za-z_]\w*", name.strip()):
        raise CannotCross(f"the parameter '{text.strip()}'")
    t = re.sub(r"'\w+\s*", "", ty)  # lifetimes
    t = re.sub(r"\s+", "", t.replace("mut", "mut "))
    for ref in ("&mut", "&"):
        if t.startswith(ref):
            inner = t[len(ref) :].strip()
            if inner.startswith("&"):
                raise CannotCross(f"the type '{ty.strip()}'")
            return ref, _owned(inner)
    return "", _owned(t)


def rust_functions(code: str, names: set[str] | None = None) -> list[RustFunc]:
    """The top-level free functions of ``code`` (those in ``names`` if given), typed; a generic one cannot cross."""
    clean, out, depth_at = _blank(code), [], _depths(_blank(code))
    for m in _FN.finditer(clean):
        name = m.group(1)
        if (names is not None and name not in names) or depth_at[m.start(1)] != 0:
            continue
        if m.group(2) == "<":
            raise CannotCross(f"the entry function '{name}' is generic")
        close = _close(clean, m.end() - 1)
        brace = clean.find("{", close)
        if close < 0 or brace < 0:
            continue
        try:
            params = tuple(_param(p) for p in _split(clean[m.end() : close]) if p.strip())
            ret = clean[close + 1 : brace].strip()
            if ret.startswith("where") or " where " in f" {ret} ":
                raise CannotCross("a where clause")
            ret = _owned(re.sub(r"\s+", "", ret[2:])) if ret.startswith("->") else "()"
            if ret != "()" and clean[close + 1 : brace].replace(" ", "").startswith("->&"):
                raise CannotCross("a returned reference")
        except CannotCross as e:
            raise CannotCross(f"the entry function '{name}': {e}") from None
        out.append(RustFunc(name, params, ret))
    return out


def _depths(clean: str) -> list[int]:
    out, d = [], 0
    for ch in clean:
        out.append(d)
        d += {"{": 1, "}": -1}.get(ch, 0)
    return out


def _close(clean: str, at: int) -> int:
    depth = 0
    for j in range(at, len(clean)):
        depth += {"(": 1, ")": -1}.get(clean[j], 0)
        if depth == 0:
            return j
    return -1


def rust_entries(candidate: str, tests: str) -> list[RustFunc]:
    used = set(re.findall(r"[A-Za-z_]\w*", _blank(tests)))
    own = {m.group(1) for m in _FN.finditer(_blank(tests))}
    wanted = {m.group(1) for m in _FN.finditer(_blank(candidate))}
    return rust_functions(candidate, {n for n in wanted if n in used and n not in own and n not in _PREDECLARED})


def _stub(i: int, f: RustFunc) -> str:
    params = ", ".join(f"a{k}: {ref + ' ' if ref else ''}{_as_param(t, ref)}" for k, (ref, t) in enumerate(f.params))
    puts = "".join(f"    rlvr::Put::put(&*a{k}, &mut q);\n" if ref else f"    rlvr::Put::put(&a{k}, &mut q);\n"
                   for k, (ref, _) in enumerate(f.params))  # fmt: skip
    return (f"#[allow(dead_code)]\nfn {f.name}({params}) -> {f.ret} {{\n    let mut q: Vec<u8> = Vec::new();\n"
            f"    rlvr::Put::put(&{i}i64, &mut q);\n{puts}    rlvr::call::<{f.ret}>(q, \"{f.ret}\")\n}}\n")  # fmt: skip


def _as_param(owned: str, ref: str) -> str:
    """The declared parameter type of a reference: ``&str`` and ``&[T]`` for String and Vec (what callers pass)."""
    if not ref:
        return owned
    if owned == "String":
        return "str"
    if owned.startswith("Vec<"):
        return f"[{owned[4:-1]}]"
    return owned


def _case(i: int, f: RustFunc) -> str:
    gets = "".join(f"        let mut a{k}: {t} = rlvr::Get::get(i);\n" for k, (_, t) in enumerate(f.params))
    args = ", ".join(f"{ref + ' ' if ref else ''}a{k}".replace("& a", "&a") for k, (ref, _) in enumerate(f.params))
    return (f"        {i} => {{\n{gets}        if !i.s.is_empty() {{ rlvr::bad(\"call\") }}\n"
            f"        let r: {f.ret} = {f.name}({args});\n        rlvr::Put::put(&r, o);\n        }}\n")  # fmt: skip


def rust_apart(p) -> tuple[str, dict[str, str]]:  # p: asserts.Parts
    from languages.record import BadTests

    t = f"rlvr_tests_{p.tag}"
    program, _ = rename(p.program, _MAIN, f"rlvr_unused_main_{p.tag}")
    tests, m = rename(p.tests, _MAIN, t)
    if m is None:
        raise BadTests("code: rust tests (the reference) need fn main() { assert!(...); }")
    funcs = rust_entries(p.program, p.tests) if p.program.strip() else []
    wire = (_DIR / "rlvr_wire.rs").read_text()
    clean, counted, last = _blank(tests), [], 0
    for a in _ASSERT.finditer(clean):  # each assert counted: rlvr_assert_eq!(...) counts, then asserts
        counted += [tests[last : a.start()], f"rlvr_{a.group(1)}!{a.group(2)}"]
        last = a.end()
    tests = "".join(counted) + tests[last:]
    macros = "".join(
        f"#[allow(unused_macros)]\nmacro_rules! rlvr_{n} {{ ($($t:tt)*) => {{{{ rlvr::ASSERTS.fetch_add(1, "
        f"::std::sync::atomic::Ordering::SeqCst); {n}!($($t)*) }}}} }}\n"
        for n in ("assert", "assert_eq", "assert_ne")
    )
    stubs = "".join(_stub(i, f) for i, f in enumerate(funcs))
    main = f"{macros}{stubs}{tests}\n{wire}\nfn main() {{\n    rlvr::start();\n    {t}();\n    rlvr::finish();\n}}\n"
    cases = "".join(_case(i, f) for i, f in enumerate(funcs))
    server = (f"\n{wire}\n#[allow(unused_variables, unused_mut, unreachable_code)]\n"
              f"fn rlvr_dispatch_{p.tag}(f: i64, i: &mut rlvr::In, o: &mut Vec<u8>) {{\n    match f {{\n{cases}"
              f'        _ => panic!("no such function"),\n    }}\n}}\n'
              f"fn main() {{\n    rlvr::serve(rlvr_dispatch_{p.tag});\n}}\n")  # fmt: skip
    return main, {"rlvr_cand.rs": program + "\n" + server, "rlvr_nonce": p.a + p.b}


def rust_compile() -> list[str]:
    rc = ["rustc", "-O", "--edition", "2021", "-C", "strip=debuginfo", "--cap-lints", "allow", "-o"]
    return held([*rc, "rlvr_cand", "rlvr_cand.rs"], [*rc, "main", "main.rs"], ["main.rs", "rlvr_nonce"])
