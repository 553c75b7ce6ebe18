"""The entry functions of a C or C++ candidate and their declared types, read from the source text (issue 49).

Assert mode apart (verifiers/kinds/code/apart_compiled.py) sends calls across a process boundary as typed data:
the tests' unit gets a stub of each entry function with the same declared signature, the candidate's unit a call
server. Both need the types, which come from the candidate's own definitions (HumanEval-X and MultiPL-E give
the signature in the prompt, which the completion continues). Nothing is evaluated: comments, literals and
preprocessor lines are blanked, top-level definitions found by brace depth, types parsed by a small grammar.

An *entry function* is a function the candidate defines at the top level whose name the tests use and do not
define themselves. A type the grammar does not know (a struct, a template parameter, a pointer other than a C
string, a typedef) cannot cross: ``CannotCross`` names it, and the verdict says so.

>>> [(f.name, f.ret.cpp, [t.cpp for t in f.params]) for f in functions("long add(long a, long b) { return a+b; }", "cpp")]
[('add', 'long', ['long', 'long'])]
>>> functions("vector<vector<int>> f(const vector<string>& xs, map<string,int> m);", "cpp")
[]
>>> functions("std::vector<std::vector<int>> f(const vector<string>& xs, map<string,int> m) {}", "cpp")[0].ret.cpp
'std::vector<std::vector<int>>'
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from languages.parse import blank_literals


class CannotCross(ValueError):
    """An entry function's type has no marshalling across the process boundary."""


@dataclass(frozen=True)
class Ty:
    """A declared type: ``kind`` (int, uint, float, bool, str, cstr, void, vector, set, map, umap, optional,
    tuple, pair), its C/C++ spelling, its element types."""

    kind: str
    cpp: str
    args: tuple[Ty, ...] = ()


@dataclass(frozen=True)
class Func:
    name: str
    ret: Ty
    params: tuple[Ty, ...]
    refs: tuple[str, ...]  # per parameter: "" (by value), "&" or "const&" (as declared: C++ links by it)


_SCALARS = {"int", "long", "short", "signed", "unsigned", "char", "float", "double", "bool", "_Bool", "void"}
_ALIAS = {"size_t": "unsigned long", "int64_t": "long", "int32_t": "int", "uint64_t": "unsigned long",
          "uint32_t": "unsigned int", "int16_t": "short", "uint8_t": "unsigned char", "int8_t": "signed char",
          "long long int": "long long", "long int": "long", "unsigned long int": "unsigned long",
          "short int": "short", "signed int": "int", "signed": "int", "unsigned": "unsigned int",
          "signed long": "long", "signed long long": "long long", "_Bool": "bool",
          "unsigned long long int": "unsigned long long"}  # fmt: skip
_FLOATS = {"float", "double", "long double"}
_INTS = {"int", "long", "long long", "short", "char", "signed char"}
_UINTS = {"unsigned int", "unsigned long", "unsigned long long", "unsigned short", "unsigned char"}
_TEMPLATES = {"vector": 1, "set": 1, "optional": 1, "map": 2, "unordered_map": 2, "pair": 2, "tuple": -1}
_STD = {"vector": "std::vector", "set": "std::set", "optional": "std::optional", "map": "std::map",
        "unordered_map": "std::unordered_map", "pair": "std::pair", "tuple": "std::tuple"}  # fmt: skip
_KIND = {"unordered_map": "umap"}
_TOKEN = re.compile(r"[A-Za-z_]\w*|::|[<>,*&\[\]()]|\S")
_DROP = {"const", "volatile", "struct", "std", "::", "inline", "static", "constexpr", "extern", "register"}


def _parse(toks: list[str], i: int, lang: str) -> tuple[Ty, int]:
    words = []
    while i < len(toks) and toks[i] in _SCALARS:
        words.append(toks[i])
        i += 1
    if not words and i < len(toks) and toks[i] in _ALIAS and toks[i] not in _SCALARS:
        words, i = [_ALIAS[toks[i]]], i + 1
    if words:
        name = " ".join(words)
        name = _ALIAS.get(name, name)
        if name == "void":
            ty = Ty("void", "void")
        elif name == "bool":
            ty = Ty("bool", "bool")
        elif name in _FLOATS:
            ty = Ty("float", name)
        elif name in _INTS:
            ty = Ty("int", name)
        elif name in _UINTS:
            ty = Ty("uint", name)
        else:
            raise CannotCross(f"the type '{name}'")
    elif i < len(toks) and toks[i] == "string" and lang == "cpp":
        ty, i = Ty("str", "std::string"), i + 1
    elif i < len(toks) and toks[i] in _TEMPLATES and lang == "cpp":
        name, i = toks[i], i + 1
        if i >= len(toks) or toks[i] != "<":
            raise CannotCross(f"the type '{name}' without its arguments")
        args, i = [], i + 1
        while True:
            t, i = _parse(toks, i, lang)
            args.append(t)
            if i < len(toks) and toks[i] == ",":
                i += 1
                continue
            if i < len(toks) and toks[i] == ">":
                i += 1
                break
            raise CannotCross(f"the type arguments of '{name}'")
        n = _TEMPLATES[name]
        if (n > 0 and len(args) != n) or any(a.kind == "void" for a in args):
            raise CannotCross(f"'{name}' with {len(args)} type arguments")
        spelled = f"{_STD[name]}<{', '.join(a.cpp for a in args)}>"
        ty = Ty(_KIND.get(name, name), spelled, tuple(args))
    else:
        raise CannotCross(f"the type '{toks[i] if i < len(toks) else ''}'")
    while i < len(toks) and toks[i] == "*":
        if ty.cpp == "char" and lang == "c":
            ty = Ty("cstr", "char *")
        else:
            raise CannotCross(f"a pointer to '{ty.cpp}'")
        i += 1
    return ty, i


