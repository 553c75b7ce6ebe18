"""``python -m sandbox.image``: build the Python sandbox image (sandbox/image/python.py), offline by default."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from sandbox.image.python import (
    REPO_NAME,
    ImageBuildError,
    build_from_registry,
    build_lock,
    build_offline,
    image_exists,
    image_tag,
    rootfs_from_image,
)


def main() -> int:
    p = argparse.ArgumentParser(description="build the Python sandbox image offline (sandbox/image/python.py)")
    p.add_argument("--tag", action="store_true", help="print the tag the current sources describe and exit")
    p.add_argument("--force", action="store_true", help="rebuild even when the tag exists")
    p.add_argument("--from-registry", action="store_true", help="build FROM python:3.11-slim (needs a registry)")
    args = p.parse_args()
    tag = image_tag()
    if args.tag:
        print(tag)
        return 0
    if image_exists(tag) and not args.force:
        with build_lock():
            rootfs_from_image(tag)
        print(f"sandbox image {tag} is up to date", file=sys.stderr)
        return 0
    t0 = time.monotonic()
    try:
        with build_lock():  # another process may be building it: this one waits, then finds it built
            if image_exists(tag) and not args.force:
                print(f"sandbox image {tag} is up to date", file=sys.stderr)
                return 0
            (build_from_registry if args.from_registry else build_offline)(tag)
        subprocess.run(["docker", "tag", tag, f"{REPO_NAME}:latest"], check=True)
    except ImageBuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as e:
        print(f"error: {' '.join(map(str, e.cmd))} failed with status {e.returncode}", file=sys.stderr)
        return 1
    print(f"built sandbox image {tag} in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    return 0


sys.exit(main())
