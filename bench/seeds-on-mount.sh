#!/usr/bin/env bash
# seeds-on-mount.sh — the seed patches' own workloads, their command lines
# as the patches give them (sizes scaled down), run by the real programs
# on `ustore mount` and on ext4, xfs and btrfs, and by the Go client
# (`ustore bench ...`, bench/seqwr) where a Go equivalent exists; ratio
# tables from the one run, and the store requests each mount run made.
#
# Usage: sudo bench/seeds-on-mount.sh           (as root: loop devices, mkfs, mount, FUSE)
#        sudo QUICK=1 bench/seeds-on-mount.sh   (≈ 2-4 minutes on 2 loaded cores)
#
# Workloads (docs/BENCHMARKS.md "The seeds' workloads on the mount"; the
# command lines are those the patches' commit messages give):
#   fio2021   the 2021 btrfs fsync patch's fio job: [writers] rw=randwrite
#             fsync=4 fallocate=none group_reporting=1 direct=0 bs=4k
#             ioengine=sync size=FIO_SIZE numjobs=FIO_JOBS (size-bound)
#             Go: ustore bench fsync-randwrite --jobs FIO_JOBS --file-size FIO_SIZE
#   sb2011    the 2011 csum-logging patch's sysbench run: fileio, 2 files,
#             4 KiB blocks, rndwr, fsync every 100 requests and at the end,
#             synchronous I/O, 1 thread, SB11_EVENTS requests
#             Go: ustore bench csum-fsync --files 2 --large-size SB11_FILE_SIZE
#   sb2013    the 2013 inode-eviction patch's run: sysbench fileio seqwr,
#             128 files, 128 threads, 16 KiB blocks, SB13_TOTAL in all
#             (prepare, then one pass), then sync, then the unmount, timed
#             (the mount: `ustore umount`, then serve's SIGTERM to exit)
#             Go: bench/seqwr --files 128 --bs 16k, then serve's SIGTERM
#   dir2021   the 2021 bulk-insertion patch's dir-fsync-test.sh: DIR_FILES
#             `echo -n > file_$i`, `xfs_io -c fsync` of the directory timed,
#             sync, DIR_DELETES deletes spread over the names, the fsync
#             timed again
#             Go: ustore bench dir-fsync --files DIR_FILES --deletes DIR_DELETES
# Each run gets a fresh filesystem: the peers as bench/fsync-vs-peers.sh
# makes them (bench/peers.sh: loop --direct-io=on over a fully written
# image, mkfs, mount), ustore by `ustore mkfs` over its own image and
# `ustore serve --metrics-addr`; for the mount, `ustore mount` with its
# defaults. A mount run's store requests, per op, come from serve's
# ustore_request_duration_seconds_count.
#
# Settings (environment; QUICK=1 changes the defaults in brackets):
#   SYSTEMS       mount,client,ext4,xfs,btrfs
#   WORKLOADS     fio2021,sb2011,sb2013,dir2021
#   IMG_DIR       ustore-data/seeds-bench      IMG_SIZE  4G [1G]
#   FIO_JOBS      8        FIO_SIZE    256M [8M]       GO_DURATION 10s [3s]
#   SB11_FILE_SIZE 1G [32M]   SB11_EVENTS 10000 [1000]
#   SB13_TOTAL    2G [128M]
#   DIR_FILES     100000 [3000]   DIR_DELETES 1000 [300]
#   OUT           bench/out/seeds-on-mount-<date>
#   USTORE        run this ustore binary instead of building bin/ustore
#
# Needs: root, /dev/fuse, go, python3, curl, fio, sysbench, xfs_io
# (xfsprogs), e2fsprogs, btrfs-progs.
set -euo pipefail

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
die() { echo "seeds-on-mount: $*" >&2; exit 2; }
say() { echo "seeds-on-mount: $*" >&2; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
case ${1:-} in
-h | --help) usage; exit 0 ;;
"") ;;
*) usage >&2; die "unknown argument: $1" ;;
esac

QUICK=${QUICK:-0}
q() { if ((QUICK)); then echo "$2"; else echo "$1"; fi; }
SYSTEMS=${SYSTEMS:-mount,client,ext4,xfs,btrfs}
WORKLOADS=${WORKLOADS:-fio2021,sb2011,sb2013,dir2021}
IMG_DIR=${IMG_DIR:-ustore-data/seeds-bench}
IMG_SIZE=${IMG_SIZE:-$(q 4G 1G)}
FIO_JOBS=${FIO_JOBS:-8}
FIO_SIZE=${FIO_SIZE:-$(q 256M 8M)}
GO_DURATION=${GO_DURATION:-$(q 10s 3s)}
SB11_FILE_SIZE=${SB11_FILE_SIZE:-$(q 1G 32M)}
SB11_EVENTS=${SB11_EVENTS:-$(q 10000 1000)}
SB13_TOTAL=${SB13_TOTAL:-$(q 2G 128M)}
DIR_FILES=${DIR_FILES:-$(q 100000 3000)}
DIR_DELETES=${DIR_DELETES:-$(q 1000 300)}
OUT=${OUT:-bench/out/seeds-on-mount-$(date -u +%Y%m%d-%H%M%S)}
USTORE=${USTORE:-}
SERVE_FLAGS=${SERVE_FLAGS:-}

