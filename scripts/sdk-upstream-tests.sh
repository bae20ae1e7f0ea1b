#!/usr/bin/env bash
# Runs the official go-sdk's whole test suite against the patched copy in
# third_party/go-sdk (PATCHES.md): the release's module (tests included) is
# downloaded from the module proxy, the copy's Go files are laid over it,
# and `go test ./...` runs there. The copy keeps only the tests of what it
# patches; this is how every patch is held to every upstream test.
#
# Two upstream tests are adapted, where a patch changed what they reach
# into: patch 8 passes validateParamHeaders the bindings read when the tool
# was added, so its tests pass what AddTool would have read; patch 12 gives
# jsonrpc2.Response an unexported field (its encoded form), which go-cmp
# refuses to compare unless told to ignore it (as the test already has to
# be told how to compare the unexported field of its ID).
set -euo pipefail
cd "$(dirname "$0")/.."

mod=github.com/modelcontextprotocol/go-sdk
version=$(go list -m -f '{{.Version}}' "$mod")
src=$(go mod download -json "$mod@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "sdk-upstream-tests: no module directory for $mod@$version" >&2; exit 1; }

work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -r "$src/." "$work/"
chmod -R u+w "$work"
(cd third_party/go-sdk && find . -name '*.go' -print0 | while IFS= read -r -d '' f; do
  mkdir -p "$work/$(dirname "$f")"
  cp "$f" "$work/$f"
done)
sed -i 's/validateParamHeaders(header, msg, tool)/validateParamHeaders(header, msg, extractParamHeaderAnnotations(tool))/' \
  "$work/mcp/streamable_headers_test.go"
sed -i 's/cmp.Diff(request.wantMessages, got, transform)/cmp.Diff(request.wantMessages, got, transform, cmpopts.IgnoreUnexported(jsonrpc.Response{}))/' \
  "$work/mcp/streamable_test.go"
grep -q 'cmpopts.IgnoreUnexported(jsonrpc.Response{})' "$work/mcp/streamable_test.go" ||
  { echo "sdk-upstream-tests: streamable_test.go's comparison of messages not found" >&2; exit 1; }
# TestStreamableStateful_DiscoverDoesNotLeakSession counts the server's
# sessions as soon as a call returns, but the handler closes a
# discover-only session after that session's response is written: a count
# taken at once can still see it (1 run in 60 fails on v1.8.0 itself, more
# with the patches' timing). The counts are waited for instead; the
# deadline only bounds a hang, and a session that is never closed still
# fails the test.
perl -0pi -e 's/(\n\tcountSessions := func\(\) int \{\n.*?\n\t\}\n)/$1\tsettled := func(want int) int {\n\t\tfor deadline := time.Now().Add(10 * time.Second); countSessions() != want && time.Now().Before(deadline); {\n\t\t\ttime.Sleep(time.Millisecond)\n\t\t}\n\t\treturn countSessions()\n\t}\n/s; s/got := countSessions\(\); got != ([01]) \{/got := settled($1); got != $1 {/g' \
  "$work/mcp/streamable_test.go"
[ "$(grep -c 'got := settled(' "$work/mcp/streamable_test.go")" = 3 ] ||
  { echo "sdk-upstream-tests: TestStreamableStateful_DiscoverDoesNotLeakSession's session counts not found" >&2; exit 1; }

echo "go-sdk $version with third_party/go-sdk's files: the upstream suite"
cd "$work" && GOFLAGS=-mod=mod go test ./...
