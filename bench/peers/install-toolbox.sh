#!/usr/bin/env bash
# Installs MCP Toolbox for Databases (github.com/googleapis/genai-toolbox)
# for bench/peers: its prebuilt Linux x64 binary from npm
# (@toolbox-sdk/server-linux-x64, pinned; TOOLBOX_VERSION overrides) into
# ${XDG_CACHE_HOME:-~/.cache}/parsemcp/toolbox/<version>/, outside the
# repository. The binary lands at
# node_modules/@toolbox-sdk/server-linux-x64/bin/toolbox there, where
# bench/peers looks for it. Idempotent; takes seconds (no build). Not part
# of CI.
set -euo pipefail
version="${TOOLBOX_VERSION:-1.12.0}"
version="${version#v}"
pkg="@toolbox-sdk/server-linux-x64"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/parsemcp/toolbox/$version"
bin="$dir/node_modules/$pkg/bin/toolbox"
if [ -x "$bin" ]; then
  echo "toolbox $version: already installed in $dir"
  exit 0
fi
case "$(uname -s)/$(uname -m)" in
  Linux/x86_64) ;;
  *) echo "toolbox: $pkg is the Linux x64 build; this machine is $(uname -s)/$(uname -m)" >&2; exit 1 ;;
esac
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"name":"parsemcp-bench-toolbox","private":true}' > package.json
npm install --no-audit --no-fund --omit=dev "$pkg@$version"
chmod +x "$bin"
"$bin" --version
echo "toolbox $version: installed in $dir"
