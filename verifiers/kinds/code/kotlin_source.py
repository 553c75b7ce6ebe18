"""Which class a Kotlin program's ``main`` lands in, read from its source (for ``java -cp ... <class>``).

Kotlin compiles the top-level functions of ``main.kt`` into the class ``MainKt`` (in the file's
package); a ``main`` declared ``@JvmStatic`` inside an ``object`` or a class's ``companion object``
is a static method of that object or class instead.

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

_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)", re.M)
_TOP_MAIN = re.compile(r"^(?:public\s+|suspend\s+)*fun\s+main\s*\(", re.M)  # not indented: top level
_STATIC_MAIN = re.compile(r"@JvmStatic\s+(?:public\s+)?fun\s+main\s*\(")
_HOLDER = re.compile(r"\b(?<!companion )(class|object)\s+(\w+)")


def kotlin_main(code: str) -> str:
    """The JVM class whose ``main`` runs ``code`` (``MainKt`` where nothing says otherwise)."""
    m = _PACKAGE.search(code)
    prefix = f"{m.group(1)}." if m else ""
    static = _STATIC_MAIN.search(code)
    if _TOP_MAIN.search(code) or static is None:
        return f"{prefix}MainKt"
    holders = list(_HOLDER.finditer(code, 0, static.start()))
    return f"{prefix}{holders[-1].group(2)}" if holders else f"{prefix}MainKt"
