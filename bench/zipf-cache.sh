#!/usr/bin/env bash
# bench/zipf-cache.sh — the page cache's hit ratio and the server's RSS over
# time under a Zipf reader over a data set 10× the cache (issue 12):
#
#   1. `ustore serve --cache-size CACHE --metrics-addr ...` on a fresh
#      device file, in its own process; `ustore bench zipf --layout-only`
#      writes the data set (DATA_BYTES in FILES files) through the client
#   2. the server restarted (a cold cache), then `ustore bench zipf` for
#      DURATION: WORKERS goroutines at Zipf-distributed (S) 4 KiB blocks,
#      WRITE_FRAC of them overwrites, sampling /metrics every second into
#      a CSV
#   3. gnuplot draws the CSV (bench/zipf-cache.gp) into an SVG; PUBLISH=1
#      copies it to docs/img/zipf-cache.svg
#
#   CACHE=256M DATA_BYTES=2560M DURATION=60s bench/zipf-cache.sh
set -euo pipefail

CACHE=${CACHE:-256M}
DATA_BYTES=${DATA_BYTES:-2560M}
FILES=${FILES:-64}
WORKERS=${WORKERS:-4}
WRITE_FRAC=${WRITE_FRAC:-0.05}
S=${S:-1.1}
DURATION=${DURATION:-60s}
IMG_SIZE=${IMG_SIZE:-4G}
USTORE=${USTORE:-}
PUBLISH=${PUBLISH:-0}
SERVE_FLAGS=${SERVE_FLAGS:-}
DATA=${DATA:-ustore-data/zipf-bench}
OUT=${OUT:-bench/out/zipf-cache-$(date -u +%Y%m%d-%H%M%S)}
METRICS=${METRICS:-127.0.0.1:19465}

mkdir -p "$OUT" "$DATA"
if [[ -z "$USTORE" ]]; then
	USTORE=$OUT/ustore
	go build -o "$USTORE" ./cmd/ustore
fi
IMG=$DATA/ustore.img
SOCK=$DATA/ustore.sock

SERVER=
stop_server() {
	if [[ -n "$SERVER" ]]; then
		kill -TERM "$SERVER" 2>/dev/null || true
		wait "$SERVER" || true
		SERVER=
	fi
}
trap stop_server EXIT
start_server() { # log
	rm -f "$SOCK"
	# shellcheck disable=SC2086
	"$USTORE" serve --device "$IMG" --socket "$SOCK" --log-level warn --cache-size "$CACHE" \
		--metrics-addr "$METRICS" $SERVE_FLAGS 2>>"$1" &
	SERVER=$!
	for _ in $(seq 300); do [[ -S $SOCK ]] && return; sleep 0.1; done
	echo "server did not start" >&2
	exit 1
}

rm -f "$IMG"
"$USTORE" mkfs --size "$IMG_SIZE" "$IMG" >/dev/null
start_server "$OUT/serve.log"
"$USTORE" bench zipf --socket "$SOCK" --data "$DATA_BYTES" --files "$FILES" --layout-only
stop_server
start_server "$OUT/serve.log"
"$USTORE" bench zipf --socket "$SOCK" --metrics "$METRICS" --data "$DATA_BYTES" --files "$FILES" \
	--workers "$WORKERS" --write-frac "$WRITE_FRAC" --s "$S" --duration "$DURATION" \
	--csv "$OUT/zipf.csv" --json | tee "$OUT/zipf.json"
stop_server
rm -f "$IMG"

title="cache $CACHE, data set $DATA_BYTES ($FILES files), $WORKERS workers, Zipf s=$S, ${WRITE_FRAC} writes"
gnuplot -e "csv='$OUT/zipf.csv'; out='$OUT/zipf-cache.svg'; ttl='$title'" bench/zipf-cache.gp
if [[ $PUBLISH == 1 ]]; then
	cp "$OUT/zipf-cache.svg" docs/img/zipf-cache.svg
	cp "$OUT/zipf.csv" docs/img/zipf-cache.csv
fi
echo "results in $OUT"
