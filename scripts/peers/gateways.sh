#!/usr/bin/env bash
# Install the gateway peers of the benchmarks' gateway-peers scenario (BENCHMARKS.md), pinned,
# into target/peers/gateways/ (see scripts/peers/README.md):
#   - npm `supergateway` 4.0.0 and `mcp-proxy` 6.7.19 (punkpeye's), `npm ci --ignore-scripts`
#     of gateways/package.json + package-lock.json into target/peers/gateways/npm (they run on
#     the Node 22 that scripts/peers.sh installs);
#   - PyPI `mcp-proxy` 0.13.0 (sparfenyuk's) and `fastmcp` 4.2.3, each in a venv of its own
#     (their dependencies clash with each other's and with the test venv's `mcp` pin), from
#     gateways/*-requirements.txt (full closures), `pip install --no-deps --only-binary=:all:`
#     then `pip check`.
# scripts/peers.sh calls this; it can run alone too. Idempotent: each part has a stamp of the
# hash of its inputs (this file, its pinned files, the Python version) and is skipped when
# the stamp matches.
#
#   scripts/peers/gateways.sh [--force]
#
# Environment: PEERS_PYTHON (default python3), PEERS_NPM (default npm), PEERS_TIMEOUT
# (seconds per install step, default 600).
set -euo pipefail

SELF=$(readlink -f -- "${BASH_SOURCE[0]}")
IN="$(dirname -- "$SELF")/gateways"
ROOT=$(cd -- "$(dirname -- "$SELF")/../.." && pwd -P)
OUT="$ROOT/target/peers/gateways"
PYTHON=${PEERS_PYTHON:-python3}
NPM=${PEERS_NPM:-npm}
STEP_TIMEOUT=${PEERS_TIMEOUT:-600}
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

say() { echo "peers: $*" >&2; }
die() { echo "peers: error: $*" >&2; exit 1; }
for f in package.json package-lock.json mcp-proxy-requirements.txt fastmcp-requirements.txt; do
  [ -f "$IN/$f" ] || die "pinned input $IN/$f is missing"
done
command -v "$PYTHON" >/dev/null 2>&1 || die "'$PYTHON' not found on PATH; set PEERS_PYTHON"
command -v "$NPM" >/dev/null 2>&1 || die "'$NPM' not found on PATH; set PEERS_NPM"

# A bounded install step, its output in $OUT/logs/NAME.log; on failure the log's end.
run_step() {
  local name=$1; shift
  local log="$OUT/logs/$name.log" rc=0
  timeout --kill-after=10 "$STEP_TIMEOUT" "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    say "'$name' failed (exit $rc); last lines of $log:"
    tail -n 30 "$log" | sed 's/^/    /' >&2
    die "installing the gateway peers failed at '$name'"
  fi
}

stamp_ok() { # DIR HASH CHECK...
  local dir=$1 hash=$2; shift 2
  [ "$FORCE" -eq 0 ] && [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$hash" ] && "$@" >/dev/null 2>&1
}

py_version=$("$PYTHON" -c 'import sys; print(sys.version.split()[0])') || die "'$PYTHON' does not run"
npm_hash=$(cat "$SELF" "$IN/package.json" "$IN/package-lock.json" | sha256sum | cut -d' ' -f1)
venv_hash() { { cat "$SELF" "$IN/$1-requirements.txt"; echo "python $py_version"; } | sha256sum | cut -d' ' -f1; }

npm_ok() {
  [ -f "$OUT/npm/node_modules/supergateway/package.json" ] \
    && [ -f "$OUT/npm/node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs" ]
}
# Cheap checks for the fast path (file probes, no interpreter start); an install also checks
# that the package imports.
venv_ok() { # NAME
  [ -x "$OUT/$1-venv/bin/python" ] && [ -x "$OUT/$1-venv/bin/$1" ]
}
MCP_PROXY_PROBE='import mcp_proxy'
FASTMCP_PROBE='from fastmcp.server import create_proxy'

mcp_proxy_hash=$(venv_hash mcp-proxy)
fastmcp_hash=$(venv_hash fastmcp)
if stamp_ok "$OUT/npm" "$npm_hash" npm_ok \
  && stamp_ok "$OUT/mcp-proxy-venv" "$mcp_proxy_hash" venv_ok mcp-proxy \
  && stamp_ok "$OUT/fastmcp-venv" "$fastmcp_hash" venv_ok fastmcp; then
  exit 0
fi
mkdir -p "$OUT/logs"

if ! stamp_ok "$OUT/npm" "$npm_hash" npm_ok; then
  say "installing supergateway 4.0.0 and mcp-proxy 6.7.19 (npm ci) ..."
  rm -rf "${OUT:?}/npm"
  mkdir -p "$OUT/npm"
  cp "$IN/package.json" "$IN/package-lock.json" "$OUT/npm/"
  (cd "$OUT/npm" && run_step gateways-npm "$NPM" ci --ignore-scripts --no-audit --no-fund \
    --no-update-notifier --loglevel=warn)
  npm_ok || die "npm ci finished but supergateway or mcp-proxy is missing in $OUT/npm"
  echo "$npm_hash" >"$OUT/npm/.stamp"
fi

install_venv() { # NAME HASH PROBE
  local name=$1 hash=$2 probe=$3
  stamp_ok "$OUT/$name-venv" "$hash" venv_ok "$name" && return 0
  say "installing the $name gateway's venv (python $py_version, $(grep -E "^$name==" "$IN/$name-requirements.txt")) ..."
  rm -rf "${OUT:?}/$name-venv"
  run_step "gateways-$name-venv" "$PYTHON" -m venv "$OUT/$name-venv"
  run_step "gateways-$name-pip" env PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
    "$OUT/$name-venv/bin/python" -m pip install --no-deps --only-binary=:all: --progress-bar off \
    -r "$IN/$name-requirements.txt"
  run_step "gateways-$name-pip-check" "$OUT/$name-venv/bin/python" -m pip check
  run_step "gateways-$name-import" "$OUT/$name-venv/bin/python" -c "$probe"
  venv_ok "$name" || die "pip finished but $OUT/$name-venv/bin/$name is missing"
  echo "$hash" >"$OUT/$name-venv/.stamp"
}
install_venv mcp-proxy "$mcp_proxy_hash" "$MCP_PROXY_PROBE"
install_venv fastmcp "$fastmcp_hash" "$FASTMCP_PROBE"
say "gateway peers ready in $OUT"
