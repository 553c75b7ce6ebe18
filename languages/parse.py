"""Which file a JVM program must be saved as and which class to run, read from its source (the records of
Java, JUnit, Scala and Kotlin use it).

javac wants a ``public`` top-level class in a file of its name; ``java`` wants the class that declares
``main``. Neither has to be called ``Main``, and a correct program may have no public class at all
(``class Solution { public static void main(...) }``). Comments, string and character literals and
text blocks are blanked out first, so ``// public class Foo`` or ``"class X"`` never names anything.
Only top-level declarations (brace depth 0) count.

>>> java_entry("class A {}\\nclass Solution { public static void main(String[] a) {} }")
JavaEntry(file_class='Solution', main_class='Solution', package='')
>>> java_entry("// public class Nope\\npublic class Main { static public void main(String... a) {} }")
JavaEntry(file_class='Main', main_class='Main', package='')
>>> java_entry('package p.q;\\npublic class Helper {}\\nclass Runner { public static void main(String[] a) {} }')
JavaEntry(file_class='Helper', main_class='Runner', package='p.q')

Kotlin compiles the top-level functions of ``main.kt`` into the class ``MainKt`` (in the file's package); a
``main`` declared ``@JvmStatic`` inside an ``object`` or a class's ``companion object`` is a static method of
that object or class instead:

>>> kotlin_main("fun main() { println(1) }")
'MainKt'
>>> kotlin_main("package a.b\\n\\nfun main(args: Array<String>) {}")
'a.b.MainKt'
>>> kotlin_main("object Solution {\\n    @JvmStatic fun main(args: Array<String>) {}\\n}")
'Solution'
>>> kotlin_main("class App {\\n  companion object {\\n    @JvmStatic\\n    fun main(a: Array<String>) {}\\n  }\\n}")
'App'
"""

from __future__ import annotations

import re
from typing import NamedTuple

_DECL = re.compile(r"\b(?:class|interface|enum|record)\s+([A-Za-z_$][A-Za-z0-9_$]*)")
_PACKAGE = re.compile(r"^\s*package\s+([A-Za-z_][\w.]*)\s*;", re.MULTILINE)
_MAIN = re.compile(r"\bstatic\s+(?:[\w$<>\[\]]+\s+)*?void\s+main\s*\(")
_MODIFIER_STOP = re.compile(r"[;{}]")


class JavaEntry(NamedTuple):
    file_class: str  # the source file is <file_class>.java
    main_class: str  # the class ``java`` runs (without the package)
    package: str  # "" when none


def blank_literals(code: str) -> str:
    """``code`` with comments, strings, character literals and text blocks replaced by spaces (newlines
    kept), so what is left is declarations and code only."""
    out, i, n = [], 0, len(code)
    while i < n:
        c = code[i]
        if code.startswith("//", i):
            j = code.find("\n", i)
            j = n if j < 0 else j
        elif code.startswith("/*", i):
            j = code.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif code.startswith('"""', i):
            j = code.find('"""', i + 3)
            j = n if j < 0 else j + 3
        elif c in "\"'":
            j = i + 1
            while j < n and code[j] != c and code[j] != "\n":
                j += 2 if code[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            out.append(c)
            i += 1
            continue
        out.append("".join(ch if ch == "\n" else " " for ch in code[i:j]))
        i = j
    return "".join(out)


def _top_level(clean: str) -> list[tuple[str, bool, str]]:
    """(name, public, body) of each top-level type declaration."""
    found, depth, i = [], 0, 0
    while i < len(clean):
        c = clean[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth = max(0, depth - 1)
        elif depth == 0:
            m = _DECL.match(clean, i)
            if m and (i == 0 or not (clean[i - 1].isalnum() or clean[i - 1] in "_$")):
                start = max((s.end() for s in _MODIFIER_STOP.finditer(clean, 0, i)), default=0)
                public = re.search(r"\bpublic\b", clean[start:i]) is not None
                body_at = clean.find("{", m.end())
                end = _matching(clean, body_at) if body_at >= 0 else len(clean)
                found.append((m.group(1), public, clean[body_at:end] if body_at >= 0 else ""))
                i = end
                continue
        i += 1
    return found


def _matching(clean: str, at: int) -> int:
    depth = 0
    for j in range(at, len(clean)):
        if clean[j] == "{":
            depth += 1
        elif clean[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(clean)


def java_entry(code: str) -> JavaEntry:
    """The file and the class to run for ``code``: the file is named after the public top-level class
    (else the class declaring ``main``, else ``Main``); the run class is the top-level class declaring a
    static ``main`` (else the public class, else ``Main``)."""
    clean = blank_literals(code)
    pkg = _PACKAGE.search(clean)
    types = _top_level(clean)
    public = next((name for name, pub, _ in types if pub), None)
    main = next((name for name, _, body in types if _MAIN.search(body)), None)
    return JavaEntry(public or main or "Main", main or public or "Main", pkg.group(1) if pkg else "")


_SCALA_OBJECT = re.compile(r"\bobject\s+([A-Za-z_$][A-Za-z0-9_$]*)([^{]*)\{")


def scala_main(code: str) -> str:
    """The Scala object to run: the first top-level-looking ``object`` that ``extends App`` or defines
    ``main`` (comments and strings blanked), else the first object, else ``Main``.

    >>> scala_main("// object Nope\\nobject Hello extends App { println(1) }")
    'Hello'
    >>> scala_main("object Util { def f = 1 }\\nobject Run { def main(args: Array[String]): Unit = {} }")
    'Run'
    """
    clean = blank_literals(code)
    objects = list(_SCALA_OBJECT.finditer(clean))
    for m in objects:
        body = clean[m.end() - 1 : _matching(clean, m.end() - 1)]
        if re.search(r"\bextends\s+App\b", m.group(2)) or re.search(r"\bdef\s+main\s*\(", body):
            return m.group(1)
    return objects[0].group(1) if objects else "Main"


_KT_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)", re.M)
_KT_TOP_MAIN = re.compile(r"^(?:public\s+|suspend\s+)*fun\s+main\s*\(", re.M)  # not indented: top level
_KT_STATIC_MAIN = re.compile(r"@JvmStatic\s+(?:public\s+)?fun\s+main\s*\(")
_KT_HOLDER = re.compile(r"\b(?<!companion )(class|object)\s+(\w+)")


def kotlin_main(code: str) -> str:
    """The JVM class whose ``main`` runs ``code`` (``MainKt`` where nothing says otherwise)."""
    m = _KT_PACKAGE.search(code)
    prefix = f"{m.group(1)}." if m else ""
    static = _KT_STATIC_MAIN.search(code)
    if _KT_TOP_MAIN.search(code) or static is None:
        return f"{prefix}MainKt"
    holders = list(_KT_HOLDER.finditer(code, 0, static.start()))
    return f"{prefix}{holders[-1].group(2)}" if holders else f"{prefix}MainKt"
