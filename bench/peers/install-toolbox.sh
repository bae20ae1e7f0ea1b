#!/usr/bin/env bash
# Builds MCP Toolbox for Databases (github.com/googleapis/genai-toolbox,
# pinned) for bench/peers into ${XDG_CACHE_HOME:-~/.cache}/parsemcp/toolbox/<version>/toolbox,
# outside the repository. Idempotent. Not part of CI.
#
# `go install module@version` asks the module proxy for the module's
# version list (to report deprecations), which the proxy refuses for this
# module (403), so the build goes through a throw-away main module that
# requires the pinned version instead. The checksum database has no entry
# for it either, so that one module is exempted from the checksum check.
# The build takes 25 minutes or more on 2 cores; it runs at the lowest
# priority.
set -euo pipefail
version="${TOOLBOX_VERSION:-v0.14.0}"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/parsemcp/toolbox/$version"
if [ -x "$dir/toolbox" ]; then
  echo "toolbox $version: already built in $dir"
  exit 0
fi
mkdir -p "$dir/src"
cd "$dir/src"
cat > go.mod <<MOD
module toolboxbuild

go 1.24

require github.com/googleapis/genai-toolbox $version
MOD
export GONOSUMDB=github.com/googleapis/genai-toolbox GOFLAGS=-mod=mod
# Resolve the dependency graph of the pinned version (its own go.mod).
go mod download github.com/googleapis/genai-toolbox
nice -n 19 go build -o "$dir/toolbox" github.com/googleapis/genai-toolbox
echo "toolbox $version: built in $dir"
