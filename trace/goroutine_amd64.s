#include "textflag.h"

// func goroutineKey() uintptr
//
// The current goroutine's g pointer, from thread-local storage (Go keeps
// it at the TLS slot the assembler's (TLS) pseudo-register names on
// linux/amd64). It is stable for the goroutine's life whatever thread runs
// it, which is what a binding from goroutine to span needs.
TEXT ·goroutineKey(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ (TLS), AX
	MOVQ AX, ret+0(FP)
	RET
