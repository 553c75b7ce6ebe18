#!/bin/sh
# Install bubblewrap for the sandbox's second backend (SandboxConfig(backend="bwrap")) and check that it
# can create the namespaces it needs here. Idempotent; for `make setup`. Debian/Ubuntu (apt), Fedora
# (dnf), Arch (pacman), macOS has no bwrap (use the Docker backend there).
set -eu
if ! command -v bwrap >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"  # never wait for a password (make setup runs this unattended)
    if command -v apt-get >/dev/null 2>&1; then
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap || {
            $SUDO apt-get update -q && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap; }
    elif command -v dnf >/dev/null 2>&1; then
        $SUDO dnf install -y bubblewrap
    elif command -v pacman >/dev/null 2>&1; then
        $SUDO pacman -S --noconfirm bubblewrap
    else
        echo "install_bwrap.sh: no apt-get/dnf/pacman here: install bubblewrap by hand" >&2
        exit 1
    fi
fi
# setpriv (util-linux) is needed when the service runs as root (each sandbox drops to its own uid).
command -v setpriv >/dev/null 2>&1 || echo "install_bwrap.sh: warning: setpriv (util-linux) missing" >&2
PY="$(dirname "$0")/../../.venv/bin/python"
[ -x "$PY" ] || PY=python3
cd "$(dirname "$0")/../.."
"$PY" -c 'from sandbox.backends.bwrap import bwrap_usable; ok, why = bwrap_usable(); print("bwrap backend:", "usable" if ok else "NOT usable: " + why)'
