#!/usr/bin/env bash
# Install Debian bookworm's `prometheus` package (the server and promtool), pinned, into
# target/peers/prometheus/ without root: `apt-get download` and `dpkg -x`. The metrics test
# (crates/switchboard-cli/tests/it/serve_metrics.rs) checks the gateway's /metrics with
# promtool and scrapes it with a real Prometheus. scripts/peers.sh calls this; it can run
# alone too. Idempotent: a stamp of this file's hash skips a second install.
#
#   scripts/peers/prometheus.sh [--force]
#
# Environment: PEERS_TIMEOUT (seconds per install step, default 600).
set -euo pipefail

PIN=prometheus=2.42.0+ds-5+b6

SELF=$(readlink -f -- "${BASH_SOURCE[0]}")
ROOT=$(cd -- "$(dirname -- "$SELF")/../.." && pwd -P)
OUT="$ROOT/target/peers/prometheus"
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1
# shellcheck source=debian-unpack.sh
. "$(dirname -- "$SELF")/debian-unpack.sh"

hash=$(cat "$SELF" "$(dirname -- "$SELF")/debian-unpack.sh" | sha256sum | cut -d' ' -f1)
ok() { [ -x "$OUT/prometheus" ] && "$OUT/prometheus" --version >/dev/null 2>&1 \
  && [ -x "$OUT/promtool" ] && "$OUT/promtool" --version >/dev/null 2>&1; }
if [ "$FORCE" -eq 0 ] && [ -f "$OUT/.stamp" ] && [ "$(cat "$OUT/.stamp")" = "$hash" ] && ok; then
  exit 0
fi

debian_unpack "$OUT" "$PIN"
ln -s root/usr/bin/prometheus "$OUT/prometheus"
ln -s root/usr/bin/promtool "$OUT/promtool"
ok || die "the package was unpacked but $OUT/prometheus or $OUT/promtool does not run"
echo "$hash" >"$OUT/.stamp"
say "prometheus ready in $OUT"
