/* Hand-written kernel types for ustore's BPF programs, instead of a 2.8 MB
 * vmlinux.h. The integer types and BPF constants are UAPI; struct pt_regs
 * is the x86-64 ABI; the kernel structs are declared with only the fields
 * read, and preserve_access_index makes clang emit CO-RE relocations that
 * cilium/ebpf resolves against the running kernel's BTF at load time, so
 * their real layout may differ. */
#ifndef USTORE_BPF_H
#define USTORE_BPF_H

typedef unsigned char __u8;
typedef signed char __s8;
typedef unsigned short __u16;
typedef short __s16;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned long long __u64;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
};

/* x86-64 struct pt_regs (arch/x86/include/asm/ptrace.h). */
struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};

struct io_ring_ctx;

struct io_uring_cqe {
	__u64 user_data;
	__s32 res;
	__u32 flags;
} __attribute__((preserve_access_index));

struct io_cqe {
	__u64 user_data;
} __attribute__((preserve_access_index));

struct io_kiocb {
	struct io_ring_ctx *ctx;
	__u8 opcode;
	struct io_cqe cqe;
} __attribute__((preserve_access_index));

/* sched_switch reads only the thread ids. */
struct task_struct {
	int pid;
} __attribute__((preserve_access_index));

#endif
