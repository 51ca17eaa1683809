#!/usr/bin/env bash
# Long fuzz campaigns over the targets of crates/switchboard-fuzz (see its lib.rs).
#
#   scripts/fuzz.sh [TARGET] [--executions N | --minutes M] [--seed S]
#       the mutation driver (release build, no coverage feedback); default 10,000,000
#       executions per target; every target when none is named
#   scripts/fuzz.sh [TARGET] --afl [--executions N | --minutes M]
#       AFL++ (coverage-guided) through cargo-afl: installs cargo-afl (pinned) into
#       target/fuzz-tools/ and builds AFL++ with it; needs cc and make
#   scripts/fuzz.sh --replay TARGET FILE...      runs saved inputs once
#
# Prints one line per target: executions, crashes, seconds, rate. Crash inputs are saved
# under target/fuzz/crashes/TARGET/ (AFL++: target/fuzz/afl/TARGET/default/crashes/); copy
# each into crates/switchboard-fuzz/regressions/TARGET/ and `cargo test -p switchboard-fuzz`
# runs it as a regression test. Runs under `nice -n 10`, one target at a time (one core).
# Record the results in docs/dev/faults.md, section "Fuzzing".
set -euo pipefail

CARGO_AFL_VERSION=0.18.2

SELF=$(readlink -f -- "${BASH_SOURCE[0]}")
ROOT=$(cd -- "$(dirname -- "$SELF")/.." && pwd -P)
cd "$ROOT"
TARGETS=(framing envelope sse config headers gateway)

target=""
budget=(--executions 10000000)
seed=(--seed 1)
afl=0
while [ $# -gt 0 ]; do
  case "$1" in
    --executions|--minutes) [ $# -ge 2 ] || { echo "fuzz: $1 needs a value" >&2; exit 2; }
      budget=("$1" "$2"); shift 2 ;;
    --seed) [ $# -ge 2 ] || { echo "fuzz: --seed needs a value" >&2; exit 2; }
      seed=(--seed "$2"); shift 2 ;;
    --afl) afl=1; shift ;;
    --replay) shift
      cargo build --release --locked -q -p switchboard-fuzz --bin switchboard-fuzz
      exec target/release/switchboard-fuzz --replay "$@" ;;
    -h|--help) sed -n '2,16p' "$SELF" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) target=$1; shift ;;
  esac
done
if [ -n "$target" ]; then
  case " ${TARGETS[*]} " in
    *" $target "*) ;;
    *) echo "fuzz: unknown target '$target'; targets: ${TARGETS[*]}" >&2; exit 2 ;;
  esac
  selected=("$target")
else
  selected=("${TARGETS[@]}")
fi

if [ "$afl" = 0 ]; then
  echo "fuzz: building the driver (release)" >&2
  cargo build --release --locked -q -p switchboard-fuzz --bin switchboard-fuzz
  echo "fuzz: tool: mutation driver (switchboard-fuzz, no coverage feedback), $(date -u +%Y-%m-%dT%H:%MZ)"
  exec nice -n 10 target/release/switchboard-fuzz "${selected[@]}" "${budget[@]}" "${seed[@]}" \
    --crashes target/fuzz/crashes
fi

# AFL++ through cargo-afl, everything inside target/.
TOOLS="$ROOT/target/fuzz-tools"
export XDG_DATA_HOME="$TOOLS/data"
export PATH="$TOOLS/bin:$PATH"
if ! cargo afl --version 2>/dev/null | grep -q "$CARGO_AFL_VERSION"; then
  echo "fuzz: installing cargo-afl $CARGO_AFL_VERSION into $TOOLS" >&2
  cargo install --locked --quiet --root "$TOOLS" cargo-afl --version "=$CARGO_AFL_VERSION"
fi
if ! compgen -G "$XDG_DATA_HOME/afl.rs/*/afl.rs-$CARGO_AFL_VERSION/afl/bin/afl-fuzz" >/dev/null; then
  echo "fuzz: building AFL++ with cargo-afl" >&2
  cargo afl config --build >&2
fi
echo "fuzz: building the AFL++ target (release, instrumented)" >&2
cargo afl build --release --locked -q -p switchboard-fuzz --features afl --bin switchboard-fuzz-afl
cargo build --release --locked -q -p switchboard-fuzz --bin switchboard-fuzz

case "${budget[0]}" in
  --executions) limit=(-E "${budget[1]}") ;;
  --minutes) limit=(-V "$(awk "BEGIN { printf \"%d\", ${budget[1]} * 60 }")") ;;
esac
echo "fuzz: tool: AFL++ via cargo-afl $CARGO_AFL_VERSION (coverage-guided), $(date -u +%Y-%m-%dT%H:%MZ)"
status=0
for name in "${selected[@]}"; do
  out="target/fuzz/afl/$name"
  seeds="target/fuzz/seeds"
  rm -rf "$out" "$seeds/$name"
  mkdir -p "$(dirname "$out")"
  target/release/switchboard-fuzz --write-seeds "$seeds" "$name"
  started=$(date +%s)
  SWITCHBOARD_FUZZ_TARGET=$name AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
    nice -n 10 cargo afl fuzz "${limit[@]}" -t 30000 -i "$seeds/$name" -o "$out" \
    target/release/switchboard-fuzz-afl >"target/fuzz/afl-$name.log" 2>&1 || true
  stats="$out/default/fuzzer_stats"
  execs=$(awk -F' *: *' '$1=="execs_done" {print $2}' "$stats" 2>/dev/null || echo "?")
  crashes=$(awk -F' *: *' '$1=="saved_crashes" {print $2}' "$stats" 2>/dev/null || echo "?")
  seconds=$(( $(date +%s) - started ))
  echo "target $name: executions ${execs:-?}, crashes ${crashes:-?}, seconds $seconds (AFL++ log: target/fuzz/afl-$name.log)"
  [ "${crashes:-0}" = 0 ] || status=1
done
exit $status