((EUID == 0)) || die "run as root: it makes loop devices and filesystems and mounts them"
[[ -e /dev/fuse ]] || die "no /dev/fuse (modprobe fuse)"
for tool in fio sysbench xfs_io mkfs.ext4 mkfs.xfs mkfs.btrfs curl python3; do
	command -v "$tool" >/dev/null || die "$tool is missing (apt-get install fio sysbench xfsprogs e2fsprogs btrfs-progs curl python3)"
done

mkdir -p "$OUT" "$IMG_DIR"
if [[ -n $USTORE ]]; then
	ustore=$USTORE
else
	mkdir -p bin
	ustore=bin/ustore
	go build -o "$ustore" ./cmd/ustore
fi
seqwr=$OUT/seqwr
go build -o "$seqwr" ./bench/seqwr

# layout, cleanup, drop_caches, peer_up, peer_down, serve, unserve.
# shellcheck source=bench/peers.sh
source "$repo/bench/peers.sh"

bytes_of() { numfmt --from=iec "${1%B}"; }
peer_img=$IMG_DIR/peer.img
ustore_img=$IMG_DIR/ustore.img
layout "$peer_img" "$(bytes_of "$IMG_SIZE")"
layout "$ustore_img" "$(bytes_of "$IMG_SIZE")"
mnt=$IMG_DIR/mnt
fmnt=$IMG_DIR/fuse
mkdir -p "$mnt" "$fmnt"
mount_pid=""
# The FUSE mount first, then what cleanup stops.
all_down() {
	if [[ -n $mount_pid ]]; then
		mountpoint -q "$fmnt" && "$ustore" umount "$fmnt"
		wait "$mount_pid" || true
		mount_pid=""
	fi
	cleanup
}
trap all_down EXIT
trap 'exit 130' INT TERM

{
	echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "host:    $(uname -srm); $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM"
	echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, at start)"
	echo "images:  $IMG_DIR ($(findmnt -n -o FSTYPE -T "$IMG_DIR")), $IMG_SIZE each, fully written; peers on loop --direct-io=on"
	echo "tools:   $(fio --version); $(sysbench --version); $(xfs_io -V)"
	echo "ustore:  $(git rev-parse --short HEAD) + $(git status --porcelain | wc -l) uncommitted paths"
	echo "command: $( ((QUICK)) && echo 'QUICK=1 ')bench/seeds-on-mount.sh"
	for v in SYSTEMS WORKLOADS FIO_JOBS FIO_SIZE GO_DURATION SB11_FILE_SIZE SB11_EVENTS SB13_TOTAL DIR_FILES DIR_DELETES; do
		echo "  $v=${!v}"
	done
} >"$OUT/machine.txt"
cat "$OUT/machine.txt" >&2

results=$OUT/results.tsv
: >"$results"
# record WORKLOAD SYSTEM METRIC VALUE
record() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$results"; }
now_ns() { date +%s%N; }

# store_requests FILE: serve's request counts by op, "op count" lines.
store_requests() {
	curl -sf "$metrics" | awk '/^ustore_request_duration_seconds_count\{/ {
		match($0, /op="[^"]*"/); op = substr($0, RSTART + 4, RLENGTH - 5); n[op] += $NF
	} END { for (o in n) print o, n[o] }' | sort >"$1"
}

# fuse_up WORKLOAD: a fresh ustore and the mount on $fmnt; sets $target.
fuse_up() {
	serve "$ustore_img" "$OUT/$1--mount.serve.log"
	"$ustore" mount --socket "$sock" "$fmnt" 2>"$OUT/$1--mount.log" &
	mount_pid=$!
	local i
	for ((i = 0; i < 300; i++)); do
		mountpoint -q "$fmnt" && break
		sleep 0.1
	done
	mountpoint -q "$fmnt" || die "ustore mount did not mount: $(cat "$OUT/$1--mount.log")"
	store_requests "$OUT/$1--mount.requests-before"
	target=$fmnt
}
# fuse_down WORKLOAD: the requests the workload made, the mount and the
# server stopped.
fuse_down() {
	store_requests "$OUT/$1--mount.requests-after"
	"$ustore" umount "$fmnt"
	wait "$mount_pid" || die "ustore mount exited $?"
	mount_pid=""
	unserve
}
# on SYSTEM WORKLOAD FN: FN TARGET-DIR on a fresh SYSTEM (mount or a peer).
on() {
	local sys=$1 w=$2 fn=$3
	say "$w on $sys"
	case $sys in
	mount) fuse_up "$w"; "$fn" "$target" "$sys"; fuse_down "$w" ;;
	*) peer_up "$sys" 16K "$((DIR_FILES + 100000))"; "$fn" "$mnt" "$sys"; peer_down ;;
	esac
}

