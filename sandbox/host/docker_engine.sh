#!/usr/bin/env bash
# Make sure a Docker engine answers. Idempotent.
# When none answers and we are root on Debian/Ubuntu: install docker.io and start dockerd in the
# background (log and pid under var/), then wait until `docker info` answers.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VAR="$ROOT/var"
mkdir -p "$VAR/log"

if docker info >/dev/null 2>&1; then
  exit 0
fi

if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "Docker engine not reachable (docker info failed)." >&2
  echo "Start it yourself (e.g. 'sudo systemctl start docker', or Docker Desktop) and make sure" >&2
  echo "your user may use it ('sudo usermod -aG docker \$USER'), then run 'make setup' again." >&2
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  echo "== installing docker.io (apt-get)" >&2
  apt-get update -q >"$VAR/log/apt.log" 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io >>"$VAR/log/apt.log" 2>&1 || {
    echo "apt-get install docker.io failed; see $VAR/log/apt.log" >&2; exit 1; }
fi

if [ -f "$VAR/dockerd.pid" ] && kill -0 "$(cat "$VAR/dockerd.pid")" 2>/dev/null; then
  echo "== dockerd (pid $(cat "$VAR/dockerd.pid")) is starting; waiting" >&2
else
  echo "== starting dockerd in the background (log: var/log/dockerd.log)" >&2
  # setsid: the engine must outlive the make process that started it.
  setsid dockerd >"$VAR/log/dockerd.log" 2>&1 < /dev/null &
  echo $! >"$VAR/dockerd.pid"
fi

for _ in $(seq 1 120); do
  if docker info >/dev/null 2>&1; then
    echo "== docker engine is up" >&2
    exit 0
  fi
  sleep 0.5
done
echo "dockerd did not answer within 60 s; see $VAR/log/dockerd.log" >&2
tail -20 "$VAR/log/dockerd.log" >&2 || true
exit 1
