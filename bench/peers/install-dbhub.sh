#!/usr/bin/env bash
# Installs dbhub (npm @bytebase/dbhub, pinned) for bench/peers into
# ${XDG_CACHE_HOME:-~/.cache}/parsemcp/dbhub/<version>/, outside the
# repository. Idempotent. Not part of CI.
set -euo pipefail
version="${DBHUB_VERSION:-0.21.2}"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/parsemcp/dbhub/$version"
if [ -f "$dir/node_modules/@bytebase/dbhub/dist/index.js" ]; then
  echo "dbhub $version: already installed in $dir"
  exit 0
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"name":"parsemcp-bench-dbhub","private":true}' > package.json
npm install --no-audit --no-fund --omit=dev "@bytebase/dbhub@$version"
echo "dbhub $version: installed in $dir"
