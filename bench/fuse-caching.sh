#!/usr/bin/env bash
# fuse-caching.sh — what `ustore mount`'s kernel caching choices buy, and
# what they cost, on one server: each mount setting runs the same loops.
#
# Usage: bench/fuse-caching.sh            (as root, with /dev/fuse and fio)
#
#   stat     5 passes of stat(2) over 2000 files (a build's or git status's
#            pattern): stats per second
#   create   2000 small files written and closed: files per second
#   write    fio: 64 MiB sequential buffered 4 KiB writes, then fsync: MB/s
#   randw4   fio: 4 jobs x 16 MiB random 4 KiB writes, psync: IOPS
#   reread   a 16 MiB file opened, read whole and closed 20 times: MB/s
#
# Settings: default (attr and entry timeouts 1s, no writeback cache, no
# keep-cache, 4 connections), timeouts 0, --writeback-cache, --keep-cache,
# --conns 1. The server runs on a 2 GiB file in $DIR (default: a new
# directory under /tmp), and is the same for every setting. Figures vary
# with the machine: compare within one run.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o ustore ./cmd/ustore
DIR=${DIR:-$(mktemp -d /tmp/fuse-caching.XXXXXX)}
mkdir -p "$DIR/mnt"
./ustore serve --device "$DIR/d.img" --size 2G --socket "$DIR/s.sock" 2>"$DIR/serve.log" &
SERVE=$!
trap 'mountpoint -q "$DIR/mnt" && ./ustore umount "$DIR/mnt"; kill $SERVE; wait $SERVE || true' EXIT
until [ -S "$DIR/s.sock" ]; do sleep 0.1; done

mnt() { ./ustore mount --socket "$DIR/s.sock" "$DIR/mnt" "$@" 2>>"$DIR/mount.log" & MOUNT=$!; until mountpoint -q "$DIR/mnt"; do sleep 0.05; done; }
umnt() { ./ustore umount "$DIR/mnt"; wait $MOUNT; }

# The files the read-only loops use, made once.
mnt
python3 - "$DIR/mnt" <<'PY'
import os, sys
root = sys.argv[1]
os.makedirs(f"{root}/tree", exist_ok=True)
for i in range(2000):
    d = f"{root}/tree/d{i % 20}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/f{i}", "wb") as f:
        f.write(b"x" * 100)
with open(f"{root}/big", "wb") as f:
    f.write(os.urandom(16 << 20))
PY
umnt

loops() {
	python3 - "$DIR/mnt" <<'PY'
import os, sys, time
root = sys.argv[1]
paths = [f"{root}/tree/d{i % 20}/f{i}" for i in range(2000)]
t = time.perf_counter()
for _ in range(5):
    for p in paths:
        os.stat(p)
stat = 5 * len(paths) / (time.perf_counter() - t)
os.makedirs(f"{root}/new", exist_ok=True)
t = time.perf_counter()
for i in range(2000):
    with open(f"{root}/new/f{i}", "wb") as f:
        f.write(b"y" * 100)
create = 2000 / (time.perf_counter() - t)
for i in range(2000):
    os.unlink(f"{root}/new/f{i}")
t = time.perf_counter()
n = 0
for _ in range(20):
    with open(f"{root}/big", "rb") as f:
        n += len(f.read())
reread = n / (time.perf_counter() - t) / 1e6
print(f"{stat:9.0f} {create:9.0f}", end=" ")
print(f"{reread:9.0f}", file=open("/dev/fd/3", "w"))
PY
}

fio_mbps() { fio --output-format=json "$@" | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["write"]; print(round(j["bw_bytes"]/1e6), round(j["iops"]))'; }

printf '%-22s %9s %9s %9s %9s %9s\n' setting stat/s create/s write_MB/s randw4_IOPS reread_MB/s
run() {
	local name=$1; shift
	mnt "$@"
	local sc; sc=$(loops 3>"$DIR/reread")
	local w; w=$(fio_mbps --name=w --directory="$DIR/mnt" --rw=write --bs=4k --size=64m --end_fsync=1 --ioengine=psync | cut -d' ' -f1)
	local r; r=$(fio --output-format=json --name=r --directory="$DIR/mnt" --rw=randwrite --bs=4k --size=16m --numjobs=4 --ioengine=psync --group_reporting | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["write"]["iops"]))')
	rm -f "$DIR"/mnt/w.* "$DIR"/mnt/r.*
	printf '%-22s %s %9s %11s %9s\n' "$name" "$sc" "$w" "$r" "$(cat "$DIR/reread")"
	umnt
}
run default
run "timeouts 0" --attr-timeout 0 --entry-timeout 0
run --writeback-cache --writeback-cache
run --keep-cache --keep-cache
run "--conns 1" --conns 1
