package ebpf

// The BPF objects and their Go bindings are generated and committed, so a
// build needs no clang; `go generate ./ebpf` (clang-14, llvm-strip-14 and
// libbpf-dev's headers) reproduces them byte for byte, which CI checks.

//go:generate go tool bpf2go -cc clang-14 -strip llvm-strip-14 -target amd64 -type wait_event markers bpf/markers.bpf.c -- -I./bpf -O2 -g -Wall -D__TARGET_ARCH_x86
//go:generate go tool bpf2go -cc clang-14 -strip llvm-strip-14 -target amd64 uring bpf/uring.bpf.c -- -I./bpf -O2 -g -Wall -D__TARGET_ARCH_x86
//go:generate go tool bpf2go -cc clang-14 -strip llvm-strip-14 -target amd64 klock bpf/klock.bpf.c -- -I./bpf -O2 -g -Wall -D__TARGET_ARCH_x86
//go:generate go tool bpf2go -cc clang-14 -strip llvm-strip-14 -target amd64 offcpu bpf/offcpu.bpf.c -- -I./bpf -O2 -g -Wall -D__TARGET_ARCH_x86
