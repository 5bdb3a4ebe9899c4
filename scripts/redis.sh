#!/usr/bin/env bash
# Redis for tests and CI. Prints `export ENGRAM_REDIS_URL=…` on stdout; progress goes to stderr.
#
#   eval "$(bash scripts/redis.sh)"
#
# 1. A server on 127.0.0.1:6379 (or ENGRAM_REDIS_PORT) that answers PING is used as is.
# 2. Otherwise redis-server is installed with apt-get when missing, and started on that port with
#    nothing on disk (--save "" --appendonly no). A second call finds it and reuses it.
#
# Exits non-zero when no server can be had.
set -euo pipefail

log() { echo "redis: $*" >&2; }

port="${ENGRAM_REDIS_PORT:-6379}"

answers() {
  if command -v redis-cli >/dev/null 2>&1; then
    [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null || true)" = "PONG" ]
    return
  fi
  # No redis-cli: speak RESP over bash's /dev/tcp, in a subshell so nothing leaks.
  (
    reply=""
    exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
    printf 'PING\r\n' >&3
    IFS= read -r -t 2 reply <&3 || true
    [ "${reply%$'\r'}" = "+PONG" ]
  ) 2>/dev/null
}

emit() { echo "export ENGRAM_REDIS_URL=redis://127.0.0.1:$port"; }

if answers; then
  log "using the server on 127.0.0.1:$port"
  emit
  exit 0
fi

if ! command -v redis-server >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    log "redis-server is missing and apt-get is not available"
    exit 1
  fi
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  log "installing redis-server with apt-get"
  if ! $SUDO apt-get install -y -qq redis-server >&2; then
    $SUDO apt-get update -qq >&2 || true
    $SUDO apt-get install -y -qq redis-server >&2 || { log "apt-get could not install redis-server"; exit 1; }
  fi
fi

dir="${ENGRAM_REDIS_DIR:-/tmp/engram-redis}"
mkdir -p "$dir"
log "starting redis-server on 127.0.0.1:$port (nothing on disk)"
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
  --dir "$dir" --logfile "$dir/redis.log" >&2

for _ in $(seq 1 50); do
  if answers; then
    emit
    exit 0
  fi
  sleep 0.1
done
log "redis-server did not answer on 127.0.0.1:$port (see $dir/redis.log)"
exit 1
