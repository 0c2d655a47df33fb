#!/usr/bin/env bash
# jaeger-screenshot.sh — a real ustore trace, stored in Jaeger, photographed
# by headless Chromium: redoes docs/img/jaeger-trace.png.
#
# Usage: bench/jaeger-screenshot.sh [OUT.png]       (default docs/img/jaeger-trace.png)
#        LOCKWAIT=1 bench/jaeger-screenshot.sh      (as root; default docs/img/jaeger-lockwait.png)
#
# LOCKWAIT=1 photographs a request that waited on a lock instead: serve runs
# with --ebpf on --ebpf-wait-threshold $THRESHOLD (default 300us), step 3 is
# `ustore bench fsync-randwrite --jobs 8 --duration 3s` (server-side spans
# only), and the trace shown is the one whose lock.wait event (or child
# span) waited longest, found through Jaeger's API with jq.
#
# Steps, everything on 127.0.0.1 and in a temporary directory:
#   1. bin/jaeger (`make jaeger` when missing) with a config of this script:
#      OTLP on 4317/4318, the query service and UI on 16686, health on 13133,
#      in-memory storage, self-tracing off. `make jaeger` builds Jaeger from
#      the Go module, which embeds no UI (only a placeholder page), so the UI
#      it serves is UI_ASSETS: by default bench/jaegershot/ui, a one-page
#      trace view over Jaeger's query API; point UI_ASSETS at a build of the
#      real Jaeger UI (a directory with its index.html and static/) to have
#      that one photographed instead.
#   2. ustore serve --otlp-endpoint 127.0.0.1:4318 --commit-interval 5m on a
#      fresh 256M data file (the binary built from this tree).
#   3. go run ./bench/jaegershot: a client span "client.work" (service
#      ustore-client) over create, write 64 KiB, fsync, create, write 4 KiB,
#      sync; it prints the trace ID.
#   4. SIGTERM to serve (its exporter flushes as it exits), wait until Jaeger
#      has the whole trace (21 spans), then
#      chromium --headless --screenshot=OUT --window-size=$WIDTH,$HEIGHT
#               --virtual-time-budget=10000 http://127.0.0.1:16686/trace/<id>
#
# Needs: Go, curl, and Chromium (Debian: chromium-headless-shell or chromium;
# installed with apt-get when missing and running as root).
# Environment: UI_ASSETS, WIDTH (1600), HEIGHT (1000), KEEP=1 (leave Jaeger
# running on 16686 afterwards, to look around; stop it with the printed kill).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
lockwait=${LOCKWAIT:-}
if [ -n "$lockwait" ]; then
	out=${1:-docs/img/jaeger-lockwait.png}
else
	out=${1:-docs/img/jaeger-trace.png}
fi
ui=${UI_ASSETS:-$root/bench/jaegershot/ui}
width=${WIDTH:-1600}
height=${HEIGHT:-1000}

browser=$(command -v chromium-headless-shell || command -v chromium || true)
if [ -z "$browser" ]; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null
		browser=$(command -v chromium-headless-shell)
	else
		echo "jaeger-screenshot: install Chromium (apt-get install chromium-headless-shell)" >&2
		exit 1
	fi
fi
[ -x bin/jaeger ] || make jaeger

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

for port in 4317 4318 13133 16685 16686; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "jaeger-screenshot: 127.0.0.1:$port is taken (another Jaeger?)" >&2
		exit 1
	fi
done

. bench/jaeger.sh # the scripts run from the repository root
start_jaeger "$tmp" 4317 4318 16685 16686 13133 "$ui"

go build -o "$tmp/ustore" ./cmd/ustore
go build -o "$tmp/jaegershot" ./bench/jaegershot
serve_flags=()
[ -n "$lockwait" ] && serve_flags=(--ebpf on --ebpf-wait-threshold "${THRESHOLD:-300us}" --trace-sample-ratio 1) # every request traced: the bench sends no traceparent
OTEL_SDK_DISABLED= OTEL_EXPORTER_OTLP_ENDPOINT= "$tmp/ustore" serve --device "$tmp/d.img" --size 256M --socket "$tmp/s.sock" \
	--otlp-endpoint 127.0.0.1:4318 --commit-interval 5m "${serve_flags[@]}" 2>"$tmp/serve.log" &
serve_pid=$!
pids+=("$serve_pid")
for i in $(seq 300); do
	[ -S "$tmp/s.sock" ] && break
	[ "$i" = 300 ] && { cat "$tmp/serve.log" >&2; echo "jaeger-screenshot: serve did not start" >&2; exit 1; }
	sleep 0.1
done

if [ -n "$lockwait" ]; then
	"$tmp/ustore" bench fsync-randwrite --socket "$tmp/s.sock" --jobs 8 --duration 3s --file-size 8M --progress never >"$tmp/bench.txt"
	kill -TERM "$serve_pid"
	wait "$serve_pid" || { cat "$tmp/serve.log" >&2; echo "jaeger-screenshot: serve failed" >&2; exit 1; }
	# The trace whose lock.wait (an event of the request span, or a child
	# span when the request had ended first) waited longest.
	sleep 2
	trace_id=$(curl -sf "http://127.0.0.1:16686/api/traces?service=ustore&limit=5000&lookback=1h" | jq -r '
		[.data[] | .traceID as $t | .spans[] |
			((.logs // [])[] | select(any(.fields[]; .key == "event" and .value == "lock.wait")) | .fields),
			(select(.operationName == "lock.wait") | .tags)
		 | {t: $t, ms: (map(select(.key == "ustore.lock.wait_ms"))[0].value // 0)}]
		| sort_by(.ms) | last | .t // empty')
	[ -n "$trace_id" ] || { echo "jaeger-screenshot: no lock.wait in Jaeger (raise the load or lower THRESHOLD)" >&2; exit 1; }
	echo "trace $trace_id"
else
	trace_id=$(OTEL_SDK_DISABLED= "$tmp/jaegershot" --socket "$tmp/s.sock" --otlp-endpoint 127.0.0.1:4318)
	kill -TERM "$serve_pid"
	wait "$serve_pid" || { cat "$tmp/serve.log" >&2; echo "jaeger-screenshot: serve failed" >&2; exit 1; }
	echo "trace $trace_id"

	spans=0
	for i in $(seq 100); do
		spans=$(curl -sf "http://127.0.0.1:16686/api/traces/$trace_id" | grep -o '"operationName"' | wc -l || true)
		[ "$spans" -ge 21 ] && break
		sleep 0.1
	done
	echo "Jaeger has $spans spans of it"
fi

mkdir -p "$(dirname "$out")"
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$width,$height" \
	--virtual-time-budget=10000 --screenshot="$out" "http://127.0.0.1:16686/trace/$trace_id" 2>"$tmp/chromium.log" ||
	{ cat "$tmp/chromium.log" >&2; exit 1; }
echo "wrote $out (http://127.0.0.1:16686/trace/$trace_id)"

if [ "${KEEP:-}" = 1 ]; then
	pids=("${pids[@]/$jaeger_pid/}")
	trap - EXIT
	rm -rf "$tmp/d.img"
	echo "Jaeger keeps running: http://127.0.0.1:16686/trace/$trace_id — stop it with: kill $jaeger_pid"
fi
