//go:build !amd64

package trace

// goroutineKey returns 0 here: span binding is an amd64 feature, like the
// markers it serves (BindSpan does nothing).
func goroutineKey() uintptr { return 0 }
