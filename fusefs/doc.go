// Package fusefs is `ustore mount`: the store as a POSIX filesystem
// through FUSE (github.com/hanwen/go-fuse/v2), so that programs that know
// nothing of ustore — cp, tar, git, fio — use it as a directory. It is a
// client of the server over its Unix socket like the CLI, so the server
// stays the one owner of the device, and any user the server allows can
// mount.
//
//	program ─► kernel VFS ─► /dev/fuse ─► go-fuse ─► node (this package)
//	                                                   │ one request per op,
//	                                                   ▼ round robin over conns
//	                                           client ═══► server ─► store
//
// Each FUSE operation is one store request (a write or read of up to
// 1 MiB, maxWrite, is one request too); a node holds nothing but its
// inode number, and the kernel caches what the mount allows (below).
//
// Files, by concept: mount.go (New, Unmount, the mount point's checks),
// fs.go (the connections, attributes), node.go (the namespace: lookup,
// getattr, setattr, mkdir, create, unlink, rmdir, rename and renameat2,
// link, statfs), node_symlink.go (symlink, readlink: the kernel follows
// links, the store does not), node_io.go (open, read, write, fsync,
// fallocate, flush, release), dir_handle.go (readdir), open_files.go (the
// server handles of open files), xattr.go (extended attributes: user.* by
// the store, other namespaces answered here), unsupported.go (what the
// store lacks, and the errno each gets),
// errors.go, limits.go.
//
// # Kernel caching
//
// The kernel trusts attributes for AttrTimeout and names (found or
// missing) for EntryTimeout, 1 s each by default: a stat-heavy program
// asks the server once per second per file instead of at every call.
// Changes through this mount are seen at once (the kernel updates its
// cache from each reply); changes by other clients (the CLI, another
// mount) show up within the timeout — the NFS-like trade. With 0 every
// stat and path walk is a request.
//
// Pages: without KeepCache the kernel drops a file's cached pages at each
// open, so an open sees what other clients wrote before it (close-to-open
// consistency); with it (FOPEN_KEEP_CACHE) a reopened file is read from
// memory, and another client's writes may stay unseen. Without
// WritebackCache every write(2) is a request before it returns (a write
// error is the program's at once, the server's dirty-data budget bounds
// what is buffered); with it the kernel gathers writes into large ones and
// sends them at fsync, close or under memory pressure, and owns the file's
// size and mtime meanwhile (other clients see the data late; an error
// shows at fsync or close). Both are off by default: correct for several
// clients first. docs/FUSE.md has the figures.
//
// # Invariants
//
//  1. Every errno a program sees is the one a Linux filesystem gives for
//     the same call, or, for what the store lacks, the one a Linux
//     filesystem without the feature gives (TestMount_POSIX compares
//     transcripts with the kernel's own filesystem; TestMount_Unsupported).
//  2. A file open through the mount stays readable and writable until its
//     last release, even when its last name is unlinked or renamed over
//     meanwhile, by this mount or any other client: the mount holds one
//     server handle per open inode, on its first connection, released at
//     the last release (open_files.go; TestMount_RenameAtomic,
//     TestMount_POSIX/unlink_while_open), and the store frees the file
//     then (TestMount_UnlinkedOpen_Freed). A name renamed over never fails
//     an open: the old inode is held until the kernel forgets it
//     (TestMount_RenamedOver_Freed).
//  3. A directory listing resumed at any offset the kernel was given sees
//     every entry that existed throughout exactly once: offsets are the
//     store's cookies (dir_handle.go; TestMount_ReaddirConcurrent).
//  4. A request about an inode that is gone answers ESTALE, never a
//     different inode's data: the kernel then looks the name up again
//     (errnoOfIno).
package fusefs