# --- fio2021 ------------------------------------------------------------
fio2021() {
	local dir=$1 sys=$2 job=$OUT/fio2021.ini
	cat >"$job" <<EOF
[writers]
rw=randwrite
fsync=4
fallocate=none
group_reporting=1
direct=0
bs=4k
ioengine=sync
size=$FIO_SIZE
directory=$dir
numjobs=$FIO_JOBS
EOF
	fio --output-format=json "$job" >"$OUT/fio2021--$sys.json" 2>"$OUT/fio2021--$sys.stderr"
	record fio2021 "$sys" write_iops "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["write"]["iops"])' "$OUT/fio2021--$sys.json")"
}
fio2021_client() {
	serve "$ustore_img" "$OUT/fio2021--client.serve.log"
	"$ustore" bench fsync-randwrite --socket "$sock" --metrics "$metrics" --jobs "$FIO_JOBS" --file-size "$FIO_SIZE" \
		--duration "$GO_DURATION" --json --progress never >"$OUT/fio2021--client.json"
	unserve
	record fio2021 client write_iops "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["write_iops"])' "$OUT/fio2021--client.json")"
}

# --- sb2011 -------------------------------------------------------------
sb2011() {
	local dir=$1 sys=$2 size total
	size=$(bytes_of "$SB11_FILE_SIZE")
	total=$((2 * size))
	local args=(fileio --file-num=2 --file-total-size="$total" --file-block-size=4096 --file-test-mode=rndwr
		--file-fsync-freq=100 --file-fsync-end=on --file-extra-flags= --file-io-mode=sync --threads=1
		--events="$SB11_EVENTS" --time=0)
	(cd "$dir" && sysbench "${args[@]}" prepare >/dev/null && sysbench "${args[@]}" run) >"$OUT/sb2011--$sys.txt"
	# The 2011 patch's "Requests/sec" counts writes and fsyncs.
	record sb2011 "$sys" requests_per_s "$(awk '/writes\/s:/ { w = $2 } /fsyncs\/s:/ { f = $2 } END { print w + f }' "$OUT/sb2011--$sys.txt")"
}
sb2011_client() {
	serve "$ustore_img" "$OUT/sb2011--client.serve.log"
	"$ustore" bench csum-fsync --socket "$sock" --metrics "$metrics" --files 2 --large-size "$SB11_FILE_SIZE" \
		--small-size 4M --duration "$GO_DURATION" --json --progress never >"$OUT/sb2011--client.json"
	unserve
	record sb2011 client requests_per_s "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"]["large"]["requests_per_sec"])' "$OUT/sb2011--client.json")"
}

# --- sb2013 -------------------------------------------------------------
sb2013_write() {
	local dir=$1 sys=$2 total events
	total=$(bytes_of "$SB13_TOTAL")
	events=$((total / 16384)) # one pass: sysbench's seqwr would go on forever with no bound
	local args=(fileio --file-num=128 --threads=128 --file-test-mode=seqwr --file-total-size="$total"
		--file-block-size=16384 --events="$events" --time=0)
	local t0
	t0=$(now_ns)
	(cd "$dir" && sysbench "${args[@]}" prepare >/dev/null && sysbench "${args[@]}" run) >"$OUT/sb2013--$sys.txt"
	sync
	record sb2013 "$sys" write_s "$(((($(now_ns) - t0) / 1000000)))e-3"
}
sb2013() {
	local dir=$1 sys=$2 t0
	sb2013_write "$dir" "$sys"
	if [[ $sys == mount ]]; then
		store_requests "$OUT/sb2013--mount.requests-after"
		t0=$(now_ns)
		"$ustore" umount "$fmnt"
		wait "$mount_pid"
		mount_pid=""
		record sb2013 mount fuse_umount_ms "$((($(now_ns) - t0) / 1000000))"
		t0=$(now_ns)
		unserve
		record sb2013 mount unmount_ms "$((($(now_ns) - t0) / 1000000))"
	else
		t0=$(now_ns)
		umount "$mnt"
		record sb2013 "$sys" unmount_ms "$((($(now_ns) - t0) / 1000000))"
		losetup -d "$loop"
		loop=""
	fi
}
sb2013_on() {
	local sys=$1
	say "sb2013 on $sys"
	case $sys in
	mount) fuse_up sb2013; sb2013 "$target" mount ;;
	*) peer_up "$sys"; sb2013 "$mnt" "$sys" ;;
	esac
}
sb2013_client() {
	local t0
	serve "$ustore_img" "$OUT/sb2013--client.serve.log"
	t0=$(now_ns)
	"$seqwr" --socket "$sock" --files 128 --bs 16k --total "$SB13_TOTAL" >"$OUT/sb2013--client.txt"
	record sb2013 client write_s "$((($(now_ns) - t0) / 1000000))e-3"
	t0=$(now_ns)
	unserve
	record sb2013 client unmount_ms "$((($(now_ns) - t0) / 1000000))"
}

