#!/usr/bin/env bash
# `make venv`: install the project and its pinned dependencies into the virtual environment whose Python is $1
# ($2: what to install, e.g. '.[dev,lora]', editable). With uv where it installs (a fresh clone here: 52 s against
# 70 s with pip, bench/results/suite_time.txt); pip's own settings (config files and PIP_* variables: index URLs,
# find-links, constraints, certificate) are handed to uv, and uv takes the best match across every index as pip
# does, so both install the same releases. uv compiles the bytecode as pip does: where PYTHONDONTWRITEBYTECODE is
# set, nothing else would, and every new interpreter would compile torch again. With pip otherwise, or when uv
# fails, or when RLVR_PIP=1.
set -euo pipefail
py=$1 spec=$2
pip=("$py" -m pip install -q --disable-pip-version-check)

uv_args() {
  args=(--index-strategy unsafe-best-match)
  local line key val v
  while IFS= read -r line; do  # scope.key='value', e.g. global.find-links='/opt/wheels' or :env:.cert='...'
    key=${line#*.} && key=${key%%=*} && val=${line#*=} && val=${val#\'} && val=${val%\'}
    case $key in
      index-url) args+=(--index-url "$val") ;;
      extra-index-url) for v in $val; do args+=(--extra-index-url "$v"); done ;;
      find-links) for v in $val; do args+=(--find-links "$v"); done ;;
      constraint) for v in $val; do args+=(--constraint "$v"); done ;;
      no-index) args+=(--no-index) ;;
      cert) export SSL_CERT_FILE="$val" ;;
    esac
  done < <("$py" -m pip config list 2>/dev/null)
}

if [ "${RLVR_PIP:-}" != 1 ] && "${pip[@]}" uv >/dev/null 2>&1; then
  uv_args
  if "$(dirname "$py")/uv" pip install -q --compile-bytecode --python "$py" "${args[@]}" -e "$spec"; then
    exit 0
  fi
  echo "== uv could not install $spec (above); installing with pip instead" >&2
fi
exec "${pip[@]}" -e "$spec"
