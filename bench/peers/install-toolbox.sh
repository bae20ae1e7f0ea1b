#!/usr/bin/env bash
# Builds MCP Toolbox for Databases (github.com/googleapis/genai-toolbox,
# pinned) for bench/peers into ${XDG_CACHE_HOME:-~/.cache}/parsemcp/toolbox/<version>/toolbox,
# outside the repository. Idempotent. Not part of CI.
#
# The Go module proxy serves v0.14.0 but the checksum database has no entry
# for it, so that one module is exempted from the checksum check; the build
# takes about 25 minutes on 2 cores.
set -euo pipefail
version="${TOOLBOX_VERSION:-v0.14.0}"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/parsemcp/toolbox/$version"
if [ -x "$dir/toolbox" ]; then
  echo "toolbox $version: already built in $dir"
  exit 0
fi
mkdir -p "$dir"
GOBIN="$dir" GONOSUMDB=github.com/googleapis/genai-toolbox GOFLAGS=-mod=mod \
  go install "github.com/googleapis/genai-toolbox@$version"
mv "$dir/genai-toolbox" "$dir/toolbox"
echo "toolbox $version: built in $dir"
