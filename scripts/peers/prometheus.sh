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
STEP_TIMEOUT=${PEERS_TIMEOUT:-600}
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

say() { echo "peers: $*" >&2; }
die() { echo "peers: error: $*" >&2; exit 1; }

hash=$(sha256sum "$SELF" | cut -d' ' -f1)
ok() { [ -x "$OUT/prometheus" ] && "$OUT/prometheus" --version >/dev/null 2>&1 \
  && [ -x "$OUT/promtool" ] && "$OUT/promtool" --version >/dev/null 2>&1; }
if [ "$FORCE" -eq 0 ] && [ -f "$OUT/.stamp" ] && [ "$(cat "$OUT/.stamp")" = "$hash" ] && ok; then
  exit 0
fi

command -v apt-get >/dev/null 2>&1 || die "'apt-get' not found (Debian's apt downloads the pinned package)"
command -v dpkg >/dev/null 2>&1 || die "'dpkg' not found (it unpacks the package)"
say "installing Debian's $PIN (prometheus, promtool) ..."
rm -rf "$OUT"
mkdir -p "$OUT/debs" "$OUT/root"
log="$OUT/install.log"
# The pinned version; when the mirror no longer has it (a security update replaced it), the
# current one, said aloud.
if ! (cd "$OUT/debs" && timeout "$STEP_TIMEOUT" apt-get download "$PIN" >>"$log" 2>&1); then
  say "$PIN is no longer on the mirror; taking the current ${PIN%%=*}"
  (cd "$OUT/debs" && timeout "$STEP_TIMEOUT" apt-get download "${PIN%%=*}" >>"$log" 2>&1) \
    || { tail -n 20 "$log" >&2; die "apt-get download ${PIN%%=*} failed"; }
fi
for deb in "$OUT"/debs/*.deb; do
  timeout "$STEP_TIMEOUT" dpkg -x "$deb" "$OUT/root" >>"$log" 2>&1 \
    || { tail -n 20 "$log" >&2; die "dpkg -x $deb failed"; }
done
ln -s root/usr/bin/prometheus "$OUT/prometheus"
ln -s root/usr/bin/promtool "$OUT/promtool"
rm -rf "$OUT/debs"
ok || die "the package was unpacked but $OUT/prometheus or $OUT/promtool does not run"
echo "$hash" >"$OUT/.stamp"
say "prometheus ready in $OUT"
