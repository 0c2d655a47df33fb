#include "textflag.h"

// The marker bodies: a 5-byte NOP (nopl 0x0(%rax,%rax,1)), which Linux turns
// into a cheap trampoline call when a uprobe sits on it, then RET. ABI0,
// NOSPLIT|NOFRAME: no prologue, so the NOP is the first instruction and the
// arguments are at 8(SP) when the probe fires. The frame sizes ($0-32,
// $0-16) are checked against markers.go by go vet (asmdecl).

// func LockWaitBegin(id, token uint64, kind uint32, span uint64)
TEXT ·LockWaitBegin(SB), NOSPLIT|NOFRAME, $0-32
	BYTE $0x0f; BYTE $0x1f; BYTE $0x44; BYTE $0x00; BYTE $0x00
	RET

// func LockWaitEnds(ends *WaitEnd, n int)
TEXT ·LockWaitEnds(SB), NOSPLIT|NOFRAME, $0-16
	BYTE $0x0f; BYTE $0x1f; BYTE $0x44; BYTE $0x00; BYTE $0x00
	RET

// The bodies' addresses for MarkerPCs. From assembly, ·LockWaitBegin(SB)
// names the ABI0 body itself; a Go func value would name the ABIInternal
// wrapper instead.
DATA ·lockWaitBeginPC+0(SB)/8, $·LockWaitBegin(SB)
GLOBL ·lockWaitBeginPC(SB), RODATA|NOPTR, $8
DATA ·lockWaitEndsPC+0(SB)/8, $·LockWaitEnds(SB)
GLOBL ·lockWaitEndsPC(SB), RODATA|NOPTR, $8

// func PhaseBegin(id uint64, phase uint32, span uint64)
TEXT ·PhaseBegin(SB), NOSPLIT|NOFRAME, $0-24
	BYTE $0x0f; BYTE $0x1f; BYTE $0x44; BYTE $0x00; BYTE $0x00
	RET

// func PhaseEnd(id uint64, phase uint32)
TEXT ·PhaseEnd(SB), NOSPLIT|NOFRAME, $0-12
	BYTE $0x0f; BYTE $0x1f; BYTE $0x44; BYTE $0x00; BYTE $0x00
	RET

DATA ·phaseBeginPC+0(SB)/8, $·PhaseBegin(SB)
GLOBL ·phaseBeginPC(SB), RODATA|NOPTR, $8
DATA ·phaseEndPC+0(SB)/8, $·PhaseEnd(SB)
GLOBL ·phaseEndPC(SB), RODATA|NOPTR, $8
