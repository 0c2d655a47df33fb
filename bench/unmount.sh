#!/usr/bin/env bash
# bench/unmount.sh — the 2013 btrfs patch "fix very slow inode eviction and
# fs unmount", its benchmark scaled down: FILES files written sequentially
# in BS writes by one writer each (bench/seqwr: sysbench's seqwr), TOTAL
# bytes in all, then a sync, then the unmount, timed:
#
#   ustore          SIGTERM to exit 0 of `ustore serve` (and the store's
#                   Close alone, and its teardown of inodes and cached
#                   blocks, from its "store closed" log line)
#   ustore-ablated  the same with --ablate-teardown-per-range (cached blocks
#                   dropped one by one over each file's size)
#   ext4, btrfs     umount, on a loop device (losetup --direct-io=on) over
#                   an image file beside ustore's
#
# Run as root. Each case gets a fresh filesystem; REPS rounds alternate the
# cases. Results go to OUT (results.txt, one line per run).
#
#   TOTAL=1G FILES=128 BS=16k IMG_SIZE=3G REPS=2 OUT=bench/out/unmount \
#     USTORE=bin/ustore bench/unmount.sh
set -euo pipefail

TOTAL=${TOTAL:-1G}
FILES=${FILES:-128}
BS=${BS:-16k}
IMG_SIZE=${IMG_SIZE:-3G}
REPS=${REPS:-2}
CASES=${CASES:-ustore ustore-ablated ext4 btrfs}
OUT=${OUT:-bench/out/unmount-$(date -u +%Y%m%d-%H%M)}
DATA=${DATA:-ustore-data/unmount-bench}
USTORE=${USTORE:-}
SERVE_FLAGS=${SERVE_FLAGS:-} # for every ustore case, such as --ebpf off

mkdir -p "$OUT" "$DATA"
if [[ -z "$USTORE" ]]; then
	USTORE=$OUT/ustore
	go build -o "$USTORE" ./cmd/ustore
fi
SEQWR=$OUT/seqwr
go build -o "$SEQWR" ./bench/seqwr
MNT=$DATA/mnt
mkdir -p "$MNT"
RESULTS=$OUT/results.txt
: >"$RESULTS"

now() { date +%s.%N; }

run_ustore() { # name, extra serve flags
	local name=$1 flags=$2 img=$DATA/u.img sock=$DATA/u.sock log=$OUT/$1.$3.log
	rm -f "$img" "$sock"
	"$USTORE" mkfs --size "$IMG_SIZE" "$img" >/dev/null
	chmod 600 "$img"
	# shellcheck disable=SC2086
	"$USTORE" serve --device "$img" --socket "$sock" $SERVE_FLAGS $flags 2>"$log" &
	local pid=$!
	for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done
	local w
	w=$("$SEQWR" --socket "$sock" --files "$FILES" --bs "$BS" --total "$TOTAL")
	local t0 t1
	t0=$(now)
	kill -TERM "$pid"
	wait "$pid"
	t1=$(now)
	local close teardown
	close=$(grep -o 'msg="store closed" duration=[^ ]*' "$log" | sed 's/.*duration=//')
	teardown=$(grep -o ' teardown=[^ ]*' "$log" | sed 's/.*teardown=//')
	echo "$name rep=$3 unmount_s=$(echo "$t1 - $t0" | bc) store_close=$close teardown=$teardown $w" | tee -a "$RESULTS"
}

run_kernel() { # fs
	local fs=$1 img=$DATA/k.img
	rm -f "$img"
	truncate -s "$IMG_SIZE" "$img"
	local loop
	loop=$(losetup --direct-io=on -f --show "$img")
	case $fs in
	ext4) mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$loop" ;;
	btrfs) mkfs.btrfs -q -f -K -d single -m single "$loop" ;;
	esac
	mount "$loop" "$MNT"
	local w
	w=$("$SEQWR" --dir "$MNT" --files "$FILES" --bs "$BS" --total "$TOTAL")
	sync
	local t0 t1
	t0=$(now)
	umount "$MNT"
	t1=$(now)
	losetup -d "$loop"
	echo "$fs rep=$2 unmount_s=$(echo "$t1 - $t0" | bc) $w" | tee -a "$RESULTS"
}

for rep in $(seq "$REPS"); do
	for c in $CASES; do
		case $c in
		ustore) run_ustore ustore "" "$rep" ;;
		ustore-ablated) run_ustore ustore-ablated --ablate-teardown-per-range "$rep" ;;
		ext4 | btrfs) run_kernel "$c" "$rep" ;;
		esac
	done
done
rm -f "$DATA/u.img" "$DATA/k.img"
