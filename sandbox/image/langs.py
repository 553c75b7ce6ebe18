"""The toolchain image: the Python sandbox image's root filesystem plus the languages' compilers and runtimes.

A separate tag (``rlvr-sandbox-langs:<hash>``) so the Python-only image stays small. Built offline like the
Python image (sandbox/image/python.py), from the Debian mirror only: the cached minbase root filesystem is
copied, the records' Debian packages (languages/<name>.py ``packages``) installed in it with
``--no-install-recommends``, then Kotlin without its Maven plugin's dependencies, Go's testify precompiled, and
what no job reads trimmed away (Racket's docs and GUI, the JDK's jmods); a smoke test compiles and runs a
program per special step. ``python -m sandbox.image.langs`` builds it, ``make image LANGS=all`` from make.
"""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import languages
from languages.common import GO_WARM_CACHE, KOTLIN_LIB, KOTLIN_RUNTIME, KOTLIN_SCRIPT_DIR
from sandbox.image import python as base

REPO_NAME = "rlvr-sandbox-langs"
TOOLCHAIN_PACKAGES = languages.image_packages()
DROP = ["var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/locale"]


def rootfs_hash() -> str:
    parts = [base.rootfs_hash().encode(), " ".join(TOOLCHAIN_PACKAGES).encode(), b"apt-no-recommends"]
    return base.digest([*parts, _GO_WARM_TEST.encode(), *_recipe()])


def image_tag() -> str:
    """The tag of the toolchain image that the current sources describe."""
    recipe = "\n".join(base.IMAGE_CHANGES + base.TAR_FLAGS).encode()
    return f"{REPO_NAME}:{base.digest([rootfs_hash().encode(), recipe, *base.worker_bytes()])}"


def _chroot(root: Path, *cmd: str) -> None:
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive", "LANG": "C.UTF-8"}
    base.run_logged(["chroot", str(root), *cmd], env=env, stdout=subprocess.DEVNULL)


_GO_WARM_TEST = """package main
import ("testing"; "github.com/stretchr/testify/assert"; "github.com/stretchr/testify/require")
func TestWarm(t *testing.T) { assert.Equal(t, 1, 1); require.True(t, true) }
"""


def _warm_go_cache(root: Path) -> None:
    """Compile testify once into a build cache kept in the image: a go_test job (``go test``, which builds
    the imports in the run's time, as SandboxFusion's runner) then starts from it instead of compiling
    testify and its dependencies again."""
    (root / "tmp/warm_test.go").write_text(_GO_WARM_TEST)
    env = ["GO111MODULE=off", "CGO_ENABLED=0", "GOPATH=/tmp/job/go:/usr/share/gocode", f"GOCACHE={GO_WARM_CACHE}"]
    _chroot(root, "sh", "-c", f"cd /tmp && env {' '.join(env)} go test warm_test.go && chmod -R a+rX {GO_WARM_CACHE}")
    (root / "tmp/warm_test.go").unlink()


