#!/usr/bin/env bash
# The MariaDB target of examples/php-mariadb.toml and examples/orders.toml:
# `mariadb.sh DIR PORT [INIT_SQL]` creates a data
# directory under DIR (the target's folder in the run, so nothing touches the system's
# /var/lib/mysql) on the first start, then runs mariadbd in the foreground on 127.0.0.1:PORT and
# the Unix socket DIR/mariadb.sock (or a short name in /tmp when that path is longer than a
# socket address allows), with no option file (--no-defaults), and runs INIT_SQL at every start
# (default: init.sql beside this script: database `bench`, table `items`, user bench/bench on
# 127.0.0.1, SELECT only; examples/targets/orders/init.sql for the orders example).
set -euo pipefail
dir=$1 port=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
init=${3:-$here/init.sql}
if [[ ! -f $init ]]; then
    echo "mariadb.sh: no init file $init (the third argument, INIT_SQL)" >&2
    exit 2
fi
user=$(id -un) # mariadbd refuses root unless told so; as anyone else it runs as that user
sock=$dir/mariadb.sock
if ((${#sock} > 100)); then
    sock=$(mktemp -u /tmp/loadbench-mariadb-XXXXXX.sock)
fi
# A small redo log (the default is 96 MB per run folder); the table has one row. Temporary
# tables go to DIR/tmp, not the shared /tmp: a bootstrap beside other MariaDB servers once
# failed there ("Could not remove temporary table: '/tmp/#sql-temptable-…'").
mkdir -p "$dir/tmp"
small=(--innodb-log-file-size=8M --tmpdir="$dir/tmp")
if [[ ! -d $dir/data/mysql ]]; then
    echo "mariadb.sh: creating the data directory $dir/data" >&2
    mariadb-install-db --no-defaults --datadir="$dir/data" --user="$user" \
        --auth-root-authentication-method=socket --skip-test-db "${small[@]}" >&2
fi
exec mariadbd --no-defaults --datadir="$dir/data" --user="$user" \
    --bind-address=127.0.0.1 --port="$port" --socket="$sock" \
    --pid-file="$dir/mariadb.pid" --init-file="$init" --skip-name-resolve \
    --innodb-buffer-pool-size=64M --max-connections=500 --skip-log-bin "${small[@]}"
