package jaegertest

import (
	"net/http"
	"time"
)

// Running is a Jaeger this package did not start — one a README block
// started on its documented ports (internal/readmetest) — for the query
// methods only (Traces, WaitTrace); queryHTTP is its query API's
// host:port.
func Running(queryHTTP string) *Jaeger {
	return &Jaeger{queryHTTP: queryHTTP, client: &http.Client{Timeout: 10 * time.Second}}
}
