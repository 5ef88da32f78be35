#!/bin/sh
# Builds target/app.jar with Maven, only when it is missing or older than pom.xml or a source
# file, so a second run does not rebuild. Maven's repository cache stays in ~/.m2: the first
# build downloads Spring Boot from Maven Central, later ones work offline (-o) from the cache.
# Usage: build.sh [PROJECT_DIR]   (default: this script's folder; the zuul target reuses it)
#
# One build at a time per user: Maven's local repository is not safe for two processes that
# download into it at once (two scenarios' targets, or two tests, building on a fresh ~/.m2
# fail with half-written artifacts), so the whole check-and-build holds an exclusive lock.
set -eu
dir=${1:-$(dirname "$0")}
cd "$dir"
jar=target/app.jar
up_to_date() {
    [ -f "$jar" ] && [ -z "$(find pom.xml src -newer "$jar" -type f | head -n 1)" ]
}
if up_to_date; then
    echo "build.sh: $dir/$jar is up to date, not rebuilding" >&2
    exit 0
fi
command -v mvn >/dev/null || { echo "build.sh: mvn not found; fix: apt-get install maven openjdk-17-jdk-headless" >&2; exit 2; }
if command -v flock >/dev/null; then
    lock="${HOME:-/tmp}/.m2/loadbench-build.lock"
    mkdir -p "$(dirname "$lock")"
    exec 9>"$lock"
    flock 9
    # Another build may have made this jar while we waited.
    if up_to_date; then
        echo "build.sh: $dir/$jar was built while waiting for the Maven lock" >&2
        exit 0
    fi
fi
echo "build.sh: building $dir/$jar with Maven" >&2
# Offline first (everything already in ~/.m2), online when something is missing, and online
# once more when a download failed midway (Maven Central answers an occasional request badly).
mvn -q -B -o package -DskipTests >&2 ||
    mvn -q -B package -DskipTests >&2 ||
    { echo "build.sh: Maven failed; trying once more" >&2; sleep 5; mvn -q -B package -DskipTests >&2; }
test -f "$jar"
