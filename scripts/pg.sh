#!/usr/bin/env bash
# PostgreSQL for tests and CI. Prints `export ENGRAM_PG_URL=…` on stdout; progress goes to stderr.
#
#   eval "$(bash scripts/pg.sh)"
#
# 1. A server on 127.0.0.1:5432 that answers is used as is (trust auth, user postgres).
# 2. Otherwise a throwaway cluster is started (as user postgres, trust auth, fsync off) in
#    ${ENGRAM_PG_DIR:-/tmp/engram-pg} on a free port, after installing PostgreSQL with apt-get
#    when initdb is missing. A second call finds the cluster the first one started and reuses it.
#
# Exits non-zero when no server can be had.
set -euo pipefail

log() { echo "pg: $*" >&2; }

# pgvector (semantic recall): built from Debian's source package when missing; never fatal.
# shellcheck source=scripts/pgvector.sh
. "$(dirname "${BASH_SOURCE[0]}")/pgvector.sh"


answers() { pg_isready -q -h 127.0.0.1 -p "$1" -t 2 >/dev/null 2>&1; }

# The tests log in as postgres without a password: check that this works (when psql exists).
trusts() {
  command -v psql >/dev/null 2>&1 || return 0
  PGCONNECT_TIMEOUT=3 psql -w -h 127.0.0.1 -p "$1" -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1
}

# Test databases (engram_test_<epoch>_<hex>, made by packages/pg/test/env.ts) that a killed run
# left behind are dropped WITH (FORCE), which also ends their sessions: a racer stopped
# mid-transaction would otherwise hold its locks and connections for good. A database counts as
# left behind once it is ENGRAM_PG_STALE_MINUTES (default 100, more than CI's limit) old; names
# of the older form, engram_test_<hex>, always do. Younger ones may belong to a run going on.
# ENGRAM_RESET_SERVICES=1 (set by .ci/run, which owns the server while it runs) drops every test
# database and ends every other session on the postgres database too.
sql() { PGCONNECT_TIMEOUT=3 psql -w -h 127.0.0.1 -p "$1" -U postgres -d postgres -Atqc "$2" 2>/dev/null; }

drop_stale_databases() {
  command -v psql >/dev/null 2>&1 || return 0
  local port="$1" now name dropped=0 stale=$((${ENGRAM_PG_STALE_MINUTES:-100} * 60)) ended
  [ "${ENGRAM_RESET_SERVICES:-}" != "1" ] || stale=0
  now="$(date +%s)"
  while read -r name; do
    [ -n "$name" ] || continue
    if [[ "$name" =~ ^engram_test_([0-9]+)_[0-9a-f]+$ ]] && [ $((now - BASH_REMATCH[1])) -lt "$stale" ]; then
      continue
    fi
    sql "$port" "DROP DATABASE IF EXISTS \"$name\" WITH (FORCE)" >/dev/null && dropped=$((dropped + 1))
  done < <(sql "$port" "SELECT datname FROM pg_database WHERE datname ~ '^engram_test_'")
  [ "$dropped" -eq 0 ] || log "dropped $dropped test database(s) that stopped runs left behind"
  if [ "${ENGRAM_RESET_SERVICES:-}" = "1" ]; then
    ended="$(sql "$port" "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
      WHERE datname = 'postgres' AND backend_type = 'client backend' AND pid <> pg_backend_pid()")"
    [ "${ended:-0}" = "0" ] || log "ended $ended session(s) left on the postgres database (ENGRAM_RESET_SERVICES=1)"
  fi
  log "$(sql "$port" "SELECT count(*) || ' of ' || current_setting('max_connections') || ' connections in use'
    FROM pg_stat_activity WHERE backend_type = 'client backend'")"
}

emit() {
  [ "${ENGRAM_SKIP_PGVECTOR:-}" = "1" ] || ensure_pgvector "$1"
  drop_stale_databases "$1"
  echo "export ENGRAM_PG_URL=postgres://postgres@127.0.0.1:$1/postgres"
}

if command -v pg_isready >/dev/null 2>&1 && answers 5432; then
  if trusts 5432; then
    log "using the server on 127.0.0.1:5432"
    emit 5432
    exit 0
  fi
  log "the server on 127.0.0.1:5432 does not let postgres in without a password; starting our own"
fi

dir="${ENGRAM_PG_DIR:-/tmp/engram-pg}"
data="$dir/data"

# Reuse the throwaway cluster a previous call started.
if [ -f "$dir/port" ] && command -v pg_isready >/dev/null 2>&1; then
  port="$(cat "$dir/port")"
  if answers "$port"; then
    log "reusing the cluster in $data on port $port"
    emit "$port"
    exit 0
  fi
fi

find_bin() {
  local name="$1" found
  found="$(command -v "$name" 2>/dev/null || true)"
  if [ -z "$found" ]; then
    found="$(ls -d /usr/lib/postgresql/*/bin/"$name" 2>/dev/null | sort -V | tail -n 1 || true)"
  fi
  printf '%s' "$found"
}

if [ -z "$(find_bin initdb)" ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    log "initdb is missing and apt-get is not available"
    exit 1
  fi
  log "installing postgresql with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq >&2 || true
  $SUDO apt-get install -y -qq postgresql >&2
  # A cluster the package may have started on 5432 asks for passwords over TCP: leave it
  # alone and start a trust-auth throwaway cluster on another port below.
fi

initdb_bin="$(find_bin initdb)"
pg_ctl_bin="$(find_bin pg_ctl)"
if [ -z "$initdb_bin" ] || [ -z "$pg_ctl_bin" ]; then
  log "initdb or pg_ctl not found after installing postgresql"
  exit 1
fi
bindir="$(dirname "$pg_ctl_bin")"

# Run a command as the postgres user (initdb refuses to run as root).
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

free_port() {
  local p
  for p in $(seq 5433 5499); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

mkdir -p "$dir"
[ "$(id -u)" -ne 0 ] || chown postgres "$dir" 2>/dev/null || true

if [ ! -f "$data/PG_VERSION" ]; then
  log "creating a throwaway cluster in $data"
  as_postgres "'$initdb_bin' -D '$data' -U postgres --auth=trust -E UTF8 --locale=C.UTF-8" >&2 \
    || as_postgres "'$initdb_bin' -D '$data' -U postgres --auth=trust -E UTF8 --locale=C" >&2
fi

port="$(free_port)" || { log "no free port in 5433-5499"; exit 1; }
log "starting the cluster on port $port"
as_postgres "'$bindir/pg_ctl' -D '$data' -l '$dir/server.log' -w -t 30 start \
  -o \"-p $port -k '$data' -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200\"" >&2 || {
  log "the cluster did not start; see $dir/server.log"
  exit 1
}
echo "$port" >"$dir/port"
if ! answers "$port"; then
  log "the cluster on port $port does not answer"
  exit 1
fi
emit "$port"
