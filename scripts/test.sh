#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs the pinned interop peers into
# target/peers/, checks formatting and lints, builds every binary the tests spawn, runs every test.
# .ci/run calls exactly this script.
set -euo pipefail
root=$(cd -- "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")/.." && pwd -P)
cd "$root"

# A clean run builds each crate once: incremental caches would only add gigabytes to
# target/ (set CARGO_INCREMENTAL=1 to keep them for an edit loop).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

echo "test: installing interop peers (node 22, server-everything, python mcp)" >&2
scripts/peers.sh

echo "test: checking formatting" >&2
cargo fmt --all -- --check

echo "test: linting (clippy, warnings are errors)" >&2
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "test: building binaries the tests spawn" >&2
cargo build --workspace --bins --locked

echo "test: running the test suite" >&2
cargo test --workspace --locked
