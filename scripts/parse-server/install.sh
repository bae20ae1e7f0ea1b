#!/usr/bin/env bash
# Installs the Parse Server pinned by package-lock.json into
#   ${PARSEMCP_CACHE:-$HOME/.cache/parsemcp}/parse-server/<sha256 of the lockfile>
# (npm ci; never into the repository) and prints that directory on stdout.
# Idempotent: a completed install (marked by .installed) is reused.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${PARSEMCP_CACHE:-$HOME/.cache/parsemcp}"
hash="$(sha256sum "$here/package-lock.json" | cut -c1-16)"
dir="$cache/parse-server/$hash"
if [ -f "$dir/.installed" ]; then
  echo "$dir"
  exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "npm is not installed" >&2; exit 2; }
mkdir -p "$cache/parse-server"
# Install into a temporary sibling and rename, so a concurrent or
# interrupted install never leaves a half-filled directory behind.
tmp="$(mktemp -d "$cache/parse-server/.tmp-$hash-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cp "$here/package.json" "$here/package-lock.json" "$tmp/"
(cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error --ignore-scripts >&2)
touch "$tmp/.installed"
if ! mv -T "$tmp" "$dir" 2>/dev/null; then
  # Another install finished first; use it.
  [ -f "$dir/.installed" ] || { echo "could not install into $dir" >&2; exit 1; }
fi
trap - EXIT
rm -rf "$tmp"
echo "$dir"
