#!/usr/bin/env bash
# Runs Spire (crates.io `spire-proxy`, binary `spire`) with the given arguments, building it first
# when it is not cached: `cargo install spire-proxy --locked` (about 6 minutes of CPU on a 2-core
# machine; needs cargo and crates.io). Cached under $LOADBENCH_BUILD_CACHE (default
# ~/.cache/loadbench)/spire-VERSION, so later runs start at once; build only: `spire.sh
# --fetch-only`.
set -euo pipefail
version=${SPIRE_PROXY_VERSION:-0.0.28}
cache=${LOADBENCH_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loadbench}/spire-$version
bin=$cache/bin/spire
# --cached: print the binary and exit 0 when it is cached, exit 1 when not (builds nothing).
if [[ ${1:-} == --cached ]]; then [[ -x $bin ]] && echo "$bin"; [[ -x $bin ]]; exit; fi
if [[ ! -x $bin ]]; then
    command -v cargo >/dev/null || { echo "spire.sh: cargo not found; fix: install Rust (https://rustup.rs)" >&2; exit 2; }
    echo "spire.sh: building spire-proxy $version into $cache (first run only, minutes)" >&2
    cargo install spire-proxy --version "$version" --locked --root "$cache" >&2
fi
[[ ${1:-} == --fetch-only ]] && { echo "$bin"; exit 0; }
exec "$bin" "$@"
