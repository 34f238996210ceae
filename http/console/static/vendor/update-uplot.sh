#!/bin/sh
# Vendors uPlot (MIT, https://github.com/leeoniya/uPlot) for the console's
# charts, so that the binary serves it and no page loads a CDN.
#
#   http/console/static/vendor/update-uplot.sh [VERSION]
#
# Fetches uplot@VERSION (default: the latest) from the npm registry with
# `npm pack`, which checks the tarball against the registry's integrity
# hash, copies the minified IIFE build, its stylesheet and the licence
# into uplot/, and writes uplot/VERSION with each file's sha256, which
# http/console/vendor_test.go checks. Needs npm, tar and sha256sum.
set -eu

version=${1:-latest}
here=$(cd "$(dirname "$0")" && pwd)
dest=$here/uplot
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cd "$tmp"
npm pack --silent "uplot@$version" >/dev/null
tgz=$(ls uplot-*.tgz)
got=${tgz#uplot-}
got=${got%.tgz}
integrity=$(npm view --silent "uplot@$got" dist.integrity)
license=$(npm view --silent "uplot@$got" license)
if [ "$license" != MIT ]; then
	echo "uplot $got is licensed $license, not MIT: check it before vendoring" >&2
	exit 1
fi
tar -xzf "$tgz"

mkdir -p "$dest"
rm -f "$dest"/*
for f in dist/uPlot.iife.min.js dist/uPlot.min.css LICENSE; do
	cp "package/$f" "$dest/"
done

cd "$dest"
{
	echo "# uPlot, vendored by ../update-uplot.sh; do not edit these files by hand."
	echo "# Check in this directory with: grep -E '^[0-9a-f]{64}  ' VERSION | sha256sum -c"
	echo "version $got"
	echo "source https://registry.npmjs.org/uplot/-/$tgz"
	echo "license $license"
	echo "integrity $integrity"
	sha256sum uPlot.iife.min.js uPlot.min.css LICENSE
} >VERSION
echo "uplot $got vendored into $dest"
