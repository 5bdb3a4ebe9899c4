#!/usr/bin/env bash
# Makes the pgvector extension available to the local PostgreSQL, for semantic recall tests.
# Sourced by scripts/pg.sh (function ensure_pgvector); also runnable alone. Idempotent: returns at
# once when the server already lists `vector` in pg_available_extensions.
#
# No binary package exists for PostgreSQL 15 in this Debian release, so it builds pgvector from
# Debian's *source* package of the next release (trixie), fetched with a scratch apt
# configuration: the machine's own apt sources are not changed. Needs postgresql-server-dev-N.
# Failure is not fatal: @engram/pg then falls back to exact search over real[] columns.

pgvector_log() { echo "pgvector: $*" >&2; }

# ensure_pgvector <port>
ensure_pgvector() {
  local port="$1" avail major scratch src
  command -v psql >/dev/null 2>&1 || { pgvector_log "psql missing; skipped"; return 0; }
  avail="$(PGCONNECT_TIMEOUT=3 psql -w -h 127.0.0.1 -p "$port" -U postgres -d postgres -Atqc \
    "select 1 from pg_available_extensions where name = 'vector'" 2>/dev/null || true)"
  if [ "$avail" = "1" ]; then
    pgvector_log "already available"
    return 0
  fi
  command -v apt-get >/dev/null 2>&1 || { pgvector_log "apt-get missing; using the real[] fallback"; return 0; }
  major="$(PGCONNECT_TIMEOUT=3 psql -w -h 127.0.0.1 -p "$port" -U postgres -d postgres -Atqc \
    "select current_setting('server_version_num')::int / 10000" 2>/dev/null || true)"
  [ -n "$major" ] || { pgvector_log "cannot read the server version"; return 0; }
  (
    set -e
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    pgvector_log "building pgvector for PostgreSQL $major from Debian's source package"
    if ! dpkg -s "postgresql-server-dev-$major" >/dev/null 2>&1; then
      $SUDO apt-get install -y -qq "postgresql-server-dev-$major" >&2 || {
        $SUDO apt-get update -qq >&2
        $SUDO apt-get install -y -qq "postgresql-server-dev-$major" >&2
      }
    fi
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    mkdir -p "$scratch/lists/partial" "$scratch/src"
    cat >"$scratch/trixie.sources" <<SOURCES
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    local_apt=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$scratch"
      -o "Dir::State::Lists=$scratch/lists")
    apt-get "${local_apt[@]}" update -qq >&2
    (cd "$scratch/src" && apt-get "${local_apt[@]}" source --download-only pgvector >&2)
    tar -xzf "$(ls "$scratch"/src/pgvector_*.orig.tar.gz | head -n 1)" -C "$scratch/src"
    src="$(find "$scratch/src" -mindepth 1 -maxdepth 1 -type d | head -n 1)"
    make -s -C "$src" PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" >&2
    $SUDO make -s -C "$src" PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" install >&2
  ) || { pgvector_log "build failed; @engram/pg will use its exact real[] fallback"; return 0; }
  pgvector_log "installed (each database still needs CREATE EXTENSION vector)"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -uo pipefail
  ensure_pgvector "${1:-5432}"
fi
