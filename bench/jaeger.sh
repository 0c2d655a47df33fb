# jaeger.sh — sourced by the bench scripts that run a Jaeger of their own
# (bin/jaeger, built by `make jaeger`): in-memory storage, everything on
# 127.0.0.1, no self-tracing.
#
#   otel_unset         prints env's -u flags for every OTEL_* variable of this
#                      shell: `env $(otel_unset) CMD &` runs CMD without them
#                      (env execs CMD, so $! is CMD's pid)
#   start_jaeger DIR OTLP_GRPC OTLP_HTTP QUERY_GRPC QUERY_HTTP HEALTH [UI_DIR]
#                      writes DIR/jaeger.yaml, starts Jaeger (log DIR/jaeger.log),
#                      appends its pid to the caller's pids array, sets
#                      jaeger_pid, and waits until it answers; UI_DIR is the
#                      UI's assets (a module-built Jaeger has none of its own)

otel_unset() {
	env | sed -n 's/^\(OTEL_[^=]*\)=.*/-u \1/p'
}

start_jaeger() {
	local dir=$1 otlp_grpc=$2 otlp_http=$3 query_grpc=$4 query_http=$5 health=$6 ui=${7:-}
	local ui_block=""
	[ -n "$ui" ] && ui_block="    ui:
      assets_path: $ui
"
	cat >"$dir/jaeger.yaml" <<EOT
service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    resource:
      service.name: jaeger
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    enable_tracing: false
${ui_block}    http:
      endpoint: 127.0.0.1:$query_http
    grpc:
      endpoint: 127.0.0.1:$query_grpc
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:$health
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:$otlp_grpc
      http:
        endpoint: 127.0.0.1:$otlp_http
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
EOT
	env $(otel_unset) bin/jaeger --config "file:$dir/jaeger.yaml" >"$dir/jaeger.log" 2>&1 &
	jaeger_pid=$!
	pids+=("$jaeger_pid")
	local i
	for i in $(seq 100); do
		curl -sf "http://127.0.0.1:$health/status" >/dev/null &&
			curl -sf "http://127.0.0.1:$query_http/api/services" >/dev/null && return 0
		sleep 0.1
	done
	cat "$dir/jaeger.log" >&2
	echo "$(basename "$0"): Jaeger did not start" >&2
	return 1
}
