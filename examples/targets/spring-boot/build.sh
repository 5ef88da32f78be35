#!/bin/sh
# Builds target/app.jar with Maven, only when it is missing or older than pom.xml or a source
# file, so a second run does not rebuild. Maven's repository cache stays in ~/.m2: the first
# build downloads Spring Boot from Maven Central, later ones work offline (-o) from the cache.
# Usage: build.sh [PROJECT_DIR]   (default: this script's folder; the zuul target reuses it)
set -eu
dir=${1:-$(dirname "$0")}
cd "$dir"
jar=target/app.jar
if [ -f "$jar" ] && [ -z "$(find pom.xml src -newer "$jar" -type f | head -n 1)" ]; then
    echo "build.sh: $dir/$jar is up to date, not rebuilding" >&2
    exit 0
fi
command -v mvn >/dev/null || { echo "build.sh: mvn not found; fix: apt-get install maven openjdk-17-jdk-headless" >&2; exit 2; }
echo "build.sh: building $dir/$jar with Maven" >&2
# Offline first (everything already in ~/.m2), online when something is missing.
mvn -q -B -o package -DskipTests >&2 || mvn -q -B package -DskipTests >&2
test -f "$jar"
