package trace

// goroutineKey identifies the calling goroutine: its g pointer.
// Implemented in goroutine_amd64.s.
func goroutineKey() uintptr
