#!/usr/bin/env bash
# Builds quan as a static binary and checks it: the Dockerfile's build stage
# runs this, and so does CI (.ci/run), since the CI machines have no Docker.
#
#   deploy/build.sh [OUT]      OUT defaults to bin/quan
#
# Checks: the binary is built with CGO_ENABLED=0 and -trimpath and has no
# program interpreter (statically linked); as an unprivileged user (uid
# 65534, like the image's non-root USER) it prints its version and help,
# and `quan serve` on a fresh data folder answers /readyz on its admin
# listener, writes its files as that user, and stops cleanly on SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-bin/quan}"

fail() { echo "build.sh: $*" >&2; exit 1; }

echo "== go build (static) -> $out"
mkdir -p "$(dirname "$out")"
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out" ./cmd/quan

echo "== static?"
info=$(go version -m "$out")
grep -q 'CGO_ENABLED=0' <<<"$info" || fail "$out: not built with CGO_ENABLED=0: $info"
grep -q -- '-trimpath=true' <<<"$info" || fail "$out: not built with -trimpath"
if command -v readelf >/dev/null; then
	! readelf -l "$out" | grep -q 'INTERP' || fail "$out has a program interpreter: dynamically linked"
	! readelf -d "$out" 2>/dev/null | grep -q 'NEEDED' || fail "$out needs shared libraries"
elif command -v file >/dev/null; then
	file -L "$out" | grep -q 'statically linked' || fail "$(file -L "$out")"
elif command -v ldd >/dev/null; then
	! ldd "$out" >/dev/null 2>&1 || fail "ldd lists libraries of $out: $(ldd "$out")"
else
	fail "none of readelf, file or ldd to check that $out is static"
fi
echo "$out: static, CGO_ENABLED=0, -trimpath"

echo "== runs as a non-root user"
uid=65534
tmp=$(mktemp -d)
pid=
cleanup() {
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
chmod 755 "$tmp"
install -m 755 "$out" "$tmp/quan"
mkdir -m 700 "$tmp/data"
# as_user is a prefix, not a function, so that `... &` starts quan itself
# (setpriv execs it) and $! is its pid.
if [[ $(id -u) == 0 ]]; then
	chown "$uid:$uid" "$tmp/data"
	as_user=(setpriv --reuid="$uid" --regid="$uid" --clear-groups --)
else
	uid=$(id -u) # already unprivileged
	as_user=(env)
fi
"${as_user[@]}" "$tmp/quan" version
"${as_user[@]}" "$tmp/quan" serve --help 2>/dev/null || fail "quan serve --help failed"
"${as_user[@]}" "$tmp/quan" worker --help 2>/dev/null || fail "quan worker --help failed"

QUAN_DATA="$tmp/data" QUAN_ADDR=127.0.0.1:0 QUAN_ADMIN_ADDR=127.0.0.1:0 QUAN_LOG_FORMAT=json \
	"${as_user[@]}" "$tmp/quan" serve 2>"$tmp/log" &
pid=$!
admin=
for _ in $(seq 300); do # up to 30 s for the first start on a slow machine
	admin=$(grep 'quan admin listening' "$tmp/log" | grep -o '"url":"[^"]*"' | cut -d'"' -f4 || true)
	[[ -n $admin ]] && break
	kill -0 "$pid" 2>/dev/null || { cat "$tmp/log" >&2; fail "quan serve exited"; }
	sleep 0.1
done
[[ -n $admin ]] || { cat "$tmp/log" >&2; fail "quan serve did not start its admin listener"; }
curl -fsS "$admin/readyz" || { cat "$tmp/log" >&2; fail "$admin/readyz"; }
echo
owner=$(stat -c %u "$tmp/data/jwt-secret")
[[ $owner == "$uid" ]] || fail "the data folder's files belong to uid $owner, not $uid"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[[ $status == 0 ]] || { cat "$tmp/log" >&2; fail "quan serve exited $status on SIGTERM"; }
pid=
echo "quan serve ran as uid $uid, answered /readyz and stopped on SIGTERM"
