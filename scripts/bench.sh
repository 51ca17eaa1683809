#!/usr/bin/env bash
# Switchboard's benchmarks, from a fresh clone (see BENCHMARKS.md):
#
#   scripts/bench.sh            full run: installs the peers, builds release binaries, runs
#                               scenarios 1-3, 7, 8 and 9's calls (1 warm-up + 5 measured rounds,
#                               three CPU regimes, scenario 3 unpinned only; callgrind), the
#                               start-up scenarios 4-6 and 9's starts (1 warm-up + 10 rounds,
#                               unpinned), the gateway beside its peers (10) and one gateway
#                               with 10,000 sessions (11); rewrites BENCHMARKS.md and
#                               target/bench/results.json (~20 min)
#   scripts/bench.sh --smoke    one tiny unpinned round (50 calls; ours, raw pipe, rmcp, TS,
#                               Python, HTTP both eras and its floor, sandboxed and not; 3-server
#                               cold start, 200-tool catalog, one-shot CLI, sandboxed starts);
#                               writes target/bench/SMOKE.md and smoke-results.json only
#
# Any other arguments are passed to `switchboard-bench run` (try `--help`), e.g.
#   scripts/bench.sh --rounds 7 --only seq/fixture --no-callgrind
#   scripts/bench.sh --only http --no-callgrind   # the HTTP scenarios (3 and 8) only
#   scripts/bench.sh --only gateway --no-callgrind --json target/bench/gateway.json \
#     --out target/bench/GATEWAY.md   # scenario 7 (stdio and --http hops, direct baseline,
#                                     # the hops with policy + rate limits + metrics on), then
#   target/release/switchboard-bench report --json target/bench/gateway.json --section gateway
#   (puts its section into BENCHMARKS.md and its goal rows into the Goals table)
#   scripts/bench.sh --only cold,scale,rss,oneshot --json target/bench/startup.json \
#     --out target/bench/STARTUP.md    # start-up scenarios only, then merge them into the
#                                     # report of the last full run with
#   target/release/switchboard-bench report --merge target/bench/startup.json [--save]
#   (a merged run's cases replace the same cases of the last run; the others stay)
#   scripts/bench.sh --only sandbox --no-callgrind --json target/bench/sandbox.json \
#     --out target/bench/SANDBOX.md   # scenario 9 (a sandboxed server's start and calls, ~3 min),
#                                     # then put its section into BENCHMARKS.md with
#   target/release/switchboard-bench report --json target/bench/sandbox.json --section sandbox
#   scripts/bench.sh --only gateway-peers --no-callgrind --json target/bench/gwpeers.json \
#     --out target/bench/GWPEERS.md   # scenario 10 alone (in a full run too; --only names it
#                                     # exactly): our gateway beside supergateway, mcp-proxy (npm,
#                                     # PyPI) and FastMCP's proxy at 1/16/256 sessions, memory
#                                     # with 1,000 idle sessions (~12 min), then put its section
#                                     # and goal rows into BENCHMARKS.md with
#   target/release/switchboard-bench report --json target/bench/gwpeers.json --section gateway-peers
#   scripts/bench.sh --only gateway-scale --no-callgrind --json target/bench/gwscale.json \
#     --out target/bench/GWSCALE.md   # scenario 11 alone (in a full run too; ~30 s): one gateway
#                                     # with 10,000 legacy sessions, then a GET stream on each,
#                                     # memory per session and per stream, a call on every
#                                     # session, and 100 sessions past the default cap, then
#   target/release/switchboard-bench report --json target/bench/gwscale.json --section gateway-scale
# Environment: BENCH_TIMEOUT (seconds for the whole run, default 3600; smoke 300),
# BENCH_BUILD_TIMEOUT (seconds for the release build, default 1800), BENCH_LOCKED (default 1:
# build with --locked like scripts/test.sh; 0 lets cargo update Cargo.lock).
set -euo pipefail
root=$(cd -- "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")/.." && pwd -P)
cd "$root"

smoke=0
for arg in "$@"; do
  case "$arg" in
    --smoke) smoke=1 ;;
    -h|--help) sed -n '2,48p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  esac
done
if [ "$smoke" -eq 1 ]; then default_timeout=300; else default_timeout=3600; fi
run_timeout=${BENCH_TIMEOUT:-$default_timeout}
build_timeout=${BENCH_BUILD_TIMEOUT:-1800}
locked=()
if [ "${BENCH_LOCKED:-1}" != 0 ]; then locked=(--locked); fi

echo "bench: installing interop peers (node 22, server-everything + TS SDK, python mcp, the gateway peers)" >&2
scripts/peers.sh

echo "bench: building release binaries (switchboard-bench, switchboard-fixture, switchboard-rmcp-peer, switchboard)" >&2
timeout --kill-after=10 "$build_timeout" cargo build --release "${locked[@]}" \
  -p switchboard-bench -p switchboard-testkit -p switchboard-rmcp-peer -p switchboard-cli \
  --bin switchboard-bench --bin switchboard-fixture --bin switchboard-rmcp-peer --bin switchboard

# Hold the peers' install lock while measuring, so that a concurrent scripts/peers.sh
# (another checkout's test run, an edited pin) waits instead of reinstalling node or the
# venv under the running clients.
if command -v flock >/dev/null 2>&1; then
  exec 9>"target/peers/.lock"
  flock -w "$build_timeout" 9 || { echo "bench: timed out waiting for target/peers/.lock" >&2; exit 1; }
fi

mkdir -p target/bench
started=$SECONDS
echo "bench: running (bounded to ${run_timeout}s)" >&2
timeout --kill-after=30 "$run_timeout" target/release/switchboard-bench run "$@" 9>&-
echo "bench: finished in $((SECONDS - started))s" >&2
