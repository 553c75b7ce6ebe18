"""Assert mode apart for the compiled languages (issue 49): the candidate and the tests in two executables, calls
crossing a process boundary as typed data (asserts_apart.py registers these in ``SEPARATE``).

* **The candidate's executable** (``rlvr_cand``): the candidate's own unit (the prelude and its code, its ``main``
  renamed out of the way), then a generated call server that decodes each call's arguments as the entry
  function's declared types, calls it, and encodes the declared return type. Whatever runs before ``main`` (a
  constructor, a static initialiser, an ``init``) runs there, in a process whose stdout is its stderr.
* **The tests' executable** (``main``): the tests' own unit, with a generated stub of each entry function of the
  same declared signature that forwards the call over a pipe and decodes the reply as the declared type (so an
  always-equal value cannot arrive: only plain data does). Our ``main`` makes the process non-dumpable, reads and
  deletes the sentinel and its own binary, starts the candidate's executable (fd 3 requests, fd 4 replies, no
  other descriptor), runs the tests, and writes the sentinel and what ran on its stdout, which the candidate's
  process has no descriptor for: ``{sentinel}:ran:{"tests", "asserts", "calls"}``.
* **Compiling**: the candidate's unit is compiled while the tests' source and the sentinel sit in a directory the
  compiler cannot enter (``chmod 000``: an ``#include`` of them fails); the tests' source is deleted after its own
  compile. Nothing of the candidate's text enters the tests' unit but standard header names and ``using
  namespace std;`` (``_SAFE_INCLUDE``), as HumanEval-X's prompts have them.

The entry functions and their types come from the candidate's definitions (apart_sig.py); a type without
marshalling is refused for that candidate (``CannotCross``: a compile error naming the type). Supported: C's
integers, floating types, ``bool`` and strings (``char *``); C++'s integers, floating types, ``bool``,
``std::string``, ``vector``, ``set``, ``map``, ``unordered_map``, ``optional``, ``pair``, ``tuple`` nested freely.
A pointer or reference parameter's changes do not come back to the tests.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import in_sandbox.code
from languages.assemble import C_MAIN, rename
from languages.parse import blank_literals
from verifiers.kinds.code.apart_go import go_apart, go_compile
from verifiers.kinds.code.apart_rust import rust_apart, rust_compile
from verifiers.kinds.code.apart_sig import CannotCross, Func, Ty, entries, held

__all__ = ["CANNOT_CROSS", "COMPILED", "CannotCross", "compile_argv"]
CANNOT_CROSS = (
    "code: {} assert mode runs the tests and the candidate as two programs, calls crossing between them as "
    "typed data, and this candidate's entry function cannot cross"
)

_DIR = Path(in_sandbox.code.__file__).parent
_ASSERT = re.compile(r"\bassert\s*\(")
_STD_HEADERS = set(
    "assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h limits.h locale.h math.h setjmp.h "
    "signal.h stdalign.h stdarg.h stdbool.h stddef.h stdint.h stdio.h stdlib.h string.h tgmath.h time.h "
    "uchar.h wchar.h wctype.h algorithm any array bitset cassert cctype cfloat chrono climits cmath cstddef "
    "cstdint cstdio cstdlib cstring ctime deque functional iomanip ios iostream istream iterator list map "
    "memory numeric optional ostream queue random set sstream stack string string_view tuple type_traits "
    "unordered_map unordered_set utility variant vector bits/stdc++.h".split()
)
# Declared in the tests' unit before the stubs, which are ``static``: a stub named as anything these declare (a
# candidate's ``strcmp`` or ``abs``, which would otherwise replace the one the tests call) is a compile error
_DECLARE_ALL = {
    "c": "".join(
        f"#include <{h}>\n"
        for h in (
            "assert.h ctype.h errno.h float.h inttypes.h limits.h locale.h math.h "
            "setjmp.h signal.h stdarg.h stdbool.h stddef.h stdint.h stdio.h stdlib.h string.h strings.h time.h "
            "wchar.h wctype.h unistd.h"
        ).split()
    ),
    "cpp": "",  # C++'s stubs are variables (_DIALECTS["cpp"]): a clash is an error in any order, without every header
}
_INCLUDE = re.compile(r"(?m)^[ \t]*#[ \t]*include[ \t]*<([\w./+]+)>[ \t]*$")
_USING_STD = re.compile(r"(?m)^[ \t]*using[ \t]+namespace[ \t]+std[ \t]*;")


def _safe_head(program: str) -> str:
    """What of the candidate's text the tests' unit gets: its standard header names, ``using namespace std;``."""
    clean = blank_literals(program)
    heads = [f"#include <{h}>\n" for h in dict.fromkeys(_INCLUDE.findall(clean)) if h in _STD_HEADERS]
    return "".join(heads) + ("using namespace std;\n" if _USING_STD.search(clean) else "")


def _counted(tests: str, macro: str) -> str:
    """The tests with each ``assert(`` (outside literals and comments) counted through ``macro``."""
    clean, out, last = blank_literals(tests), [], 0
    for m in _ASSERT.finditer(clean):
        out += [tests[last : m.start()], f"{macro}("]
        last = m.end()
    return "".join(out) + tests[last:]


# -- C: scalars and strings ---------------------------------------------------------------------------------
_C_LIMITS = {"int": "INT", "long": "LONG", "long long": "LLONG", "short": "SHRT", "char": "CHAR",
             "signed char": "SCHAR", "unsigned int": "UINT", "unsigned long": "ULONG",
             "unsigned long long": "ULLONG", "unsigned short": "USHRT", "unsigned char": "UCHAR"}  # fmt: skip


# a C type's kind -> (encoding ``{x}`` into buffer ``{buf}``, decoding one from ``{inp}`` as ``{cpp}``, whose limits
# are ``{lim}_MIN``/``{lim}_MAX``); a kind not here cannot cross
_C_WIRE = {
    "int": ("rlvr_put_i({buf}, (long long)({x}));", "({cpp})rlvr_get_i({inp}, {lim}_MIN, {lim}_MAX)"),
    "uint": ("rlvr_put_u({buf}, (unsigned long long)({x}));", "({cpp})rlvr_get_u({inp}, {lim}_MAX)"),
    "float": ("rlvr_put_d({buf}, (double)({x}));", "({cpp})rlvr_get_d({inp})"),
    "bool": ("rlvr_put_b({buf}, ({x}) ? 1 : 0);", "(rlvr_get_b({inp}) != 0)"),
    "cstr": ('if ({x}) rlvr_put_s({buf}, {x}, strlen({x})); else rlvr_add({buf}, "n;", 2);', "rlvr_get_s({inp}, NULL)"),
}


def _c_wire(t: Ty, side: int, **names: str) -> str:
    if t.kind not in _C_WIRE:
        raise CannotCross(f"the type '{t.cpp}'")
    return _C_WIRE[t.kind][side].format(cpp=t.cpp, lim=_C_LIMITS.get(t.cpp, ""), **names)


def _c_put(t: Ty, buf: str, x: str) -> str:
    return _c_wire(t, 0, buf=buf, x=x)


def _c_get(t: Ty, inp: str) -> str:
    return _c_wire(t, 1, inp=inp)


# -- C++: the standard containers, by overloading (in_sandbox/code/rlvr_wire.hpp) ---------------------------
def _cpp_param(t: Ty, ref: str, k: int) -> str:
    return {"": f"{t.cpp} a{k}", "&": f"{t.cpp} &a{k}", "const&": f"const {t.cpp} &a{k}"}[ref]


def _cpp_put(t: Ty, buf: str, x: str) -> str:
    return f"rlvr_wire::put({buf[1:] if buf.startswith('&') else '*' + buf}, {x});"


# -- the stubs (the tests' side) and the call server's cases (the candidate's side), C's and C++'s ----------
@dataclass(frozen=True)
class _Dialect:
    """How one of the two languages writes what differs: a stub's opening and closing, encoding a value into a
    buffer (``put(type, buffer pointer, expression)``), decoding the reply (``reply(function)``: the lines that
    leave it in ``v``, or check a void one) and declaring a decoded argument of the server (``arg(type, k)``)."""

    opening: Callable[[Func], str]
    closing: str
    put: Callable[[Ty, str, str], str]
    reply: Callable[[Func], str]
    arg: Callable[[Ty, int], str]


def _c_reply(f: Func) -> str:
    get = "" if f.ret.kind == "void" else f"  {f.ret.cpp} v = {_c_get(f.ret, '&in')};\n"
    want = f'  rlvr_want = "{f.ret.cpp}";\n'
    return f"  rlvr_in in = {{r.p, r.p + r.n}};\n{want}  rlvr_tag(&in, 'r');\n{get}  rlvr_done(&in);\n"


def _cpp_reply(f: Func) -> str:
    if f.ret.kind == "void":
        return "  rlvr_wire::reply_void(r);\n"
    return f'  {f.ret.cpp} v = rlvr_wire::reply<{f.ret.cpp}>(r, "{f.ret.cpp}");\n'


_DIALECTS = {
    "c": _Dialect(
        opening=lambda f: (
            f"static {f.ret.cpp} {f.name}({', '.join(f'{t.cpp} a{k}' for k, t in enumerate(f.params)) or 'void'})"
        ),
        closing="}",
        put=_c_put,
        reply=_c_reply,
        arg=lambda t, k: f"    {t.cpp} a{k} = {_c_get(t, 'in')};\n",
    ),
    # a variable holding a lambda, not a function: a name the library also declares (``abs``, or ``max`` through
    # ``using namespace std``) is then a compile error (redeclared, or ambiguous at the call), never an overload
    # that wins over the library's
    "cpp": _Dialect(
        opening=lambda f: (
            f"static const auto {f.name} = []("
            + ", ".join(_cpp_param(t, r, k) for k, (t, r) in enumerate(zip(f.params, f.refs, strict=True)))
            + f") -> {f.ret.cpp}"
        ),
        closing="};",
        put=_cpp_put,
        reply=_cpp_reply,
        arg=lambda t, k: f"    {t.cpp} a{k}{{}};\n    rlvr_wire::get(*in, a{k});\n",
    ),
}


def _stub(d: _Dialect, i: int, f: Func) -> str:
    """The tests' stub of entry function ``i``: encode the call, send it, decode the reply as the declared type."""
    puts = "".join(f"  {d.put(t, '&q', f'a{k}')}\n" for k, t in enumerate(f.params))
    ret = "" if f.ret.kind == "void" else "  return v;\n"
    return (
        f"{d.opening(f)} {{\n  rlvr_buf q = {{0, 0, 0}}, r = {{0, 0, 0}};\n  rlvr_put_i(&q, {i});\n{puts}"
        f"  rlvr_call(&q, &r);\n{d.reply(f)}  free(q.p);\n  free(r.p);\n{ret}{d.closing}\n"
    )


def _case(d: _Dialect, i: int, f: Func) -> str:
    """The candidate's server's case for entry function ``i``: decode the arguments, call, encode the result."""
    args = "".join(d.arg(t, k) for k, t in enumerate(f.params))
    call = f"{f.name}({', '.join(f'a{k}' for k in range(len(f.params)))})"
    done = (
        f"    {call};\n" if f.ret.kind == "void" else f"    {f.ret.cpp} r = {call};\n    {d.put(f.ret, 'out', 'r')}\n"
    )
    return f"  case {i}: {{\n{args}    rlvr_done(in);\n{done}    return;\n  }}\n"


_CPP_CATCH = """  }} catch (const std::exception &e) {{
    out->n = 0;
    rlvr_add(out, "x", 1);
    rlvr_wire::put(*out, std::string(e.what()));
  }} catch (...) {{
    out->n = 0;
    rlvr_add(out, "x", 1);
    rlvr_wire::put(*out, std::string("an exception that is not a std::exception"));
  }}
"""


def _c_family(lang: str):
    cpp = lang == "cpp"
    header = "rlvr_wire.hpp" if cpp else "rlvr_apart.h"
    dialect = _DIALECTS[lang]

    def assemble(p) -> tuple[str, dict[str, str]]:  # p: asserts.Parts
        from languages.record import BadTests

        t = f"rlvr_tests_{p.tag}"
        program, _ = rename(p.program, C_MAIN, f"rlvr_unused_main_{p.tag}")
        tests, m = rename(p.tests, C_MAIN, t, "\nreturn 0;\n")  # a main may fall off its end: 0, as main's
        if m is None:
            raise BadTests(f"code: {lang} tests (the reference) need a main function (int main() {{ assert(...); }})")
        funcs = entries(p.program, p.tests, lang) if p.program.strip() else []
        args = "argc, argv" if m.group(2).strip() not in ("", "void") else ""
        macro = f"RLVR_COUNTED_ASSERT_{p.tag}"
        main = (f'#include "{header}"\n{_DECLARE_ALL[lang]}{_safe_head(p.program)}\n{"".join(_stub(dialect, i, f) for i, f in enumerate(funcs))}'
                f"#undef NDEBUG\n#define {macro}(...) (++rlvr_asserts, assert(__VA_ARGS__))\n"
                f"{_counted(tests, macro)}\n"
                f"int main(int argc, char **argv) {{\n  (void)argc;\n  (void)argv;\n  rlvr_start();\n"
                f"  int rc = {t}({args});\n  if (rc != 0) return rc;\n  rlvr_finish();\n  return 0;\n}}\n")  # fmt: skip
        cases = "".join(_case(dialect, i, f) for i, f in enumerate(funcs))
        body = (f"  try {{\n  switch (f) {{\n{cases}  }}\n  throw std::runtime_error(\"no such function\");\n"
                + _CPP_CATCH.format() if cpp else f"  switch (f) {{\n{cases}  }}\n  rlvr_die(\"no such function\");\n")  # fmt: skip
        server = (f'\n#include "{header}"\nstatic void rlvr_dispatch_{p.tag}(long f, rlvr_in *in, rlvr_buf *out) {{\n'
                  f"  (void)in;\n  (void)out;\n{body}}}\n"
                  f"int main(void) {{\n  rlvr_serve(rlvr_dispatch_{p.tag});\n  return 0;\n}}\n")  # fmt: skip
        ext = "cpp" if cpp else "c"
        files = {f"rlvr_cand.{ext}": program + "\n" + server, "rlvr_apart.h": (_DIR / "rlvr_apart.h").read_text()}
        if cpp:
            files["rlvr_wire.hpp"] = (_DIR / "rlvr_wire.hpp").read_text()
        return main, {**files, "rlvr_nonce": p.a + p.b}

    return assemble


_GCC = {"c": ["gcc", "-O2", "-std=gnu17", "-pipe"], "cpp": ["g++", "-O2", "-std=c++17", "-pipe"]}


def compile_argv(lang: str) -> tuple[str, list[str]]:
    """(the tests' source file name, the compile command) of ``lang`` apart."""
    if lang == "go":
        return "main.go", go_compile()
    if lang == "rust":
        return "main.rs", rust_compile()
    ext = "cpp" if lang == "cpp" else "c"
    cc = _GCC[lang]
    cand = [*cc, "-o", "rlvr_cand", f"rlvr_cand.{ext}", "-lm"]
    tests = [*cc, "-o", "main", f"main.{ext}", "-lm"]
    return f"main.{ext}", held(cand, tests, [f"main.{ext}", "rlvr_nonce"])


# language -> (Parts -> (the tests' source, the other files)); its compile and run: ``compile_argv``, ``./main``
COMPILED = {"c": _c_family("c"), "cpp": _c_family("cpp"), "go": go_apart, "rust": rust_apart}
