#!/bin/sh
# Re-vendors the Redoc standalone bundle the /integration/docs page loads.
# The appliance is often offline, so the page may not use a CDN: the bundle
# is committed next to this script and embedded into the binary, and `go
# build` never needs node. Run this only to upgrade Redoc (needs npm and
# network), then commit the result.
#
# Redoc 2.x is pinned on purpose: 3.x turns on browser telemetry to a remote
# collector by default, which an offline appliance must not attempt.
set -eu
VERSION=2.5.4
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "redoc@$VERSION" >/dev/null)
tar -xzf "$tmp/redoc-$VERSION.tgz" -C "$tmp" package/bundles/redoc.standalone.js package/LICENSE
cp "$tmp/package/bundles/redoc.standalone.js" "$here/redoc.standalone.js"
cp "$tmp/package/LICENSE" "$here/redoc.LICENSE"
echo "$VERSION" > "$here/redoc.VERSION"
echo "vendored redoc $VERSION into $here"
