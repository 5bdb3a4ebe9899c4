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
# Exits non-zero when Redis or the bridge cannot be had.
set -euo pipefail

log() { echo "upstash: $*" >&2; }

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"

redis_exports="$(bash "$here/redis.sh")" || { log "no Redis to put the bridge in front of"; exit 1; }
eval "$redis_exports"

port="${ENGRAM_BRIDGE_PORT:-8079}"
token="${ENGRAM_UPSTASH_TOKEN:-engram-local-token}"
url="http://127.0.0.1:$port"
dir="${ENGRAM_BRIDGE_DIR:-/tmp/engram-upstash-bridge}"

# POST ["ping"] with the token; true when the answer is {"result":"PONG"}.
answers() {
  node -e '
    const [url, token] = process.argv.slice(1);
    fetch(url, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: JSON.stringify(["ping"]),
      signal: AbortSignal.timeout(2000) })
      .then((r) => r.json()).then((b) => process.exit(b.result === "PONG" ? 0 : 1), () => process.exit(1));
  ' "$url" "$token" >/dev/null 2>&1
}

emit() {
  echo "$redis_exports"
  echo "export ENGRAM_UPSTASH_URL=$url"
  echo "export ENGRAM_UPSTASH_TOKEN=$token"
}

if answers; then
  log "reusing the bridge on $url"
  emit
  exit 0
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
