# peers.sh — the pieces the benchmark scripts share, sourced (not run):
# fully written image files, the kernel filesystems on loop devices, and
# ustore serve in its own process. bench/fsync-vs-peers.sh and
# bench/seeds-on-mount.sh source it.
#
# The caller sets: peer_img (the peers' image file), mnt (where a peer is
# mounted), ustore (the binary), SERVE_FLAGS (more flags for serve), OUT
# (where logs go), and defines die and say; and traps EXIT to cleanup.
# The functions set: loop (the peer's loop device), servers (serve pids),
# sock and metrics (the last serve's socket and /metrics URL).

# layout IMG BYTES: a fully written image file (zeros written through, no
# holes, no unwritten extents), kept when it already is one.
layout() {
	local img=$1 bytes=$2 size blocks
	if [[ -f $img ]]; then
		read -r size blocks < <(stat -c '%s %b' "$img")
		if ((size == bytes && blocks * 512 >= bytes)); then
			return
		fi
	fi
	say "writing $img in full ($((bytes >> 20)) MiB)"
	rm -f "$img"
	dd if=/dev/zero of="$img" bs=1M count=$((bytes >> 20)) oflag=direct conv=fsync status=none
}

loop=""
servers=()

# cleanup stops every server and detaches the peer.
cleanup() {
	local pid
	for pid in "${servers[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	servers=()
	mountpoint -q "$mnt" && umount "$mnt"
	if [[ -n $loop ]]; then
		losetup -d "$loop" || true
		loop=""
	fi
}

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# peer_up FS [NODESIZE [INODES]]: a fresh FS on a loop device over the peer
# image, mounted on $mnt. INODES: at least that many on ext4, whose default
# (one per 16 KiB) is too few for dir-fsync's million files on 8 GiB.
peer_up() {
	local fs=$1 ns=${2:-16K} inodes=${3:-}
	local ext4_opts=()
	[[ -n $inodes ]] && ext4_opts=(-N "$inodes")
	loop=$(losetup --direct-io=on --find --show "$peer_img")
	[[ $(cat "/sys/block/${loop#/dev/}/loop/dio") == 1 ]] || die "$loop: direct I/O did not turn on"
	case $fs in
	ext4) mkfs.ext4 -F -q -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "${ext4_opts[@]}" "$loop"; mount "$loop" "$mnt" ;;
	xfs) mkfs.xfs -f -q -K "$loop"; mount "$loop" "$mnt" ;;
	btrfs) mkfs.btrfs -f -q -K -d single -m single -n "$ns" "$loop" >/dev/null; mount -o ssd "$loop" "$mnt" ;;
	*) die "unknown peer $fs" ;;
	esac
	drop_caches
}
peer_down() {
	umount "$mnt"
	losetup -d "$loop"
	loop=""
}

# serve IMG LOG [FLAGS...]: a fresh ustore on IMG, serving; sets $sock and
# $metrics.
serve() {
	local img=$1 log=$2 pid i
	shift 2
	sock=${img%.img}.sock
	chmod 600 "$img" # serve refuses a data file others can read
	"$ustore" mkfs --force --nodesize "${NODESIZE:-16k}" "$img" >/dev/null # over the last run's filesystem
	drop_caches
	# shellcheck disable=SC2086 # SERVE_FLAGS is a list of flags
	"$ustore" serve --device "$img" --socket "$sock" --metrics-addr 127.0.0.1:0 --log-level info $SERVE_FLAGS "$@" 2>"$log" &
	pid=$!
	servers+=("$pid")
	for ((i = 0; i < 600; i++)); do
		grep -q 'msg="ustore serving"' "$log" && break
		kill -0 "$pid" 2>/dev/null || die "ustore serve exited: $(tail -n 5 "$log")"
		sleep 0.1
	done
	grep -q 'msg="ustore serving"' "$log" || die "ustore serve did not start: $(tail -n 5 "$log")"
	metrics=$(grep -o 'url=http://[^ ]*/metrics' "$log" | head -n 1 | cut -d= -f2)
	[[ -n $metrics ]] || die "no metrics URL in $log"
}
unserve() {
	local pid
	for pid in "${servers[@]}"; do
		kill -TERM "$pid"
		wait "$pid" || die "ustore serve exited $? after SIGTERM (log in $OUT)"
	done
	servers=()
}
