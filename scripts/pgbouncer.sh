#!/usr/bin/env bash
# PgBouncer in transaction-pooling mode in front of the PostgreSQL server of ENGRAM_PG_URL, for
# tests and CI. Prints `export ENGRAM_PGBOUNCER_URL=…` on stdout; progress goes to stderr.
#
#   eval "$(bash scripts/pg.sh)"; eval "$(bash scripts/pgbouncer.sh)"
#
# 1. A PgBouncer this script started before (${ENGRAM_PGBOUNCER_DIR:-/tmp/engram-pgbouncer}),
#    still running and in front of the same server, is reused.
# 2. Otherwise pgbouncer is installed with apt-get when missing and started (as user postgres,
#    `pool_mode = transaction`, `auth_type = trust`, every database of the server) on a free
#    port in 6432-6499.
#
# The URL names the same user and database as ENGRAM_PG_URL (which is read from scripts/pg.sh
# when unset). Exits non-zero when no PgBouncer can be had.
set -euo pipefail

log() { echo "pgbouncer: $*" >&2; }
here="$(cd "$(dirname "$0")" && pwd)"

if [ -z "${ENGRAM_PG_URL:-}" ]; then
  eval "$(bash "$here/pg.sh")"
fi
# postgres://user[:password]@host:port/database → its parts (the test servers use no password).
rest="${ENGRAM_PG_URL#*://}"
userinfo="${rest%%@*}"
user="${userinfo%%:*}"
hostport="${rest#*@}"
hostport="${hostport%%/*}"
database="${rest#*/}"
database="${database%%\?*}"
pg_host="${hostport%%:*}"
pg_port="${hostport##*:}"
[ "$pg_port" != "$hostport" ] || pg_port=5432

dir="${ENGRAM_PGBOUNCER_DIR:-/tmp/engram-pgbouncer}"
target="$pg_host:$pg_port"

answers() { pg_isready -q -h 127.0.0.1 -p "$1" -d "$database" -U "$user" -t 2 >/dev/null 2>&1; }

emit() { echo "export ENGRAM_PGBOUNCER_URL=postgres://$user@127.0.0.1:$1/$database"; }

# Reuse the PgBouncer a previous call started, if it still runs in front of the same server.
if [ -f "$dir/port" ] && [ -f "$dir/pgbouncer.pid" ] && [ "$(cat "$dir/target" 2>/dev/null)" = "$target" ] \
  && kill -0 "$(cat "$dir/pgbouncer.pid")" 2>/dev/null; then
  port="$(cat "$dir/port")"
  if answers "$port"; then
    log "reusing the PgBouncer on port $port (pid $(cat "$dir/pgbouncer.pid"))"
    emit "$port"
    exit 0
  fi
fi

find_bin() {
  command -v "$1" 2>/dev/null || ls /usr/sbin/"$1" /usr/bin/"$1" 2>/dev/null | head -n 1 || true
}

if [ -z "$(find_bin pgbouncer)" ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    log "pgbouncer is missing and apt-get is not available"
    exit 1
  fi
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  log "installing pgbouncer with apt-get"
  if ! $SUDO apt-get install -y -qq pgbouncer >&2; then
    $SUDO apt-get update -qq >&2 || true
    $SUDO apt-get install -y -qq pgbouncer >&2 || { log "apt-get could not install pgbouncer"; exit 1; }
  fi
fi
bin="$(find_bin pgbouncer)"
[ -n "$bin" ] || { log "pgbouncer not found after installing it"; exit 1; }

free_port() {
  local p
  for p in $(seq 6432 6499); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

# PgBouncer refuses to run as root: run it as postgres (created when missing, as pg.sh does).
as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
      useradd --system --home-dir "$dir" --shell /bin/bash postgres
    fi
    su postgres -s /bin/bash -c "$*"
  else
    bash -c "$*"
  fi
}

mkdir -p "$dir"
[ "$(id -u)" -ne 0 ] || chown postgres "$dir" 2>/dev/null || true
port="$(free_port)" || { log "no free port in 6432-6499"; exit 1; }

# Every database of the server, reached as the connecting user; transaction pooling, so a
# server connection belongs to a client only for one transaction (or one statement outside one).
cat >"$dir/pgbouncer.ini" <<EOF
[databases]
* = host=$pg_host port=$pg_port

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 40
server_reset_query =
ignore_startup_parameters = extra_float_digits,options
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
printf '"%s" ""\n' "$user" >"$dir/userlist.txt"
[ "$(id -u)" -ne 0 ] || chown postgres "$dir"/* 2>/dev/null || true

log "starting PgBouncer (transaction pooling) on 127.0.0.1:$port in front of $target"
as_postgres "'$bin' -d '$dir/pgbouncer.ini'" >&2 || { log "PgBouncer did not start; see $dir/pgbouncer.log"; exit 1; }
for _ in $(seq 1 50); do
  answers "$port" && break
  sleep 0.1
done
if ! answers "$port"; then
  log "PgBouncer on port $port does not answer; see $dir/pgbouncer.log"
  exit 1
fi
echo "$port" >"$dir/port"
echo "$target" >"$dir/target"
emit "$port"
