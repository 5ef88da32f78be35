#!/usr/bin/env bash
# Builds the grpc-go test server (grpc-go's health service with a per-status call counter, see
# main.go) and prints the binary's path on stdout; everything else goes to stderr. The build is
# kept in $LOADBENCH_BUILD_CACHE (default ~/.cache/loadbench)/grpc-go-HASH, HASH taken over
# main.go, go.mod and go.sum, so only a changed source builds again. grpc-go v1.84 needs Go
# 1.25 or newer: `go` on PATH, else /usr/local/go/bin/go (where .ci/run installs it); its
# modules come from the Go module proxy. Exit code 2: no Go toolchain.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
sum=$(cd "$here" && cat main.go go.mod go.sum | sha256sum)
dir=${LOADBENCH_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loadbench}/grpc-go-${sum:0:16}
out=$dir/grpc-go
if [[ -x $out ]]; then
    echo "grpc-go: cached build $out" >&2
    echo "$out"
    exit 0
fi
go_bin=$(command -v go || echo /usr/local/go/bin/go)
if [[ ! -x $go_bin ]]; then
    echo "grpc-go: no Go toolchain found; fix: install Go 1.25+ (on PATH or in /usr/local/go)" >&2
    exit 2
fi
echo "grpc-go: building with $("$go_bin" version) into $dir" >&2
mkdir -p "$dir"
# Built beside its final name, then renamed: two builds at once never leave half a binary.
partial=$(mktemp "$dir/.grpc-go.XXXXXX")
(cd "$here" && "$go_bin" build -trimpath -o "$partial" .) >&2
mv -f "$partial" "$out"
echo "$out"
