#!/usr/bin/env bash
# Install Debian bookworm's `redis-server` and `redis-tools` packages, pinned, into
# target/peers/redis/ without root: `apt-get download` and `dpkg -x`. The shared-store test
# (crates/switchboard-cli/tests/it/serve_state.rs) starts a real redis-server for
# `serve --state redis://…`. scripts/peers.sh calls this; it can run alone too. Idempotent: a
# stamp of this file's hash skips a second install.
#
#   scripts/peers/redis.sh [--force]
#
# Environment: PEERS_TIMEOUT (seconds per install step, default 600).
set -euo pipefail

# redis-server depends on redis-tools (same version), which holds the server binary;
# liblzf1 and libjemalloc2 are what it links against beyond what a Debian system has.
PINS="redis-server=5:7.0.15-1~deb12u7 redis-tools=5:7.0.15-1~deb12u7 liblzf1=3.6-3 libjemalloc2=5.3.0-1"

SELF=$(readlink -f -- "${BASH_SOURCE[0]}")
ROOT=$(cd -- "$(dirname -- "$SELF")/../.." && pwd -P)
OUT="$ROOT/target/peers/redis"
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1
# shellcheck source=debian-unpack.sh
. "$(dirname -- "$SELF")/debian-unpack.sh"

hash=$(cat "$SELF" "$(dirname -- "$SELF")/debian-unpack.sh" | sha256sum | cut -d' ' -f1)
ok() { [ -x "$OUT/redis-server" ] && "$OUT/redis-server" --version >/dev/null 2>&1 \
  && [ -x "$OUT/redis-cli" ] && "$OUT/redis-cli" --version >/dev/null 2>&1; }
if [ "$FORCE" -eq 0 ] && [ -f "$OUT/.stamp" ] && [ "$(cat "$OUT/.stamp")" = "$hash" ] && ok; then
  exit 0
fi

# shellcheck disable=SC2086 # the pins are words
debian_unpack "$OUT" $PINS
for tool in redis-server redis-cli; do
  cat >"$OUT/$tool" <<WRAP
#!/bin/sh
LD_LIBRARY_PATH="$OUT/root/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" \\
  exec "$OUT/root/usr/bin/$tool" "\$@"
WRAP
  chmod +x "$OUT/$tool"
done
ok || die "the packages were unpacked but $OUT/redis-server or $OUT/redis-cli does not run"
echo "$hash" >"$OUT/.stamp"
say "redis ready in $OUT"
