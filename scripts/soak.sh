#!/usr/bin/env bash
# The gateway's chaos soak, long version (the test suite runs a 2000-call one):
# `switchboard serve` over five fixture servers, killed (SIGKILL) and frozen (SIGSTOP) at
# random, driven by `switchboard-soak` with 32 calls in flight. It checks that every call
# resolves within its deadline (a result that answers it, or a typed error), that the
# gateway's fds, threads and RSS are flat between warm-up and the end, and that no server
# process outlives the gateway; it prints the figures and exits 1 on a problem.
#
#   scripts/soak.sh                      100000 calls, release binaries
#   scripts/soak.sh --calls 20000        any flag of switchboard-soak (--in-flight N,
#                                        --seed N to rerun a seed, --chaos-every-ms N)
#
# Environment: SOAK_PROFILE (release or dev, default release), SOAK_TIMEOUT (seconds for
# the whole run, default 3600), SOAK_BUILD_TIMEOUT (seconds for the build, default 1800).
set -euo pipefail
root=$(cd -- "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")/.." && pwd -P)
cd "$root"

for arg in "$@"; do
  case "$arg" in
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  esac
done

profile=${SOAK_PROFILE:-release}
case "$profile" in
  release) dir=release; flag=(--release) ;;
  dev) dir=debug; flag=() ;;
  *) echo "soak: SOAK_PROFILE must be release or dev, not $profile" >&2; exit 2 ;;
esac

echo "soak: building switchboard, switchboard-fixture and switchboard-soak ($profile)" >&2
timeout "${SOAK_BUILD_TIMEOUT:-1800}" cargo build --locked "${flag[@]}" \
  -p switchboard-cli --bin switchboard \
  -p switchboard-testkit --bin switchboard-fixture --bin switchboard-soak

calls=(--calls 100000)
for arg in "$@"; do
  [[ "$arg" == --calls ]] && calls=()
done
exec timeout "${SOAK_TIMEOUT:-3600}" "target/$dir/switchboard-soak" "${calls[@]}" \
  --switchboard "target/$dir/switchboard" --fixture "target/$dir/switchboard-fixture" "$@"
