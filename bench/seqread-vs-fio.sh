#!/usr/bin/env bash
# bench/seqread-vs-fio.sh — a sequential 1 MiB reader of one file, ustore
# against fio on the same disk, alternated, each ustore server in its own
# process as users run it:
#
#   ustore  `ustore serve` on a device file (io_uring, O_DIRECT), restarted
#           before each read so that nothing of the file is in its page
#           cache; `ustore bench seqread` reads the file front to back with
#           the client's Reader (8 reads of 1 MiB in flight)
#   base    the same with BASE, another build (a before), when set
#   fio     `fio --ioengine=io_uring --direct=1 --bs=1M --iodepth=8
#           --rw=read` over a file of the same size on the same filesystem
#
# Each repetition drops the kernel's caches first (`echo 3 >
# /proc/sys/vm/drop_caches`, as root) and rotates the order. Both files are
# written in full before the first run (ustore's through its client,
# durable; fio's by a sequential O_DIRECT fio job). PROFILE=1 also takes a
# CPU profile of the server during each of its reads (serve --pprof), and a
# `perf stat` of it when perf is installed.
#
#   SIZE=4G REPS=3 BASE=/tmp/ustore-main bench/seqread-vs-fio.sh
set -euo pipefail

SIZE=${SIZE:-4G}
IMG_SIZE=${IMG_SIZE:-6G}
REPS=${REPS:-3}
USTORE=${USTORE:-}
BASE=${BASE:-}
PROFILE=${PROFILE:-0}
SERVE_FLAGS=${SERVE_FLAGS:-}
DATA=${DATA:-ustore-data/seqread-bench}
OUT=${OUT:-bench/out/seqread-vs-fio-$(date -u +%Y%m%d-%H%M%S)}
METRICS=${METRICS:-127.0.0.1:19464}

mkdir -p "$OUT" "$DATA"
if [[ -z "$USTORE" ]]; then
	USTORE=$OUT/ustore
	go build -o "$USTORE" ./cmd/ustore
fi
IMG=$DATA/ustore.img
SOCK=$DATA/ustore.sock
FIO_FILE=$DATA/fio.img

SERVER=
stop_server() {
	if [[ -n "$SERVER" ]]; then
		kill -TERM "$SERVER" 2>/dev/null || true
		wait "$SERVER" || true
		SERVER=
	fi
}
cleanup() { stop_server; }
trap cleanup EXIT

start_server() { # binary, log
	rm -f "$SOCK"
	# shellcheck disable=SC2086
	"$1" serve --device "$IMG" --socket "$SOCK" --log-level warn --metrics-addr "$METRICS" --pprof $SERVE_FLAGS 2>>"$2" &
	SERVER=$!
	for _ in $(seq 300); do [[ -S $SOCK ]] && return; sleep 0.1; done
	echo "server $1 did not start" >&2
	exit 1
}

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }

# The files, once.
if [[ ! -f "$IMG" ]]; then
	"$USTORE" mkfs --size "$IMG_SIZE" "$IMG" >/dev/null
fi
start_server "$USTORE" "$OUT/layout.log"
"$USTORE" bench seqread --socket "$SOCK" --size "$SIZE" --layout-only
stop_server
if [[ ! -f "$FIO_FILE" ]] || [[ $(stat -c %s "$FIO_FILE") -ne $(numfmt --from=iec "$SIZE") ]]; then
	fio --name=layout --filename="$FIO_FILE" --ioengine=io_uring --direct=1 --bs=1M --iodepth=8 \
		--rw=write --size="$SIZE" --end_fsync=1 --output=/dev/null
fi

run_fio() { # rep
	drop_caches
	fio --name=seqread --filename="$FIO_FILE" --ioengine=io_uring --direct=1 --bs=1M --iodepth=8 \
		--rw=read --size="$SIZE" --output-format=json --output="$OUT/fio-$1.json"
}
run_ustore() { # name, binary, rep
	drop_caches
	start_server "$2" "$OUT/$1-$3.log"
	local prof=
	if [[ $PROFILE == 1 ]]; then
		curl -s -o "$OUT/$1-$3.cpu.prof" "http://$METRICS/debug/pprof/profile?seconds=4" &
		prof=$!
		if command -v perf >/dev/null; then
			perf stat -p "$SERVER" -o "$OUT/$1-$3.perf-stat.txt" -- sleep 4 &
		fi
	fi
	"$USTORE" bench seqread --socket "$SOCK" --size "$SIZE" --json >"$OUT/$1-$3.json"
	[[ -n "$prof" ]] && wait "$prof" || true
	curl -s "http://$METRICS/metrics" | grep -E '^ustore_store_cache_(read|page|scan)' >"$OUT/$1-$3.metrics" || true
	stop_server
}

for rep in $(seq "$REPS"); do
	order="fio ustore"
	[[ -n "$BASE" ]] && order="fio ustore base"
	if ((rep % 2 == 0)); then order=$(echo "$order" | tr ' ' '\n' | tac | tr '\n' ' '); fi
	for t in $order; do
		case $t in
		fio) run_fio "$rep" ;;
		ustore) run_ustore ustore "$USTORE" "$rep" ;;
		base) run_ustore base "$BASE" "$rep" ;;
		esac
	done
done

python3 - "$OUT" "$REPS" "$([[ -n $BASE ]] && echo 1 || echo 0)" <<'PY'
import json, statistics, sys
out, reps, base = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
rows = []
for r in range(1, reps + 1):
    fio = json.load(open(f"{out}/fio-{r}.json"))["jobs"][0]["read"]["bw_bytes"] / 1e6
    us = json.load(open(f"{out}/ustore-{r}.json"))[0]["mb_per_s"]
    b = json.load(open(f"{out}/base-{r}.json"))[0]["mb_per_s"] if base else None
    rows.append((r, fio, us, b))
print("rep  fio MB/s  ustore MB/s  ustore/fio" + ("  base MB/s  base/fio" if base else ""))
for r, fio, us, b in rows:
    line = f"{r:3}  {fio:8.0f}  {us:11.0f}  {us / fio:10.2f}"
    if base:
        line += f"  {b:9.0f}  {b / fio:8.2f}"
    print(line)
med = lambda xs: statistics.median(xs)
line = f"med  {med([x[1] for x in rows]):8.0f}  {med([x[2] for x in rows]):11.0f}  {med([x[2] / x[1] for x in rows]):10.2f}"
if base:
    line += f"  {med([x[3] for x in rows]):9.0f}  {med([x[3] / x[1] for x in rows]):8.2f}"
print(line)
PY
echo "results in $OUT"
