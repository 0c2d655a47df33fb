package ebpf

import (
	"go.opentelemetry.io/otel/attribute"

	"ustore/lock"
)

// waitAttributes are the attributes of a lock.wait span event: what a
// reader of a slow request's trace needs to find the lock.
func waitAttributes(ev WaitEvent) []attribute.KeyValue {
	_, tree, level, write := lock.KindFields(ev.Kind)
	return []attribute.KeyValue{
		attribute.String("ustore.lock.class", className(ev.Kind)),
		attribute.String("ustore.lock.mode", modeName(write)),
		attribute.Int64("ustore.lock.tree", int64(tree)),
		attribute.Int("ustore.lock.level", level),
		attribute.Int64("ustore.lock.id", int64(ev.LockID)),
		attribute.Float64("ustore.lock.wait_ms", float64(ev.Wait.Microseconds())/1000),
	}
}

// className is the Go-side class name of a kind ("fs.level0",
// "log_mutex"), or "kind_<hex>" for a kind no class in this process has.
func className(kind uint32) string {
	if n := lock.KindName(kind); n != "" {
		return n
	}
	return "kind_" + hex32(kind&^lock.KindWrite)
}

func modeName(write bool) string {
	if write {
		return "write"
	}
	return "read"
}

func hex32(v uint32) string {
	const digits = "0123456789abcdef"
	var b [8]byte
	for i := 7; i >= 0; i-- {
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b[:])
}
