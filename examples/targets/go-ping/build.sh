#!/usr/bin/env bash
# Builds go-ping (net/http and gin "ping" servers, seed 001) once per source version and prints
# the binary's path on stdout; build output goes to stderr. The binary is cached under
# $LOADBENCH_BUILD_CACHE (default ~/.cache/loadbench) in a folder named by the hash of main.go,
# go.mod and go.sum, so a second run does not rebuild. Needs Go 1.25+ (gin v1.12), looked for on
# PATH, then in /usr/local/go/bin; modules come from the Go module proxy (GOPROXY).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
hash=$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-16)
cache=${LOADBENCH_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loadbench}/go-ping-$hash
bin=$cache/go-ping
if [[ -x $bin ]]; then
    echo "go-ping: cached build $bin (source hash $hash)" >&2
    echo "$bin"
    exit 0
fi
go=$(command -v go || true)
[[ -n $go ]] || go=/usr/local/go/bin/go
if [[ ! -x $go ]]; then
    echo "go-ping: no Go toolchain; fix: install Go 1.25 or newer (https://go.dev/dl, or put it on PATH)" >&2
    exit 2
fi
echo "go-ping: building with $("$go" version) into $cache (first run only; gin takes minutes)" >&2
mkdir -p "$cache"
tmp=$(mktemp "$cache/go-ping.XXXXXX")
(cd "$src" && "$go" build -trimpath -o "$tmp" . ) >&2
mv -f "$tmp" "$bin"
echo "go-ping: built $bin" >&2
echo "$bin"