# --- dir2021 ------------------------------------------------------------
dir2021() {
	local dir=$1 sys=$2 i start end del_inc
	mkdir "$dir/testdir"
	start=$(now_ns)
	for ((i = 1; i <= DIR_FILES; i++)); do
		echo -n >"$dir/testdir/file_$i"
	done
	record dir2021 "$sys" create_ms "$((($(now_ns) - start) / 1000000))"
	start=$(now_ns)
	xfs_io -c "fsync" "$dir/testdir"
	end=$(now_ns)
	record dir2021 "$sys" fsync_after_create_ms "$(((end - start) / 1000))e-3"
	sync
	del_inc=$((DIR_FILES / DIR_DELETES))
	for ((i = 1; i <= DIR_FILES; i += del_inc)); do
		rm -f "$dir/testdir/file_$i"
	done
	start=$(now_ns)
	xfs_io -c "fsync" "$dir/testdir"
	end=$(now_ns)
	record dir2021 "$sys" fsync_after_delete_ms "$(((end - start) / 1000))e-3"
}
dir2021_client() {
	serve "$ustore_img" "$OUT/dir2021--client.serve.log"
	"$ustore" bench dir-fsync --socket "$sock" --metrics "$metrics" --files "$DIR_FILES" --deletes "$DIR_DELETES" \
		--json --progress never >"$OUT/dir2021--client.json"
	unserve
	python3 - "$OUT/dir2021--client.json" >>"$results" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
for k in ("create_ms", "fsync_after_create_ms", "fsync_after_delete_ms"):
    print(f"dir2021\tclient\t{k}\t{r[k]}")
PY
}

for w in ${WORKLOADS//,/ }; do
	for sys in ${SYSTEMS//,/ }; do
		if [[ $sys == client ]]; then
			say "$w on the Go client"
			"${w}_client"
		elif [[ $w == sb2013 ]]; then
			sb2013_on "$sys"
		else
			on "$sys" "$w" "$w"
		fi
	done
done
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, at the end)" >>"$OUT/machine.txt"

python3 - "$OUT" <<'PY' | tee "$OUT/summary.md"
import collections, glob, os, sys
out = sys.argv[1]
print(open(os.path.join(out, "machine.txt")).read().rstrip())
res = collections.defaultdict(dict)  # (workload, metric) -> system -> value
for line in open(os.path.join(out, "results.tsv")):
    w, s, m, v = line.rstrip("\n").split("\t")
    res[(w, m)][s] = float(v)
systems = ["mount", "client", "ext4", "xfs", "btrfs"]
higher = {"write_iops", "requests_per_s"}
def f(x): return "-" if x is None else (f"{x:,.0f}" if x >= 100 else f"{x:,.2f}")
for (w, m), row in res.items():
    print(f"\n{w} {m} ({'higher' if m in higher else 'lower'} is better)\n")
    print("| " + " | ".join(s for s in systems if s in row) + " | mount/client | mount/ext4 | mount/xfs | mount/btrfs |")
    print("|" + "--:|" * (len([s for s in systems if s in row]) + 4))
    mt = row.get("mount")
    ratios = [f"{mt / row[o]:.2f}" if mt is not None and row.get(o) else "-" for o in ("client", "ext4", "xfs", "btrfs")]
    print("| " + " | ".join(f(row[s]) for s in systems if s in row) + " | " + " | ".join(ratios) + " |")
print("\nstore requests per mount run (serve's ustore_request_duration_seconds_count, after minus before):\n")
for after in sorted(glob.glob(os.path.join(out, "*--mount.requests-after"))):
    w = os.path.basename(after).split("--")[0]
    def load(p):
        try: return {l.split()[0]: float(l.split()[1]) for l in open(p)}
        except OSError: return {}
    a, b = load(after), load(after.replace("-after", "-before"))
    d = {op: a[op] - b.get(op, 0) for op in a if a[op] - b.get(op, 0) > 0}
    print(f"- {w}: " + ", ".join(f"{op} {n:,.0f}" for op, n in sorted(d.items(), key=lambda x: -x[1])))
PY
echo "raw results: $OUT"
