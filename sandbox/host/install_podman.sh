#!/bin/sh
# Install rootless Podman for the sandbox's podman backend (SandboxConfig(backend="podman"), --backend
# podman) and check it can run the sandbox image. Idempotent; for `make setup` (best effort there).
# As root: installs the Debian packages, creates the ordinary system user rlvr-podman with a subordinate
# uid/gid range of 1,000,000 (each sandbox runs as its own uid inside it), configures its storage (native
# overlay) and, on a cgroup v1/hybrid host where crun cannot run, runc as its OCI runtime. Not root: uses
# this user's own Podman (your admin installs the packages and gives you a /etc/subuid range).
set -eu
PKGS="podman uidmap slirp4netns fuse-overlayfs runc catatonit"
if ! command -v podman >/dev/null 2>&1 || ! command -v newuidmap >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"  # never wait for a password (make setup runs this unattended)
    if command -v apt-get >/dev/null 2>&1; then
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $PKGS || {
            $SUDO apt-get update -q && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $PKGS; }
    elif command -v dnf >/dev/null 2>&1; then
        $SUDO dnf install -y podman runc
    else
        echo "install_podman.sh: no apt-get/dnf here: install podman by hand" >&2
        exit 1
    fi
fi
USER_NAME=rlvr-podman
if [ "$(id -u)" -eq 0 ]; then
    id "$USER_NAME" >/dev/null 2>&1 || useradd --system --create-home --home-dir /var/lib/rlvr-podman \
        --shell /usr/sbin/nologin "$USER_NAME"
    grep -q "^$USER_NAME:" /etc/subuid 2>/dev/null || echo "$USER_NAME:1000000:1000000" >>/etc/subuid
    grep -q "^$USER_NAME:" /etc/subgid 2>/dev/null || echo "$USER_NAME:1000000:1000000" >>/etc/subgid
    HOME_DIR=$(getent passwd "$USER_NAME" | cut -d: -f6)
else
    USER_NAME=$(id -un)
    HOME_DIR=$HOME
fi
CONF="$HOME_DIR/.config/containers"
mkdir -p "$CONF"
[ -f "$CONF/storage.conf" ] || printf '[storage]\ndriver = "overlay"\n' >"$CONF/storage.conf"
if [ ! -f "$CONF/containers.conf" ] && [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
    printf '[engine]\nruntime = "runc"\n' >"$CONF/containers.conf"  # crun refuses cgroup v1/hybrid hosts
fi
[ "$(id -u)" -ne 0 ] || chown -R "$USER_NAME:" "$HOME_DIR/.config"
PY="$(dirname "$0")/../../.venv/bin/python"
[ -x "$PY" ] || PY=python3
cd "$(dirname "$0")/../.."
"$PY" - <<'PYEOF'
from sandbox.backend import SandboxConfig
from sandbox.image.python import image_tag
from sandbox.backends.podman import PodmanSandbox, podman_available

ok, why = podman_available()
if ok:
    try:
        PodmanSandbox.preflight(SandboxConfig(backend="podman", image=image_tag()))
    except Exception as e:  # noqa: BLE001 - reported, not raised: make setup goes on
        ok, why = False, str(e)
print("podman backend:", "usable" if ok else "NOT usable: " + why)
PYEOF
