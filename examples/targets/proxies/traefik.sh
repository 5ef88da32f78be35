#!/usr/bin/env bash
# Runs Traefik with the given arguments, building it first when it is not cached. `go install
# .../traefik/v3/cmd/traefik@latest` does not work (replace directives in its go.mod), so this
# downloads the module source from the Go module proxy and builds ./cmd/traefik in it: about 8
# minutes of CPU on a 2-core machine and about 6 GB of Go module and build cache (cleaned after
# the build, the module source too). Needs Go 1.24+ (PATH or /usr/local/go/bin). Cached under
# $LOADBENCH_BUILD_CACHE (default ~/.cache/loadbench)/traefik-VERSION; build only:
# `traefik.sh --fetch-only`.
set -euo pipefail
version=${TRAEFIK_VERSION:-v3.6.12}
cache=${LOADBENCH_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loadbench}/traefik-$version
bin=$cache/traefik
build() {
    local go work
    go=$(command -v go || true)
    [[ -n $go ]] || go=/usr/local/go/bin/go
    [[ -x $go ]] || { echo "traefik.sh: no Go toolchain; fix: install Go 1.24 or newer" >&2; exit 2; }
    mkdir -p "$cache"
    work=$(mktemp -d "$cache/build.XXXXXX")
    echo "traefik.sh: building traefik $version with $("$go" version) in $work (first run only, minutes)" >&2
    # A private module and build cache, removed afterwards: the build needs ~6 GB only while it runs.
    export GOPATH=$work/gopath GOCACHE=$work/gocache GOFLAGS=-modcacherw
    local src
    src=$(cd "$work" && "$go" mod download -json "github.com/traefik/traefik/v3@$version" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [[ -d $src ]] || { echo "traefik.sh: go mod download gave no source folder" >&2; exit 1; }
    (cd "$src" && "$go" build -trimpath -o "$work/traefik" ./cmd/traefik) >&2
    mv -f "$work/traefik" "$bin"
    chmod -R u+w "$work" && rm -rf "$work"
}
# --cached: print the binary and exit 0 when it is cached, exit 1 when not (builds nothing).
if [[ ${1:-} == --cached ]]; then [[ -x $bin ]] && echo "$bin"; [[ -x $bin ]]; exit; fi
[[ -x $bin ]] || build
[[ ${1:-} == --fetch-only ]] && { echo "$bin"; exit 0; }
exec "$bin" "$@"
