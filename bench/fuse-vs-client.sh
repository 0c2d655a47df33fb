#!/usr/bin/env bash
# fuse-vs-client.sh — what the FUSE mount costs over the Go client: the same
# server, the same 4 KiB ops, once through `ustore bench service` (the Go
# client over the socket) and once through fio (and a stat loop) on
# `ustore mount`.
#
# Usage: bench/fuse-vs-client.sh     (as root, with /dev/fuse and fio)
#
# Go client: ustore bench service --socket S --systems service --op
#   read,stat,write --clients 1,8 --depth 1 (one request in flight per client)
# Mount (defaults, but --attr-timeout 0 for the stat loop so that each stat
#   is a request): fio --direct=1 --ioengine=psync --bs=4k --numjobs 1 and 8,
#   randread and randwrite on 4 MiB files (O_DIRECT: every 4 KiB is one FUSE
#   request and one store request, no page cache), time_based 3 s; stat: a
#   Python loop of stat(2) on one file for 2 s, 1 process.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o ustore ./cmd/ustore
DIR=${DIR:-$(mktemp -d /tmp/fuse-vs-client.XXXXXX)}
mkdir -p "$DIR/mnt"
./ustore serve --device "$DIR/d.img" --size 2G --socket "$DIR/s.sock" 2>"$DIR/serve.log" &
SERVE=$!
trap 'mountpoint -q "$DIR/mnt" && ./ustore umount "$DIR/mnt"; kill $SERVE; wait $SERVE || true' EXIT
until [ -S "$DIR/s.sock" ]; do sleep 0.1; done

echo "== Go client (ustore bench service)"
./ustore bench service --socket "$DIR/s.sock" --systems service --op read,stat,write --clients 1,8 --depth 1 \
	--duration 3s --progress never

echo "== FUSE mount"
./ustore mount --socket "$DIR/s.sock" "$DIR/mnt" --attr-timeout 0 2>>"$DIR/mount.log" &
MOUNT=$!
until mountpoint -q "$DIR/mnt"; do sleep 0.05; done
for rw in randread randwrite; do
	for jobs in 1 8; do
		fio --output-format=json --name=$rw --directory="$DIR/mnt" --rw=$rw --bs=4k --size=4m --numjobs=$jobs \
			--direct=1 --ioengine=psync --time_based --runtime=3 --group_reporting |
			python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
d = j["read"] if j["read"]["io_bytes"] else j["write"]
c = d["clat_ns"]["percentile"]
print("%s jobs=%s %10.0f IOPS  p50 %7.1f us  p99 %7.1f us" % (sys.argv[1], sys.argv[2], d["iops"], c["50.000000"] / 1e3, c["99.000000"] / 1e3))
' $rw $jobs
	done
done
python3 - "$DIR/mnt" <<'PY'
import os, sys, time
p = f"{sys.argv[1]}/randread.0.0"
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < 2:
    for _ in range(100):
        os.stat(p)
    n += 100
dt = time.perf_counter() - t0
print(f"stat jobs=1 {n/dt:10.0f} ops/s  mean {dt/n*1e6:7.1f} us")
PY
./ustore umount "$DIR/mnt"
wait $MOUNT
