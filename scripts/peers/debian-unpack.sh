# Sourced by the single-package peer scripts (prometheus.sh, redis.sh): pinned Debian
# packages downloaded with `apt-get download` and unpacked with `dpkg -x`, no root.
#
#   debian_unpack OUT PIN...   download each PIN (package=version) into OUT/debs, unpack
#                              them into OUT/root, log to OUT/install.log; a pin the mirror
#                              no longer has (a security update replaced it) is replaced by
#                              the package's current version, said aloud.
#
# Environment: PEERS_TIMEOUT (seconds per step, default 600).

say() { echo "peers: $*" >&2; }
die() { echo "peers: error: $*" >&2; exit 1; }

debian_unpack() { # OUT PIN...
  local out=$1; shift
  local step_timeout=${PEERS_TIMEOUT:-600}
  command -v apt-get >/dev/null 2>&1 || die "'apt-get' not found (Debian's apt downloads the pinned packages)"
  command -v dpkg >/dev/null 2>&1 || die "'dpkg' not found (it unpacks the packages)"
  say "installing Debian's $* ..."
  rm -rf "$out"
  mkdir -p "$out/debs" "$out/root"
  local log="$out/install.log" pin deb
  for pin in "$@"; do
    if ! (cd "$out/debs" && timeout "$step_timeout" apt-get download "$pin" >>"$log" 2>&1); then
      say "$pin is no longer on the mirror; taking the current ${pin%%=*}"
      (cd "$out/debs" && timeout "$step_timeout" apt-get download "${pin%%=*}" >>"$log" 2>&1) \
        || { tail -n 20 "$log" >&2; die "apt-get download ${pin%%=*} failed"; }
    fi
  done
  for deb in "$out"/debs/*.deb; do
    timeout "$step_timeout" dpkg -x "$deb" "$out/root" >>"$log" 2>&1 \
      || { tail -n 20 "$log" >&2; die "dpkg -x $deb failed"; }
  done
  rm -rf "$out/debs"
}
