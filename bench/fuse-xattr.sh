#!/usr/bin/env bash
# fuse-xattr.sh — what serving extended attributes costs a write through
# `ustore mount`. Before xattrs the mount answered getxattr ENOSYS, and the
# kernel stopped asking (fc->no_getxattr); now it asks for
# security.capability before every write of a file (file_remove_privs),
# and the mount answers ENODATA itself, without a server request.
#
# Usage: bench/fuse-xattr.sh [BASE]   (as root, with /dev/fuse; BASE: the
#                                      commit without xattrs, default
#                                      5cc1cbb)
#
# One server (this tree's), two mount binaries: BASE's and this tree's,
# mounted in turn, ROUNDS times each (default 3), each running the same
# loop: 20,000 pwrite(2)s of 4 KiB over a 16 MiB file (overwrites, no
# fsync). Prints writes per second per round and the ratio of the medians;
# on a shared machine read the ratio, not the rates.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${1:-5cc1cbb}
ROUNDS=${ROUNDS:-3}
DIR=${DIR:-$(mktemp -d /tmp/fuse-xattr.XXXXXX)}
mkdir -p "$DIR/mnt" "$DIR/base"
go build -o "$DIR/ustore" ./cmd/ustore
git archive "$BASE" | tar -x -C "$DIR/base"
(cd "$DIR/base" && go build -o "$DIR/ustore-base" ./cmd/ustore)
"$DIR/ustore" serve --device "$DIR/d.img" --size 1G --socket "$DIR/s.sock" 2>"$DIR/serve.log" &
SERVE=$!
MOUNT=
trap 'mountpoint -q "$DIR/mnt" && "$DIR/ustore" umount "$DIR/mnt"; [ -n "$MOUNT" ] && wait $MOUNT; kill $SERVE; wait $SERVE || true' EXIT
until [ -S "$DIR/s.sock" ]; do sleep 0.1; done

loop() {
	python3 - "$DIR/mnt/f" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
buf = b"x" * 4096
n = 20000
t = time.perf_counter()
for i in range(n):
    os.pwrite(fd, buf, (i % 4096) * 4096)
el = time.perf_counter() - t
os.close(fd)
print(round(n / el))
PY
}

run() {
	"$1" mount --socket "$DIR/s.sock" "$DIR/mnt" 2>>"$DIR/mount.log" &
	MOUNT=$!
	until mountpoint -q "$DIR/mnt"; do sleep 0.05; done
	loop
	"$DIR/ustore" umount "$DIR/mnt"
	wait $MOUNT
	MOUNT=
}

before=() after=()
for r in $(seq "$ROUNDS"); do
	b=$(run "$DIR/ustore-base"); a=$(run "$DIR/ustore")
	before+=("$b"); after+=("$a")
	printf 'round %d: without xattrs %7d writes/s, with xattrs %7d writes/s\n' "$r" "$b" "$a"
done
python3 - "${before[*]}" "${after[*]}" <<'PY'
import statistics, sys
b = statistics.median(map(int, sys.argv[1].split()))
a = statistics.median(map(int, sys.argv[2].split()))
print(f"median: without {b:.0f} writes/s, with {a:.0f} writes/s; with/without = {a / b:.2f}")
PY
