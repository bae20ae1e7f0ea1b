#!/usr/bin/env bash
# One query_class call, file by file: builds internal/walkcall with
# coverage, runs it (counters cleared just before the call and written
# just after it), and prints the files of this module whose code that one
# call ran on the server's side (the walker and its client, internal/rawmcp,
# left out), with how many of their functions it entered; the totals go to
# stderr. docs/ARCHITECTURE.md ("One query_class call, file by file") is
# this list.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -cover -covermode=atomic -coverpkg=./... -o "$dir/walkcall" ./internal/walkcall
mkdir "$dir/cov"
# What the program writes at exit (its shutdown included) goes elsewhere.
mkdir "$dir/exit"
GOCOVERDIR="$dir/exit" "$dir/walkcall" -o "$dir/cov"
go tool covdata func -i="$dir/cov" |
	awk '$1 ~ /^github.com\/parsemcp\/parsemcp\// && $1 !~ /internal\/(walkcall|rawmcp)\// && $NF != "0.0%" { split($1, a, ":"); f = a[1]; sub("^github.com/parsemcp/parsemcp/", "", f); n[f]++; fns++ }
	     END { for (f in n) printf "%3d  %s\n", n[f], f; printf "%d files, %d functions\n", length(n), fns > "/dev/stderr" }' |
	sort -k2
