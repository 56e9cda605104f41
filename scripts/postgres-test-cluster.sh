#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: `start` runs initdb into a fresh temporary folder, starts the
# server on 127.0.0.1 (a free port) and on a Unix socket in that folder, creates the role and database
# `gatehouse` (the role may create databases: each test makes its own and drops it), and prints the URL;
# `url` prints it again; `stop` stops the server and removes the folder. It installs nothing: Debian's
# `postgresql` package (or any PostgreSQL whose `initdb` is found, see below) must be there.
#
#   export GATEHOUSE_TEST_POSTGRES_URL=$(scripts/postgres-test-cluster.sh start)
#   swift test --filter ReplicaTests
#   scripts/postgres-test-cluster.sh stop
#
# Binaries: $PG_BINDIR if set, else `pg_config --bindir` when it holds initdb, else the newest
# /usr/lib/postgresql/<version>/bin. As root the cluster runs as the unprivileged `postgres` user
# (created by the package); as anyone else, as that user. Authentication is `trust`, bound to loopback
# and a socket folder only its owner can enter: a test cluster, never a server to keep.
# The state file ($GATEHOUSE_PG_STATE, default /tmp/gatehouse-pg-cluster.state) names the folder and URL,
# so `url` and `stop` work from another shell; one cluster per state file.
# `stop-server` and `start-server` stop and start the server of a running cluster without removing its
# folder (the tests' database outages). With GATEHOUSE_PG_SSL_DIR naming a folder that holds server.crt and
# server.key, `start` turns TLS on with that certificate (plain connections are still accepted).
set -euo pipefail

state=${GATEHOUSE_PG_STATE:-/tmp/gatehouse-pg-cluster.state}
role=gatehouse
database=gatehouse

die() { echo "postgres-test-cluster: $*" >&2; exit 1; }

find_bindir() {
    if [ -n "${PG_BINDIR:-}" ]; then
        [ -x "$PG_BINDIR/initdb" ] || die "PG_BINDIR=$PG_BINDIR has no initdb"
        echo "$PG_BINDIR"; return
    fi
    local dir
    if command -v pg_config >/dev/null 2>&1; then
        dir=$(pg_config --bindir 2>/dev/null || true)
        if [ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then echo "$dir"; return; fi
    fi
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then echo "$dir"; return; fi
    die "no PostgreSQL found (install Debian's 'postgresql' package, or set PG_BINDIR)"
}

# Runs a command as the cluster's owner: `postgres` when we are root, else ourselves.
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || die "running as root but there is no 'postgres' user to run the cluster as"
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# Closes every descriptor this script inherited beyond 0-2 (255 is bash's own), before a server is started:
# a server would otherwise keep the caller's other pipes open for its whole life (a test runner's pipes to
# other processes), and whoever reads them to their end would wait for ever.
close_inherited_fds() {
    local fd
    for fd in $(ls /proc/$$/fd 2>/dev/null); do
        case "$fd" in 0|1|2|255) ;; *) eval "exec $fd>&-" 2>/dev/null || true ;; esac
    done
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

read_state() {
    [ -f "$state" ] || die "no cluster running (no $state); run '$0 start'"
    # shellcheck disable=SC1090
    . "$state"
}

start() {
    close_inherited_fds
    if [ -f "$state" ]; then
        . "$state"
        if [ -n "${PGTEST_DIR:-}" ] && [ -f "$PGTEST_DIR/data/postmaster.pid" ]; then
            die "a cluster is already running ($PGTEST_URL); '$0 stop' it first"
        fi
        rm -f "$state"
    fi
    local bindir dir port url tries
    bindir=$(find_bindir)
    dir=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-pg.XXXXXX")
    chmod 700 "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    as_owner "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; rm -rf "$dir"; die "initdb failed"; }
    # Test settings: no fsync (a crashed test cluster is thrown away), enough connections for two
    # replicas' pools per test, and logs in the folder.
    cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
logging_collector = off
EOF
    if [ -n "${GATEHOUSE_PG_SSL_DIR:-}" ]; then
        [ -f "$GATEHOUSE_PG_SSL_DIR/server.crt" ] && [ -f "$GATEHOUSE_PG_SSL_DIR/server.key" ] \
            || { rm -rf "$dir"; die "GATEHOUSE_PG_SSL_DIR=$GATEHOUSE_PG_SSL_DIR needs server.crt and server.key"; }
        cp "$GATEHOUSE_PG_SSL_DIR/server.crt" "$GATEHOUSE_PG_SSL_DIR/server.key" "$dir/data/"
        chmod 600 "$dir/data/server.key"
        if [ "$(id -u)" = 0 ]; then chown postgres: "$dir/data/server.crt" "$dir/data/server.key"; fi
        printf "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n" >>"$dir/data/postgresql.conf"
    fi
    for tries in 1 2 3 4 5; do
        port=$(free_port)
        if as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-p $port" -w -t 30 start >/dev/null 2>&1; then
            break
        fi
        port=
        sleep 0.5
    done
    [ -n "$port" ] || { cat "$dir/server.log" >&2 || true; rm -rf "$dir"; die "the server did not start (log above)"; }
    as_owner "$bindir/psql" -h "$dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -q \
        -c "CREATE ROLE $role LOGIN CREATEDB" -c "CREATE DATABASE $database OWNER $role" >/dev/null
    url="postgres://$role@127.0.0.1:$port/$database"
    {
        echo "PGTEST_DIR='$dir'"
        echo "PGTEST_BINDIR='$bindir'"
        echo "PGTEST_PORT='$port'"
        echo "PGTEST_URL='$url'"
    } >"$state"
    echo "$url"
}

stop() {
    [ -f "$state" ] || { echo "postgres-test-cluster: no cluster to stop" >&2; return 0; }
    . "$state"
    if [ -f "$PGTEST_DIR/data/postmaster.pid" ]; then
        as_owner "$PGTEST_BINDIR/pg_ctl" -D "$PGTEST_DIR/data" -m fast -w -t 30 stop >/dev/null 2>&1 \
            || as_owner "$PGTEST_BINDIR/pg_ctl" -D "$PGTEST_DIR/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    fi
    case "$PGTEST_DIR" in
        "${TMPDIR:-/tmp}"/gatehouse-pg.*) rm -rf "$PGTEST_DIR" ;;
        *) echo "postgres-test-cluster: not removing unexpected folder '$PGTEST_DIR'" >&2 ;;
    esac
    rm -f "$state"
}

# Stops the server of a running cluster and keeps its folder, so `start-server` brings the same data back.
stop_server() {
    read_state
    as_owner "$PGTEST_BINDIR/pg_ctl" -D "$PGTEST_DIR/data" -m fast -w -t 30 stop >/dev/null
}

# Starts the server `stop-server` stopped, on the same port.
start_server() {
    close_inherited_fds
    read_state
    as_owner "$PGTEST_BINDIR/pg_ctl" -D "$PGTEST_DIR/data" -l "$PGTEST_DIR/server.log" -o "-p $PGTEST_PORT" -w -t 30 start >/dev/null
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    url) read_state; echo "$PGTEST_URL" ;;
    stop-server) stop_server ;;
    start-server) start_server ;;
    *) echo "usage: $0 start|stop|url|stop-server|start-server" >&2; exit 64 ;;
esac
