#!/usr/bin/env bash
# bench/read-cache.sh — what the page cache (store/page_cache.go) is worth,
# peers in one run, each ustore server in its own process:
#
#   service read   `ustore bench service --op read,stat --clients 1 --depth 1
#                  --systems service,echo` against each server: the served
#                  4 KiB read in echo round trips, cached and not
#   committed-check randrw  `ustore bench committed-check --rw randrw`
#                  (half 4 KiB overwrites, half reads; 10 clients × 10 in
#                  flight) against each server and ext4 on a loop device
#
# The servers: USTORE (this tree: reads cached), the same with
# --cache-size 1M (too small to keep the files: reads mostly reach the
# device), and BASE when set (a build without the page cache). Run as root
# (the loop device). REPS rounds alternate the targets.
#
#   USTORE=bin/ustore BASE=/tmp/ustore-base DURATION=5s REPS=2 bench/read-cache.sh
set -euo pipefail

DURATION=${DURATION:-5s}
REPS=${REPS:-2}
CC_FILE_SIZE=${CC_FILE_SIZE:-512M}
IMG_SIZE=${IMG_SIZE:-2G}
OUT=${OUT:-bench/out/read-cache-$(date -u +%Y%m%d-%H%M)}
DATA=${DATA:-ustore-data/read-cache-bench}
USTORE=${USTORE:-}
BASE=${BASE:-}

mkdir -p "$OUT" "$DATA"
if [[ -z "$USTORE" ]]; then
	USTORE=$OUT/ustore
	go build -o "$USTORE" ./cmd/ustore
fi
MNT=$DATA/mnt
mkdir -p "$MNT"

PIDS=()
start_server() { # name, binary, flags...
	local name=$1 bin=$2
	shift 2
	local img=$DATA/$name.img sock=$DATA/$name.sock
	rm -f "$img" "$sock"
	"$bin" mkfs --size "$IMG_SIZE" "$img" >/dev/null
	"$bin" serve --device "$img" --socket "$sock" --log-level warn "$@" 2>"$OUT/$name.log" &
	PIDS+=($!)
	for _ in $(seq 100); do [[ -S $sock ]] && return; sleep 0.1; done
	echo "server $name did not start" >&2
	exit 1
}
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait || true
	umount "$MNT" 2>/dev/null || true
	[[ -n ${LOOP:-} ]] && losetup -d "$LOOP" 2>/dev/null || true
	rm -f "$DATA"/*.img
}
trap cleanup EXIT

SERVERS="cached uncached"
start_server cached "$USTORE"
start_server uncached "$USTORE" --cache-size 1M
if [[ -n "$BASE" ]]; then
	start_server base "$BASE"
	SERVERS="$SERVERS base"
fi
truncate -s "$IMG_SIZE" "$DATA/k.img"
LOOP=$(losetup --direct-io=on -f --show "$DATA/k.img")
mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$LOOP"
mount "$LOOP" "$MNT"

for rep in $(seq "$REPS"); do
	for s in $SERVERS; do
		"$USTORE" bench service --socket "$DATA/$s.sock" --op read,stat --clients 1 --depth 1 \
			--systems service,echo --duration "$DURATION" --progress never --json >"$OUT/service-$s-$rep.json"
	done
	for s in $SERVERS; do
		"$USTORE" bench committed-check --socket "$DATA/$s.sock" --rw randrw --file-size "$CC_FILE_SIZE" \
			--duration "$DURATION" --label "$s" --progress never --json >"$OUT/cc-$s-$rep.json"
	done
	"$USTORE" bench committed-check --dir "$MNT" --rw randrw --file-size "$CC_FILE_SIZE" \
		--duration "$DURATION" --label ext4 --progress never --json >"$OUT/cc-ext4-$rep.json"
done
echo "results in $OUT"
