#!/usr/bin/env bash
# Builds the release archives of thoughtbox: static binaries (CGO_ENABLED=0)
# for linux, darwin and windows on amd64 and arm64, with the version and
# commit stamped in (thoughtbox version shows them), each packed with the
# README into a .tar.gz (a .zip for windows), and a
# SHA256SUMS file over the archives.
#
#   bash release/build.sh [VERSION]     # default: git describe, else 0.0.0-dev
#
# Output goes to dist/VERSION/. Set TARGETS="linux/amd64 windows/arm64" to
# build fewer; OUT to put them elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo 0.0.0-dev)}
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
targets=${TARGETS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"}
out=${OUT:-dist/$version}
pkg=github.com/thoughtbox/thoughtbox/cmd/thoughtbox/internal/cli

command -v zip >/dev/null || { echo "release: zip is needed for the windows archives" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd) # absolute: the archives are made from the staging directory
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

for t in $targets; do
	goos=${t%/*}
	goarch=${t#*/}
	name=thoughtbox_${version}_${goos}_${goarch}
	dir=$stage/$name
	mkdir -p "$dir"
	exe=thoughtbox
	[ "$goos" = windows ] && exe=thoughtbox.exe
	echo "== $goos/$goarch"
	# -trimpath keeps the build machine's paths out of the binary, so two
	# builds of one commit are byte-identical; -buildvcs=false because the
	# commit is stamped explicitly.
	CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=false \
		-ldflags "-s -w -X $pkg.Version=$version -X $pkg.Commit=$commit" \
		-o "$dir/$exe" ./cmd/thoughtbox
	cp README.md "$dir/"
	if [ "$goos" = windows ]; then
		(cd "$stage" && zip -qr -X "$out/$name.zip" "$name")
	else
		tar -C "$stage" --owner=0 --group=0 --numeric-owner --mtime='2000-01-01 00:00Z' --sort=name \
			-czf "$out/$name.tar.gz" "$name"
	fi
done

(cd "$out" && sha256sum -- *.tar.gz *.zip 2>/dev/null > SHA256SUMS)
echo "== $out"
cat "$out/SHA256SUMS"
