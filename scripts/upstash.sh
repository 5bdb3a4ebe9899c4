#!/usr/bin/env bash
# The local Upstash-REST bridge for tests and CI, in front of the Redis that scripts/redis.sh
# provides. Prints `export ENGRAM_REDIS_URL=… ENGRAM_UPSTASH_URL=… ENGRAM_UPSTASH_TOKEN=…` on
# stdout; progress goes to stderr.
#
#   eval "$(bash scripts/upstash.sh)"
#
# The bridge (packages/upstash, bin `engram-upstash-bridge`) runs in the background from the
# repository sources on ${ENGRAM_BRIDGE_PORT:-8079}; a bridge already answering there with the
# token is reused. It is a development tool: production talks to Upstash itself.
#
# `bash scripts/upstash.sh stop` stops a bridge this script started (Redis is left running).
#
# Exits non-zero when Redis or the bridge cannot be had.
set -euo pipefail

log() { echo "upstash: $*" >&2; }

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"

dir="${ENGRAM_BRIDGE_DIR:-/tmp/engram-upstash-bridge}"

if [ "${1:-}" = "stop" ]; then
  if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    kill "$(cat "$dir/pid")"
    log "stopped the bridge (pid $(cat "$dir/pid"))"
  else
    log "no bridge started by this script is running"
  fi
  rm -f "$dir/pid"
  exit 0
fi

redis_exports="$(bash "$here/redis.sh")" || { log "no Redis to put the bridge in front of"; exit 1; }
eval "$redis_exports"

port="${ENGRAM_BRIDGE_PORT:-8079}"
token="${ENGRAM_UPSTASH_TOKEN:-engram-local-token}"
url="http://127.0.0.1:$port"

# POST ["ping"] with the token: exit 0 when the answer is {"result":"PONG"}, 3 on HTTP 401
# (a bridge with another token holds the port), 1 otherwise.
probe() {
  node -e '
    const [url, token] = process.argv.slice(1);
    fetch(url, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: JSON.stringify(["ping"]),
      signal: AbortSignal.timeout(2000) })
      .then(async (r) => process.exit(r.status === 401 ? 3 : (await r.json()).result === "PONG" ? 0 : 1))
      .catch(() => process.exit(1));
  ' "$url" "$token" >/dev/null 2>&1
}
answers() { probe; }

emit() {
  echo "$redis_exports"
  echo "export ENGRAM_UPSTASH_URL=$url"
  echo "export ENGRAM_UPSTASH_TOKEN=$token"
}

# ENGRAM_RESET_SERVICES=1 (set by .ci/run): a bridge this script started before, perhaps from
# other sources, is stopped, so the one the tests reach runs this checkout's code.
if [ "${ENGRAM_RESET_SERVICES:-}" = "1" ] && [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
  log "stopping the bridge started before (pid $(cat "$dir/pid"), ENGRAM_RESET_SERVICES=1)"
  kill "$(cat "$dir/pid")"
  for _ in $(seq 1 50); do kill -0 "$(cat "$dir/pid")" 2>/dev/null || break; sleep 0.1; done
  rm -f "$dir/pid"
fi

status=0
probe || status=$?
if [ "$status" -eq 0 ]; then
  log "reusing the bridge on $url"
  emit
  exit 0
fi
if [ "$status" -eq 3 ]; then
  log "a bridge on $url refuses the token; set ENGRAM_UPSTASH_TOKEN to its token or ENGRAM_BRIDGE_PORT to another port"
  exit 1
fi

mkdir -p "$dir"
log "starting the bridge on $url -> $ENGRAM_REDIS_URL (log: $dir/bridge.log)"
(
  cd "$repo"
  nohup node --import tsx --conditions=source packages/upstash/src/bridge/cli.ts \
    --port "$port" --redis-url "$ENGRAM_REDIS_URL" --token "$token" >"$dir/bridge.log" 2>&1 &
  echo $! >"$dir/pid"
)

for _ in $(seq 1 100); do
  if answers; then
    emit
    exit 0
  fi
  if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    log "the bridge exited:"
    tail -n 20 "$dir/bridge.log" >&2 || true
    exit 1
  fi
  sleep 0.2
done
log "the bridge did not answer on $url (see $dir/bridge.log)"
exit 1