def build_rootfs() -> Path:
    """The Python image's root filesystem plus the toolchain packages; cached by its inputs."""
    dest = base.CACHE / f"rootfs-langs-{rootfs_hash()}"
    if (dest / ".complete").exists():
        return dest
    src = base.build_rootfs()
    tmp = Path(str(dest) + ".partial")
    if tmp.exists():
        subprocess.run(["umount", "-l", str(tmp / "proc")], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    base.run_logged(["cp", "-a", str(src), str(tmp)])
    (tmp / ".complete").unlink(missing_ok=True)
    shutil.copy("/etc/resolv.conf", tmp / "etc" / "resolv.conf")
    mirror = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
    (tmp / "etc/apt/sources.list").write_text(f"deb {mirror} {base.SUITE} main\n")
    subprocess.run(["mount", "-t", "proc", "proc", str(tmp / "proc")], check=True)
    try:
        _chroot(tmp, "apt-get", "update", "-q")
        _chroot(tmp, "apt-get", "install", "-y", "-q", "--no-install-recommends", *TOOLCHAIN_PACKAGES)
        _install_kotlin(tmp, _chroot)
        _chroot(tmp, "apt-get", "clean")
        _warm_go_cache(tmp)
        _trim(tmp)
        _smoke_test(tmp, _chroot)
    finally:
        subprocess.run(["umount", "-l", str(tmp / "proc")], check=False)
    (tmp / "etc" / "resolv.conf").write_text("")
    for sub in DROP:
        shutil.rmtree(tmp / sub, ignore_errors=True)
    (tmp / ".complete").touch()
    tmp.rename(dest)
    return dest


KOTLIN_DEBS = ["kotlin", "libjetbrains-annotations-java", "libtrove-intellij-java"]
LAUNCHER = Path(__file__).resolve().parent / "KotlinScript.java"
RACKET_PKGS = "usr/share/racket/pkgs"
RACKET_COMPILED = "usr/lib/racket/compiled/usr/share/racket/pkgs"
RACKET_DROP = ["redex-benchmark", "redex-examples", "games"]  # and every "*-doc" package
TRIM = ["usr/lib/jvm/java-17-openjdk-amd64/jmods", "usr/lib/racket/gracket"]

Chroot = Callable[..., None]  # chroot(root, *argv): run argv in the root file system, raise on failure


def recipe() -> list[bytes]:
    """What decides this module's part of the image (for the toolchain image's hash)."""
    lists = [KOTLIN_DEBS, KOTLIN_RUNTIME, RACKET_DROP, DROP, [KOTLIN_SCRIPT_DIR]]
    return [Path(__file__).read_bytes(), LAUNCHER.read_bytes(), *(" ".join(x).encode() for x in lists)]


def _install_kotlin(root: Path, chroot: Chroot) -> None:
    """Kotlin's compiler and runtime without the Maven plugin's dependencies (Ant, Maven and their tree, which
    ``kotlinc`` never loads), and only the compiler jars ``kotlinc/lib`` or the runtime classpath name;
    KotlinScript.java compiled into ``KOTLIN_SCRIPT_DIR`` (it runs a script compiled by ``kotlinc -d .``)."""
    debs = root / "tmp/kotlin-debs"
    debs.mkdir()
    chroot(root, "sh", "-c", f"cd /tmp/kotlin-debs && apt-get download -q {' '.join(KOTLIN_DEBS)}")
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


def _trim(root: Path) -> None:
    """Drop what no sandbox job reads: Racket's docs, examples, games and GUI executable, the JDK's jmods."""
    pkgs = root / RACKET_PKGS
    names = [p.name for p in pkgs.glob("*-doc")] + RACKET_DROP if pkgs.is_dir() else []
    for name in names:
        shutil.rmtree(pkgs / name, ignore_errors=True)
        shutil.rmtree(root / RACKET_COMPILED / name, ignore_errors=True)
    for sub in TRIM:
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


def _smoke_test(root: Path, chroot: Chroot) -> None:
    """Compile and run a program in Kotlin, a Kotlin script and Racket with the commands their records use;
    raise if any fails or answers wrong (a trim that broke a toolchain fails the build, not a request)."""
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


def _recipe() -> list[bytes]:
    """What decides the special steps' part of the image (for the rootfs hash): their code and data."""
    lists = [KOTLIN_DEBS, KOTLIN_RUNTIME, RACKET_DROP, TRIM, [KOTLIN_SCRIPT_DIR]]
    code = [inspect.getsource(f) for f in (_install_kotlin, _trim, _smoke_test)]
    smoke = [_SMOKE_RUN, *_SMOKE.values()]
    return [LAUNCHER.read_bytes(), *(" ".join(x).encode() for x in lists), *(c.encode() for c in code + smoke)]


def build(tag: str) -> None:
    rootfs = build_rootfs()
    with tempfile.TemporaryDirectory(prefix="rlvr-image-", dir=base.CACHE) as tmp:
        layer = Path(tmp)
        base.copy_worker(layer)
        tar = subprocess.Popen(
            ["tar", "--numeric-owner", *base.TAR_FLAGS, "--exclude=./.complete", "--exclude=./proc/*"]
            + ["-C", str(rootfs), "-c", ".", "-C", str(layer), "opt/sandbox"],
            stdout=subprocess.PIPE,
        )
        cmd = ["docker", "import"]
        for c in base.IMAGE_CHANGES:
            cmd += ["--change", c]
        cmd += ["--message", "rlvr sandbox with toolchains (offline build)", "-", tag]
        base.run_logged(cmd, stdin=tar.stdout, stdout=subprocess.DEVNULL)
        if tar.wait() != 0:
            raise base.ImageBuildError("tar of the toolchain root filesystem failed")


def ensure(force: bool = False) -> str:
    """Build the toolchain image unless its tag exists; returns the tag."""
    tag = image_tag()
    if base.image_exists(tag) and not force:
        print(f"toolchain image {tag} is up to date", file=sys.stderr)
        return tag
    t0 = time.monotonic()
    base.CACHE.mkdir(parents=True, exist_ok=True)
    with base.build_lock():  # one build at a time (tests build it when missing)
        if base.image_exists(tag) and not force:  # another process built it while this one waited
            return tag
        build(tag)
    subprocess.run(["docker", "tag", tag, f"{REPO_NAME}:latest"], check=True)
    print(f"built toolchain image {tag} in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    return tag


def main() -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tag", action="store_true", help="print the tag the current sources describe and exit")
    p.add_argument("--force", action="store_true", help="rebuild even when the tag exists")
    args = p.parse_args()
    if args.tag:
        print(image_tag())
        return 0
    try:
        ensure(force=args.force)
    except base.ImageBuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as e:
        print(f"error: {' '.join(map(str, e.cmd))} failed with status {e.returncode}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
