#!/usr/bin/env bash
# The MariaDB target of examples/php-mariadb.toml: `mariadb.sh DIR PORT` creates a data
# directory under DIR (the target's folder in the run, so nothing touches the system's
# /var/lib/mysql) on the first start, then runs mariadbd in the foreground on 127.0.0.1:PORT and
# the Unix socket DIR/mariadb.sock (or a short name in /tmp when that path is longer than a
# socket address allows), with no option file (--no-defaults), and loads init.sql
# (database `bench`, table `items`, user bench/bench on 127.0.0.1, SELECT only).
set -euo pipefail
dir=$1 port=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
user=$(id -un) # mariadbd refuses root unless told so; as anyone else it runs as that user
sock=$dir/mariadb.sock
if ((${#sock} > 100)); then
    sock=$(mktemp -u /tmp/loadbench-mariadb-XXXXXX.sock)
fi
# A small redo log (the default is 96 MB per run folder); the table has one row.
small=(--innodb-log-file-size=8M)
if [[ ! -d $dir/data/mysql ]]; then
    echo "mariadb.sh: creating the data directory $dir/data" >&2
    mariadb-install-db --no-defaults --datadir="$dir/data" --user="$user" \
        --auth-root-authentication-method=socket --skip-test-db "${small[@]}" >&2
fi
exec mariadbd --no-defaults --datadir="$dir/data" --user="$user" \
    --bind-address=127.0.0.1 --port="$port" --socket="$sock" \
    --pid-file="$dir/mariadb.pid" --init-file="$here/init.sql" --skip-name-resolve \
    --innodb-buffer-pool-size=64M --max-connections=500 --skip-log-bin "${small[@]}"
