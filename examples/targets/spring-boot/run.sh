#!/bin/sh
# Target command of the Spring Boot and Zuul scenarios: builds the jar if needed (build.sh,
# cached; its output lands in the run folder's logs/<target>.stderr.log, since loadbench logs
# the target's stderr), then replaces itself with the JVM, so loadbench's stop signal reaches
# Java directly. Usage: run.sh PROJECT_DIR [SPRING_ARGS...], e.g. --server.port=8080.
set -eu
dir=$1
shift
"$(dirname "$0")/build.sh" "$dir"
exec java ${JAVA_OPTS:-} -jar "$dir/target/app.jar" "$@"