def parse_type(text: str, lang: str) -> tuple[Ty, str]:
    """(the type, its reference: "", "&" or "const&") of a declaration's type text (no name)."""
    raw = _TOKEN.findall(text)
    const = "const" in raw
    toks = [t for t in raw if t not in _DROP]
    ref = ""
    while toks and toks[-1] == "&":
        ref = "const&" if const else "&"
        toks.pop()
    if "&" in toks or "[" in toks or "(" in toks:
        raise CannotCross(f"the declaration '{text.strip()}'")
    ty, i = _parse(toks, 0, lang)
    if i != len(toks):
        raise CannotCross(f"the type '{text.strip()}'")
    if const and ty.kind == "cstr":
        ty = Ty("cstr", "const char *")
    return ty, ref


def _split_params(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [*out, cur] if cur.strip() or out else []


def _param(text: str, lang: str) -> tuple[Ty, str]:
    text = text.split("=", 1)[0].strip()
    toks = _TOKEN.findall(text)
    if len(toks) > 1 and re.fullmatch(r"[A-Za-z_]\w*", toks[-1]) and toks[-1] not in _SCALARS | _DROP:
        if toks[-2] not in ("::", "struct"):  # the parameter's name: drop it
            text = text[: text.rstrip().rfind(toks[-1])]
    return parse_type(text, lang)


_PRE = re.compile(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*")
_HEAD = re.compile(r"(?s)(?P<ret>[\w:<>,\s*&]+?)\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^()]*)\)\s*(?:const\s*)?\Z")


def top_level(code: str) -> list[tuple[str, str, str]]:
    """(name, return type text, parameters text) of each function ``code`` defines at the top level; a head that
    is not a plain function (a template, a method, an operator) is left out."""
    clean = _PRE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), blank_literals(code))
    out, depth, start = [], 0, 0
    for i, ch in enumerate(clean):
        if ch == "{":
            if depth == 0:
                head = clean[start:i].strip()
                m = _HEAD.search(head)
                if m and "template" not in head and "operator" not in head and "::" not in m.group("name"):
                    ret = m.group("ret").strip()
                    if ret and not re.search(r"\b(?:class|struct|namespace|enum|union|return|else)\b", ret):
                        out.append((m.group("name"), ret, m.group("params")))
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
            if depth == 0:
                start = i + 1
        elif ch == ";" and depth == 0:
            start = i + 1
    return out


def functions(code: str, lang: str) -> list[Func]:
    """The functions ``code`` defines at the top level, with their declared types (``CannotCross`` where a type
    has no marshalling; see ``entries`` for which ones matter)."""
    out = []
    for name, ret, params in top_level(code):
        rty, rref = parse_type(re.sub(r"\b(?:static|inline|extern)\b", " ", ret), lang)
        if rref:
            raise CannotCross(f"'{name}' returns a reference")
        ps = [] if params.strip() in ("", "void") else [_param(p, lang) for p in _split_params(params)]
        if any(t.kind == "void" for t, _ in ps):
            raise CannotCross(f"a void parameter of '{name}'")
        out.append(Func(name, rty, tuple(t for t, _ in ps), tuple(r for _, r in ps)))
    return out


_IDENT = re.compile(r"[A-Za-z_]\w*")


def entries(candidate: str, tests: str, lang: str) -> list[Func]:
    """The candidate's functions the tests call (by name, not defined by the tests), with their types;
    ``CannotCross`` names the first of them whose type has no marshalling, or a name defined twice."""
    used = set(_IDENT.findall(_PRE.sub("", blank_literals(tests))))
    own = {name for name, _, _ in top_level(tests)}
    wanted = [(n, r, p) for n, r, p in top_level(candidate) if n in used and n not in own and n != "main"]
    names = [n for n, _, _ in wanted]
    for n in names:
        if names.count(n) > 1:
            raise CannotCross(f"'{n}' is defined more than once (overloads do not cross)")
    out = []
    for n, r, p in wanted:
        try:
            out.extend(functions(f"{r} {n}({p}) {{}}", lang))
        except CannotCross as e:
            raise CannotCross(f"the entry function '{n}': {e}") from None
    return out


# -- shared by the languages apart (apart_compiled.py, apart_go.py, apart_rust.py) ------------------------------
def held(cand: list[str], tests: list[str], hide: list[str]) -> list[str]:
    """A compile command: the candidate's unit compiled while ``hide`` (the tests' source, the sentinel) sits in a
    directory no one may enter, then the tests' unit, then the tests' source deleted."""
    q = shlex.join
    return ["sh", "-c", f"set -e; trap 'chmod 700 rlvr_hold 2>/dev/null || :' EXIT; mkdir rlvr_hold; mv {q(hide)} rlvr_hold/; chmod 000 rlvr_hold; {q(cand)}; "
            f"chmod 700 rlvr_hold; mv rlvr_hold/* .; rmdir rlvr_hold; {q(tests)}; rm -f {hide[0]}"]  # fmt: skip
