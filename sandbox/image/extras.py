"""Kotlin and Racket in the toolchain image, and what the image leaves out to stay smaller (issue 40).

Called by sandbox/image/langs.py inside the chroot it builds (Debian bookworm, ``apt-get`` lists loaded):

* **Kotlin 1.3.31** (bookworm's ``kotlin``) is installed with ``dpkg --force-depends`` and only the two
  Java libraries its compiler loads (``/usr/share/kotlin/kotlinc/lib`` links to them): the package also
  depends on Ant, Maven and their tree (~70 MB, ~100 packages) for its Maven plugin, which ``kotlinc``
  never loads. The compiler's own jar comes twice (``kotlin-compiler`` and the ``-embeddable`` copy that
  build tools use, 98 MB): every ``kotlin*`` jar that neither ``kotlinc/lib`` nor the runtime classpath
  (``KOTLIN_RUNTIME``) names is dropped. ``KotlinScript.java`` (beside this module) is compiled into
  ``KOTLIN_SCRIPT_DIR``: it runs a script compiled by ``kotlinc main.kts -d .`` (Kotlin 1.3's ``kotlin``
  runner cannot run scripts, and compiling the script once lets each test case start only the JVM);
* **Racket 8.7** (bookworm's ``racket``, the full distribution: no smaller package exists) without its
  documentation sources (the ``*-doc`` packages), examples, benchmarks, games and the GUI executable
  ``gracket`` (there is no display in the sandbox);
* the JDK's ``jmods`` (only ``jlink`` reads them).

``smoke_test`` compiles and runs one program per language added here with the commands the language
table uses (verifiers/kinds/code/languages.py), so a trim that broke a toolchain fails the build instead of a
later request.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

KOTLIN_PACKAGES = ["kotlin", "libjetbrains-annotations-java", "libtrove-intellij-java"]
KOTLIN_LIB = "/usr/share/kotlin/kotlinc/lib"
# what a compiled Kotlin program or script needs on its classpath (verifiers/kinds/code/languages.py)
KOTLIN_RUNTIME = [f"{KOTLIN_LIB}/{j}.jar" for j in ("kotlin-stdlib", "kotlin-stdlib-jdk7", "kotlin-stdlib-jdk8",
                                                    "kotlin-script-runtime")]  # fmt: skip
KOTLIN_SCRIPT_DIR = "/usr/lib/rlvr/kotlin"  # KotlinScript.class
LAUNCHER = Path(__file__).resolve().parent / "KotlinScript.java"
RACKET_PKGS = "usr/share/racket/pkgs"
RACKET_COMPILED = "usr/lib/racket/compiled/usr/share/racket/pkgs"
RACKET_DROP = ["redex-benchmark", "redex-examples", "games"]  # and every "*-doc" package
DROP = ["usr/lib/jvm/java-17-openjdk-amd64/jmods", "usr/lib/racket/gracket"]

Chroot = Callable[..., None]  # chroot(root, *argv): run argv in the root file system, raise on failure


def recipe() -> list[bytes]:
    """What decides this module's part of the image (for the toolchain image's hash)."""
    lists = [KOTLIN_PACKAGES, KOTLIN_RUNTIME, RACKET_DROP, DROP, [KOTLIN_SCRIPT_DIR]]
    return [Path(__file__).read_bytes(), LAUNCHER.read_bytes(), *(" ".join(x).encode() for x in lists)]


def install_kotlin(root: Path, chroot: Chroot) -> None:
    """Kotlin's compiler and runtime, without the Maven plugin's dependencies (see the module's doc)."""
    debs = root / "tmp/kotlin-debs"
    debs.mkdir()
    chroot(root, "sh", "-c", f"cd /tmp/kotlin-debs && apt-get download -q {' '.join(KOTLIN_PACKAGES)}")
    chroot(root, "sh", "-c", "dpkg -i --force-depends /tmp/kotlin-debs/*.deb")
    shutil.rmtree(debs)
    lib = root / KOTLIN_LIB.lstrip("/")
    keep = {p.resolve() for p in lib.iterdir()}  # relative links, into usr/share/java
    keep |= {(root / j.lstrip("/")).resolve() for j in KOTLIN_RUNTIME}
    java = root / "usr/share/java"
    for jar in sorted(java.glob("kotlin*.jar")):
        if not jar.is_symlink() and jar.resolve() not in keep:
            jar.unlink()
    for jar in java.glob("kotlin*.jar"):  # the version-less links to what was dropped
        if jar.is_symlink() and not jar.exists():
            jar.unlink()
    dest = root / KOTLIN_SCRIPT_DIR.lstrip("/")
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(LAUNCHER, root / "tmp" / LAUNCHER.name)
    chroot(root, "javac", "-d", KOTLIN_SCRIPT_DIR, f"/tmp/{LAUNCHER.name}")
    (root / "tmp" / LAUNCHER.name).unlink()
    chroot(root, "chmod", "-R", "a+rX", KOTLIN_SCRIPT_DIR)


def trim(root: Path) -> None:
    """Drop what no sandbox job reads: Racket's docs, examples, games and GUI executable, the JDK's jmods."""
    pkgs = root / RACKET_PKGS
    names = [p.name for p in pkgs.glob("*-doc")] + RACKET_DROP if pkgs.is_dir() else []
    for name in names:
        shutil.rmtree(pkgs / name, ignore_errors=True)
        shutil.rmtree(root / RACKET_COMPILED / name, ignore_errors=True)
    for sub in DROP:
        p = root / sub
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()


_SMOKE = {
    "main.kt": 'fun main() { println("kotlin " + (readLine() ?: "").trim().toInt() * 2) }\n',
    "main.kts": 'val n = (readLine() ?: "").trim().toInt()\nprintln("kts " + n * 2)\n',
    "main.rkt": "#lang racket\n(require rackunit)\n(check-equal? (+ 1 1) 2)\n"
    '(printf "racket ~a\\n" (* 2 (string->number (string-trim (read-line)))))\n',
}
_SMOKE_RUN = (
    "cd /tmp/smoke && kotlinc main.kt -d main.jar && kotlinc main.kts -d . && raco make main.rkt"
    f" && CP={':'.join(KOTLIN_RUNTIME)}"
    " && echo 21 | java -cp main.jar:$CP MainKt"
    f" && echo 21 | java -cp .:{KOTLIN_SCRIPT_DIR}:$CP KotlinScript Main"
    " && echo 21 | racket main.rkt"
)


def smoke_test(root: Path, chroot: Chroot) -> None:
    """Compile and run a program in Kotlin, a Kotlin script and Racket; raise if any fails or answers wrong."""
    work = root / "tmp/smoke"
    work.mkdir()
    try:
        for name, text in _SMOKE.items():
            (work / name).write_text(text)
        chroot(root, "sh", "-c", f"({_SMOKE_RUN}) > /tmp/smoke/out")  # the compilers' messages: on stderr
        got = (work / "out").read_text().split()
        if got != ["kotlin", "42", "kts", "42", "racket", "42"]:
            raise RuntimeError(f"the toolchain smoke test answered {got}, not kotlin 42 kts 42 racket 42")
    finally:
        shutil.rmtree(work, ignore_errors=True)
