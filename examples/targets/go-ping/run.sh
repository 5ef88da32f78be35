#!/usr/bin/env bash
# The go-ping target as loadbench starts it: build (cached, see build.sh) then exec the server,
# so the build's output lands in the run folder's logs/<target>.stderr.log and the server keeps
# this process's pid, CPU set and cgroup. Arguments go to the server (-framework, -listen).
set -euo pipefail
bin=$("$(dirname "${BASH_SOURCE[0]}")/build.sh")
exec "$bin" "$@"
