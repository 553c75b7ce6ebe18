"""The toolchain image: the Python sandbox image's root filesystem plus compilers and runtimes.

A separate tag (``rlvr-sandbox-langs:<hash>``) so the Python-only image stays small. Built offline
like the Python image (sandbox/image/python.py): no image registry, only the Debian package mirror.

  1. the cached minbase root filesystem of the Python image (``var/cache/rootfs-<hash>``) is copied
     to ``var/cache/rootfs-langs-<hash>``;
  2. ``apt-get install --no-install-recommends`` of the Debian toolchain packages inside it (chroot,
     with /proc mounted for the JDK's post-install step), then apt caches and docs are dropped;
  3. the same runtime layer (the worker) and ``docker import``, with the Python image's config.

Toolchains (Debian bookworm): gcc/g++ 12 (C17, C++17), OpenJDK 17, Node.js 18 with TypeScript 4.8 (the
``typescript`` module, used to strip types as SandboxFusion's ``tsx`` does), Go 1.19 (its standard
library ships precompiled, so a job's build needs no warm cache), rustc 1.63; bash is in the base
root filesystem already. Then SandboxFusion's other languages where Debian has them at a modest
size: PHP 8.2, Ruby 3.1, Perl 5.36, Lua 5.4, R 4.2 (``Rscript``), Scala 2.11, C# (Mono 6.8 ``mcs``), D
(gdc 12), Verilog (Icarus 11), JUnit 5 (the console launcher), lodash for Node, pytest, Go's testify,
Jest 29.3 (its Babel presets strip TypeScript), the javatuples jar, Kotlin 1.3 and Racket 8.7 (installed
and trimmed by sandbox/image/extras.py, which also drops the JDK's jmods); not Julia, Swift nor Lean: bookworm has no package of them.
Both steps are cached by
their inputs; ``python -m sandbox.image.langs`` builds it, ``make image LANGS=all`` from make.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sandbox.image import extras
from sandbox.image import python as base

REPO_NAME = "rlvr-sandbox-langs"
TOOLCHAIN_PACKAGES = [
    "gcc",
    "g++",
    "libc6-dev",
    "default-jdk-headless",
    "nodejs",
    "node-typescript",
    "golang-go",
    "rustc",
    # SandboxFusion's other languages that Debian packages at a modest size (docs/sandbox.md)
    "php-cli",
    "ruby",
    "perl",
    "lua5.4",
    "r-base-core",
    "scala",
    "mono-mcs",
    "mono-runtime",
    "gdc",
    "iverilog",
    "junit5",
    "node-lodash",
    "python3-pytest",
    "golang-github-stretchr-testify-dev",  # go_test programs import testify (GOPATH: /usr/share/gocode)
    "ruby-test-unit",  # what SandboxFusion's Ruby, Perl tests use
    "libtest-deep-perl",
    "libdata-compare-perl",
    "racket",  # Kotlin: toolchain_extras.install_kotlin, without the Maven plugin's dependencies
    "jest",  # SandboxFusion's jest language (Jest 29.3 and its tree of node-* packages)
    "libjavatuples-java",  # org.javatuples on the Java/Kotlin classpath (languages.py)
]
DROP = ["var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/locale"]


def rootfs_hash() -> str:
    parts = [base.rootfs_hash().encode(), " ".join(TOOLCHAIN_PACKAGES).encode(), b"apt-no-recommends"]
    return base.digest([*parts, _GO_WARM_TEST.encode(), *extras.recipe()])


def image_tag() -> str:
    """The tag of the toolchain image that the current sources describe."""
    recipe = "\n".join(base.IMAGE_CHANGES + base.TAR_FLAGS).encode()
    return f"{REPO_NAME}:{base.digest([rootfs_hash().encode(), recipe, *base.worker_bytes()])}"


def _chroot(root: Path, *cmd: str) -> None:
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive", "LANG": "C.UTF-8"}
    base.run_logged(["chroot", str(root), *cmd], env=env, stdout=subprocess.DEVNULL)


GO_WARM_CACHE = "usr/lib/rlvr/gocache"  # verifiers/kinds/code/languages.py copies it into a go_test job's own cache
_GO_WARM_TEST = """package main
import ("testing"; "github.com/stretchr/testify/assert"; "github.com/stretchr/testify/require")
func TestWarm(t *testing.T) { assert.Equal(t, 1, 1); require.True(t, true) }
"""


def _warm_go_cache(root: Path) -> None:
    """Compile testify once into a build cache kept in the image: a go_test job (``go test``, which builds
    the imports in the run's time, as SandboxFusion's runner) then starts from it instead of compiling
    testify and its dependencies again (11 s of CPU)."""
    (root / "tmp/warm_test.go").write_text(_GO_WARM_TEST)
    env = ["GO111MODULE=off", "CGO_ENABLED=0", "GOPATH=/tmp/job/go:/usr/share/gocode", f"GOCACHE=/{GO_WARM_CACHE}"]
    _chroot(root, "sh", "-c", f"cd /tmp && env {' '.join(env)} go test warm_test.go && chmod -R a+rX /{GO_WARM_CACHE}")
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
        extras.install_kotlin(tmp, _chroot)
        _chroot(tmp, "apt-get", "clean")
        _warm_go_cache(tmp)
        extras.trim(tmp)
        extras.smoke_test(tmp, _chroot)
    finally:
        subprocess.run(["umount", "-l", str(tmp / "proc")], check=False)
    (tmp / "etc" / "resolv.conf").write_text("")
    for sub in DROP:
        shutil.rmtree(tmp / sub, ignore_errors=True)
    (tmp / ".complete").touch()
    tmp.rename(dest)
    return dest


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
