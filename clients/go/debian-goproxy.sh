#!/usr/bin/env bash
# Writes a Go module proxy file tree to DIR with Debian's copies of the
# modules this client requires (go.mod), from /usr/share/gocode/src
# (golang-github-jackc-pgx-v4-dev and its dependencies), each served under
# the version go.mod names.  Their go.mod files list no requirements (the
# originals name test dependencies that Debian does not ship); this
# client's go.mod lists every module it needs.  Then, without network:
#   GOPROXY=file://DIR GOSUMDB=off GOFLAGS=-mod=mod go build
# Usage: bash debian-goproxy.sh DIR   (README.md, "Module mode")
set -euo pipefail
out=${1:?usage: debian-goproxy.sh DIR}
here=$(cd "$(dirname "$0")" && pwd)
src=${JQ_GOCODE:-/usr/share/gocode/src}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The requirements of go.mod: "path version" per line.
sed -n -e 's/^require \([^ (]*\) \([^ ]*\).*/\1 \2/p' \
	-e '/^require (/,/^)/{s/^[[:space:]]*\([^ )]*\) \(v[^ ]*\).*/\1 \2/p}' "$here/go.mod" |
	while read -r mod ver; do
		[ -f "$src/$mod/go.mod" ] || { echo "debian-goproxy: $src/$mod/go.mod is missing (install its Debian package)" >&2; exit 1; }
		# The proxy protocol escapes capital letters as !lower.
		esc=$(sed -e 's/\([A-Z]\)/!\L\1/g' <<<"$mod")
		d="$out/$esc/@v"
		mkdir -p "$d"
		printf 'module %s\n\ngo 1.17\n' "$mod" >"$d/$ver.mod"
		printf '{"Version":"%s"}\n' "$ver" >"$d/$ver.info"
		GO111MODULE=off GOFLAGS= go run "$here/internal/modzip/main.go" "$src/$mod" "$mod@$ver" "$d/$ver.mod" "$d/$ver.zip"
		{ [ -f "$d/list" ] && cat "$d/list"; echo "$ver"; } | sort -u >"$tmp/list"
		mv "$tmp/list" "$d/list"
		echo "$mod $ver"
	done
