#!/usr/bin/env bash
# ring-vs-fio.sh — ustore's io_uring layer (ring/) against fio and a pread pool.
#
# Usage: bench/ring-vs-fio.sh [options]
#        bench/ring-vs-fio.sh --summarize bench/out/ring-vs-fio-YYYYmmdd-HHMMSS
#
# For each repetition, each rw mode and each queue depth it runs, one after
# the other (interleaved, so that noise on the shared disk hits all alike):
#   1. fio --ioengine=io_uring --direct=1 ... --lat_percentiles=1 --output-format=json
#   2. ustore bench ring --engine ring       (fio's loop on the ring's goroutine)
#   3. ustore bench ring --engine ring-sync  (QD goroutines, synchronous ReadAt/WriteAt)
#   4. ustore bench ring --engine pread      (QD goroutines, pread/pwrite, no io_uring)
# all on the same fully written file with the same bs, size, qd and duration.
# Then, unless --no-direct-path-section, it measures the ring's direct path:
#   ustore bench ring --engine ring-sync --qd 1 --rw $RWS  [--no-direct-path]
# interleaved, REPS times. It prints the medians over repetitions as one table
# (IOPS, ratios, p50/p99 total latency: fio's lat_ns, submit to completion),
# the goal checks and ring's ops per io_uring_enter, and keeps the raw JSON,
# the machine description and the summary under bench/out/ (git-ignored).
#
# Options (each also settable by the environment variable in capitals):
#   --file PATH        FILE      file to run on          (ustore-data/bench.img)
#   --size N           SIZE      bytes the I/O covers    (1G)
#   --bs N             BS        block size              (4k)
#   --qds LIST         QDS       queue depths            (1,8,32,128)
#   --rws LIST         RWS       rw modes                (randread,randwrite)
#   --duration D       DURATION  time per run: Ns or Nm  (10s)
#   --reps N           REPS      repetitions             (3)
#   --out DIR          OUT       results directory       (bench/out/ring-vs-fio-<date>)
#   --bin-dir DIR      BIN_DIR   where ustore is built   (bin)
#   --no-direct-path-section     skip the direct-path measurement (DIRECT_PATH=0)
#   --direct-path-only           run only the direct-path measurement (MAIN=0)
#   --summarize DIR    only print the summary of an earlier results directory
#   -h, --help         this text
#
# Needs: bash, go, python3; fio is installed with apt-get when missing.
# Takes about REPS × |RWS| × |QDS| × 4 × DURATION, plus REPS × 2 × |RWS| ×
# DURATION for the direct-path section: 3 × 2 × 4 × 4 × 10 s + 2 min ≈ 19 min
# with the defaults. Run it on an otherwise quiet machine: the runs record the
# whole disk's I/O (/proc/diskstats), and the summary counts runs during which
# other processes did more than 30% of the run's own I/O on the same disk.
set -euo pipefail

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
die() { echo "ring-vs-fio: $*" >&2; exit 2; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

FILE=${FILE:-ustore-data/bench.img}
SIZE=${SIZE:-1G}
BS=${BS:-4k}
QDS=${QDS:-1,8,32,128}
RWS=${RWS:-randread,randwrite}
DURATION=${DURATION:-10s}
REPS=${REPS:-3}
OUT=${OUT:-}
BIN_DIR=${BIN_DIR:-bin}
DIRECT_PATH=${DIRECT_PATH:-1}
MAIN=${MAIN:-1}
summarize_only=""

while (($#)); do
	case $1 in
	--file) FILE=${2:?--file needs a value}; shift 2 ;;
	--size) SIZE=${2:?--size needs a value}; shift 2 ;;
	--bs) BS=${2:?--bs needs a value}; shift 2 ;;
	--qds | --qd) QDS=${2:?--qds needs a value}; shift 2 ;;
	--rws | --rw) RWS=${2:?--rws needs a value}; shift 2 ;;
	--duration) DURATION=${2:?--duration needs a value}; shift 2 ;;
	--reps) REPS=${2:?--reps needs a value}; shift 2 ;;
	--out) OUT=${2:?--out needs a value}; shift 2 ;;
	--bin-dir) BIN_DIR=${2:?--bin-dir needs a value}; shift 2 ;;
	--no-direct-path-section) DIRECT_PATH=0; shift ;;
	--direct-path-only) MAIN=0; DIRECT_PATH=1; shift ;;
	--summarize) summarize_only=${2:?--summarize needs a directory}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
done

# summarize DIR: medians over repetitions, the table, the goal checks.
summarize() {
	python3 - "$1" <<'PY'
import glob, json, math, os, re, statistics, sys

out = sys.argv[1]
params = {}
with open(os.path.join(out, "params.env")) as f:
    for line in f:
        k, _, v = line.strip().partition("=")
        params[k] = v
qds = [int(q) for q in params["QDS"].split(",")]
rws = params["RWS"].split(",")
engines = ["fio", "ring", "ring-sync", "pread"]

def load(path):
    """One run's figures, or None when the run failed or is missing."""
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return None
    if isinstance(d, dict) and "jobs" in d:  # fio
        j = d["jobs"][0]
        side = j["read"] if j["read"]["total_ios"] > 0 else j["write"]
        pct = side["lat_ns"].get("percentile", {})
        return {
            "iops": side["iops"], "ops": side["total_ios"],
            "p50": pct.get("50.000000", math.nan) / 1e3,
            "p99": pct.get("99.000000", math.nan) / 1e3,
            "p999": pct.get("99.900000", math.nan) / 1e3,
            "mean": side["lat_ns"]["mean"] / 1e3,
            "cpu": j["usr_cpu"] + j["sys_cpu"],
        }
    r = d[0]
    return {
        "iops": r["iops"], "ops": r["ops"], "p50": r["lat_p50_us"], "p99": r["lat_p99_us"],
        "p999": r["lat_p999_us"], "mean": r["lat_mean_us"],
        "ope": r.get("ops_per_enter", 0.0), "direct": r.get("direct_ops", 0),
        "kwakes": r.get("kernel_wakes", 0), "parks": r.get("parks", 0),
    }

reps = sorted(int(m.group(1)) for p in glob.glob(os.path.join(out, "rep*"))
              if (m := re.search(r"rep(\d+)$", p)))

def runs(rw, qd, eng):
    return [x for n in reps
            if (x := load(os.path.join(out, f"rep{n}", f"{rw}-qd{qd}-{eng}.json"))) is not None]

def med(rs, key):
    v = [r[key] for r in rs if key in r and not math.isnan(r[key])]
    return statistics.median(v) if v else math.nan

def f0(x): return "-" if math.isnan(x) else f"{x:,.0f}"
def f1(x): return "-" if math.isnan(x) else f"{x:.1f}"
def f2(x): return "-" if math.isnan(x) else f"{x:.2f}"
def ratio(a, b): return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan

# Whole-disk I/O during each run, against the run's own: foreign load. And
# the CPU the rest of the machine used meanwhile (user+system ticks of all
# CPUs minus the run's own), and the hypervisor's steal.
foreign, cpu = {}, {}
hz = float(params.get("HZ", 100))
tsv = os.path.join(out, "runs.tsv")
if os.path.exists(tsv):
    with open(tsv) as f:
        cols = f.readline().rstrip("\n").split("\t")
        for line in f:
            c = dict(zip(cols, line.rstrip("\n").split("\t")))
            rep, rw, qd, eng = c["rep"], c["rw"], c["qd"], c["engine"]
            try:
                wall = float(c["wall_s"])
                other = (int(c["busy_after"]) - int(c["busy_before"]) -
                         int(c["own_after"]) + int(c["own_before"])) / hz / wall
                steal = (int(c["steal_after"]) - int(c["steal_before"])) / hz / wall
                cpu[(rep, rw, qd, eng)] = (max(other, 0.0), steal)
            except (KeyError, ValueError, ZeroDivisionError):
                pass
            if c.get("disk_ios_after", "-") == "-":
                continue
            disk = int(c["disk_ios_after"]) - int(c["disk_ios_before"])
            if rw == "dp":  # one run of every rw mode
                try:
                    with open(os.path.join(out, f"rep{rep}", f"dp-{qd}.json")) as jf:
                        ops = sum(x["ops"] for x in json.load(jf))
                except (OSError, ValueError):
                    continue
            else:
                r = load(os.path.join(out, f"rep{rep}", f"{rw}-qd{qd}-{eng}.json"))
                ops = r["ops"] if r else 0
            if ops:
                foreign[(rep, rw, qd, eng)] = (disk - ops) / ops

M = {}
for rw in rws:
    for qd in qds:
        for eng in engines:
            M[rw, qd, eng] = runs(rw, qd, eng)

main = params.get("MAIN", "1") == "1"

def main_summary():
    print(f"ring vs fio vs pread: bs={params['BS']} size={params['SIZE']} O_DIRECT, "
        f"{params['DURATION']} per run, median of {len(reps)} repetitions, "
        f"file {params['FILE']}")
    print("latency: total (submit to completion) percentiles in µs; fio's are lat_ns")
    print()
    hdr = ["rw", "qd", "fio IOPS", "ring IOPS", "ring/fio", "ring-sync IOPS", "pread IOPS",
           "ring/pread", "fio p50", "ring p50", "fio p99", "ring p99"]
    rows = []
    for rw in rws:
        for qd in qds:
            fi, ri, si, pi = (M[rw, qd, e] for e in engines)
            rows.append([rw, str(qd), f0(med(fi, "iops")), f0(med(ri, "iops")),
                         f2(ratio(med(ri, "iops"), med(fi, "iops"))), f0(med(si, "iops")),
                         f0(med(pi, "iops")), f2(ratio(med(ri, "iops"), med(pi, "iops"))),
                         f1(med(fi, "p50")), f1(med(ri, "p50")), f1(med(fi, "p99")), f1(med(ri, "p99"))])
    print("| " + " | ".join(hdr) + " |")
    print("|" + "|".join("---" if i < 2 else "--:" for i in range(len(hdr))) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()

    print("ring ops per io_uring_enter (median): " + "; ".join(
        f"{rw} " + ", ".join(f"qd{qd} {f1(med(M[rw, qd, 'ring'], 'ope'))}" for qd in qds)
        for rw in rws))
    print()

    def verdict(ok): return "met" if ok else "NOT MET"
    print("goals (ratios of the medians above):")
    for qd in (32, 128):
        for rw in rws:
            if qd not in qds:
                continue
            f, r = med(M[rw, qd, "fio"], "iops"), med(M[rw, qd, "ring"], "iops")
            x = ratio(r, f)
            print(f"  ring >= 0.90 x fio IOPS, {rw} qd {qd}: {f0(r)} / {f0(f)} = {f2(x)} -> "
                  f"{verdict(x >= 0.90) if not math.isnan(x) else 'no data'}")
    if 128 in qds:
        for rw in rws:
            p, r = med(M[rw, 128, "pread"], "iops"), med(M[rw, 128, "ring"], "iops")
            x = ratio(r, p)
            print(f"  ring >= 1.5 x pread IOPS, {rw} qd 128: {f0(r)} / {f0(p)} = {f2(x)} -> "
                  f"{verdict(x >= 1.5) if not math.isnan(x) else 'no data'}")
    if 1 in qds:
        for rw in rws:
            f, r = med(M[rw, 1, "fio"], "p50"), med(M[rw, 1, "ring"], "p50")
            x = ratio(r, f)
            print(f"  ring p50 <= 1.10 x fio p50, {rw} qd 1: {f1(r)} / {f1(f)} µs = {f2(x)} -> "
                  f"{verdict(x <= 1.10) if not math.isnan(x) else 'no data'}")
    print()

    n_runs = sum(len(v) for v in M.values())
    expected = len(reps) * len(rws) * len(qds) * len(engines)
    noisy = [k for k, v in foreign.items() if k[1] != "dp" and v > 0.30]
    if foreign:
        print(f"noise: {len(noisy)} of {n_runs} runs saw foreign I/O on the disk > 30% of their own"
              + (": " + ", ".join(f"rep{k[0]} {k[1]} qd{k[2]} {k[3]}" for k in sorted(noisy)) if noisy else ""))
    main_cpu = [v for k, v in cpu.items() if k[1] != "dp"]
    if main_cpu:
        others = sorted(v[0] for v in main_cpu)
        steals = sorted(v[1] for v in main_cpu)
        busy = sum(1 for o in others if o > 0.25)
        print(f"noise: CPU used by everything but the run (other processes, kernel threads), in cores of "
              f"{params.get('NPROC', '?')}: median {statistics.median(others):.2f}, max {others[-1]:.2f}; "
              f"{busy} of {len(others)} runs above 0.25; hypervisor steal median "
              f"{statistics.median(steals):.2f}, max {steals[-1]:.2f} cores")
    if n_runs < expected:
        print(f"missing: {expected - n_runs} of {expected} runs failed or are absent (see runs.tsv)")

if main:
    main_summary()
else:
    print(f"direct-path section only: bs={params['BS']} size={params['SIZE']} O_DIRECT, "
          f"{params['DURATION']} per run, file {params['FILE']}")

# The direct path: ring-sync at qd 1, with and without --no-direct-path.
dp = {v: [x for n in reps if (x := load(os.path.join(out, f"rep{n}", f"dp-{v}.json"))) is not None]
      for v in ("direct", "ring")}
if dp["direct"] or dp["ring"]:
    print()
    print("direct path: ustore bench ring --engine ring-sync --qd 1 [--no-direct-path], "
          f"median of {len(reps)}")
    print()
    def dprows(v):
        res = {}
        for n in reps:
            try:
                with open(os.path.join(out, f"rep{n}", f"dp-{v}.json")) as f:
                    for r in json.load(f):
                        res.setdefault(r["rw"], []).append(r)
            except (OSError, ValueError):
                pass
        return res
    h = ["rw", "path", "IOPS", "p50 µs", "p99 µs", "mean µs", "direct ops/op", "ops/enter", "parks/op"]
    print("| " + " | ".join(h) + " |")
    print("|" + "|".join("---" if i < 2 else "--:" for i in range(len(h))) + "|")
    per = {v: dprows(v) for v in ("direct", "ring")}
    for rw in rws:
        for v, label in (("direct", "direct path (default)"), ("ring", "--no-direct-path")):
            rs = per[v].get(rw, [])
            def m(k, norm=False):
                vals = [(r.get(k, 0) / r["ops"] if norm else r.get(k, 0)) for r in rs if r["ops"]]
                return statistics.median(vals) if vals else math.nan
            print(f"| {rw} | {label} | {f0(m('iops'))} | {f1(m('lat_p50_us'))} | "
                  f"{f1(m('lat_p99_us'))} | {f1(m('lat_mean_us'))} | {f2(m('direct_ops', True))} | "
                  f"{f2(m('ops_per_enter'))} | {f2(m('parks', True))} |")
    for rw in rws:
        a = [r for r in per["direct"].get(rw, [])]
        b = [r for r in per["ring"].get(rw, [])]
        if a and b:
            pa = statistics.median(r["lat_p50_us"] for r in a)
            pb = statistics.median(r["lat_p50_us"] for r in b)
            ma = statistics.median(r["lat_mean_us"] for r in a)
            mb = statistics.median(r["lat_mean_us"] for r in b)
            print(f"  {rw}: the trip through the reactor adds {pb - pa:.1f} µs at p50, "
                  f"{mb - ma:.1f} µs on the mean")
    dcpu = [v for k, v in cpu.items() if k[1] == "dp"]
    if dcpu:
        print(f"  noise: CPU used by everything but the run, in cores: median "
              f"{statistics.median(v[0] for v in dcpu):.2f}, max {max(v[0] for v in dcpu):.2f}; "
              f"steal median {statistics.median(v[1] for v in dcpu):.2f}")

# Details for reference: min-max per engine, CPU of fio.
with open(os.path.join(out, "details.txt"), "w") as d:
    d.write("median (min-max) IOPS | p50 | p99 | p99.9 µs per engine; fio CPU% = usr+sys\n")
    for rw in rws if main else []:
        for qd in qds:
            for eng in engines:
                rs = M[rw, qd, eng]
                if not rs:
                    d.write(f"{rw} qd{qd} {eng}: no data\n")
                    continue
                iops = [r["iops"] for r in rs]
                extra = (f" cpu {med(rs, 'cpu'):.0f}%" if eng == "fio" else
                         f" ops/enter {med(rs, 'ope'):.1f}" if eng.startswith("ring") else "")
                d.write(f"{rw:9} qd{qd:<4} {eng:9} {statistics.median(iops):9.0f} "
                        f"({min(iops):.0f}-{max(iops):.0f}) | {med(rs, 'p50'):.1f} | "
                        f"{med(rs, 'p99'):.1f} | {med(rs, 'p999'):.1f}{extra}\n")
    d.write("\npaired per-repetition ring/fio and ring/pread IOPS ratios\n")
    for rw in rws if main else []:
        for qd in qds:
            pr = []
            for n in reps:
                g = lambda e: load(os.path.join(out, f"rep{n}", f"{rw}-qd{qd}-{e}.json"))
                f, r, p = g("fio"), g("ring"), g("pread")
                pr.append(f"rep{n} " + (f"{r['iops'] / f['iops']:.2f}" if f and r else "-") + "/" +
                          (f"{r['iops'] / p['iops']:.2f}" if p and r else "-"))
            d.write(f"{rw:9} qd{qd:<4} " + "  ".join(pr) + "\n")
    d.write("\nper run: foreign disk I/O (whole-disk I/Os minus the run's own, over its own); "
            "other CPU and steal in cores\n")
    for k in sorted(set(foreign) | set(cpu),
                    key=lambda k: (int(k[0]), k[1], int(k[2]) if k[2].isdigit() else 0, k[2], k[3])):
        what = f"direct-path section, {k[2]}" if k[1] == "dp" else f"{k[1]} qd{k[2]} {k[3]}"
        fo = f"{foreign[k] * 100:.0f}%" if k in foreign else "-"
        oc, st = cpu.get(k, (math.nan, math.nan))
        d.write(f"rep{k[0]} {what}: disk {fo}, other CPU {oc:.2f}, steal {st:.2f}\n")
PY
}

if [[ -n $summarize_only ]]; then
	summarize "$summarize_only"
	exit 0
fi

# Validate the parameters before spending time.
[[ $REPS =~ ^[1-9][0-9]*$ ]] || die "REPS must be a positive integer, not '$REPS'"
[[ $DURATION =~ ^[1-9][0-9]*$ ]] && DURATION=${DURATION}s
[[ $DURATION =~ ^([1-9][0-9]*)(s|m)$ ]] || die "DURATION must be Ns or Nm, not '$DURATION'"
dur_s=${BASH_REMATCH[1]}
[[ ${BASH_REMATCH[2]} == m ]] && dur_s=$((dur_s * 60))
[[ $QDS =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "QDS must be a comma-separated list of depths, not '$QDS'"
[[ $RWS =~ ^(randread|randwrite|read|write)(,(randread|randwrite|read|write))*$ ]] ||
	die "RWS must be a comma-separated list of randread, randwrite, read, write; not '$RWS'"
IFS=, read -r -a qd_list <<<"$QDS"
IFS=, read -r -a rw_list <<<"$RWS"

# fio, from the distribution when missing.
if ! command -v fio >/dev/null 2>&1; then
	echo "ring-vs-fio: installing fio" >&2
	sudo=()
	((EUID == 0)) || sudo=(sudo)
	"${sudo[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq fio >/dev/null
fi
command -v python3 >/dev/null 2>&1 || die "python3 is needed to read the JSON results"

# ustore, built from this tree.
mkdir -p "$BIN_DIR"
ustore="$BIN_DIR/ustore"
echo "ring-vs-fio: building $ustore" >&2
go build -o "$ustore" ./cmd/ustore

OUT=${OUT:-bench/out/ring-vs-fio-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
cat >"$OUT/params.env" <<EOF
FILE=$FILE
SIZE=$SIZE
BS=$BS
QDS=$QDS
RWS=$RWS
DURATION=$DURATION
REPS=$REPS
HZ=$(getconf CLK_TCK)
NPROC=$(nproc)
MAIN=$MAIN
EOF

# Lay the file out once, fully written (not sparse), so that every engine
# reads the same real blocks; fio and ustore both leave a complete file alone.
mkdir -p "$(dirname "$FILE")"
size_bytes=$(python3 -c '
import sys
s = sys.argv[1].strip().lower().removesuffix("b").removesuffix("i")
m = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(s[-1:], 1)
print(int(s[:-1] if m > 1 else s) * m)' "$SIZE")
allocated() { local s b; read -r s b < <(stat -c '%s %b' "$FILE"); echo "$s $((b * 512))"; }
need_layout=1
if [[ -f $FILE ]]; then
	read -r fsize fblocks < <(allocated)
	((fsize >= size_bytes && fblocks >= size_bytes)) && need_layout=0
fi
if ((need_layout)); then
	echo "ring-vs-fio: laying out $FILE ($SIZE, sequential O_DIRECT writes)" >&2
	fio --name=layout --filename="$FILE" --ioengine=psync --direct=1 --bs=1M --rw=write \
		--size="$SIZE" --output="$OUT/layout.txt" >/dev/null
fi
read -r fsize fblocks < <(allocated)
((fsize >= size_bytes && fblocks >= size_bytes)) || die "$FILE is still sparse or short: $fsize bytes, $fblocks allocated"

# The disk under the file, for the machine record and the foreign-I/O check.
src=$(df --output=source "$FILE" | tail -n 1)
dev=""
disk=""
if [[ $src == /dev/* && -b $src ]]; then
	dev=$(basename "$(readlink -f "$src")")
	disk=$(lsblk -no PKNAME "/dev/$dev" 2>/dev/null | head -n 1)
	[[ -n $disk ]] || disk=$dev
fi
diskios() { # completed reads + writes of the file's device
	if [[ -n $dev ]]; then awk -v d="$dev" '$3 == d { print $4 + $8 }' /proc/diskstats; else echo -; fi
}
cputicks() { # machine user+nice+system, steal, and this shell's waited-for children's user+system
	local own
	own=$(awk '{ print $16 + $17 }' "/proc/$$/stat")
	awk -v own="$own" '$1 == "cpu" { print $2 + $3 + $4, $9, own }' /proc/stat
}

{
	echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "host:     $(uname -srm); $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM"
	echo "load:     $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, at start)"
	echo "file:     $FILE, $fsize bytes, $fblocks allocated; $(findmnt -n -T "$FILE" -o SOURCE,FSTYPE,OPTIONS)"
	if [[ -n $disk ]]; then
		q=/sys/block/$disk/queue
		echo "disk:     /dev/$disk: $(lsblk -dn -o SIZE,ROTA,TYPE,MODEL "/dev/$disk" | xargs), rotational=$(cat "$q/rotational"), scheduler $(cat "$q/scheduler"), write cache '$(cat "$q/write_cache")', nr_requests $(cat "$q/nr_requests"), hw queues $(find "/sys/block/$disk/mq" -mindepth 1 -maxdepth 1 | wc -l), poll queues io_poll=$(cat "$q/io_poll" 2>/dev/null || echo ?)"
		lsblk -o NAME,SIZE,ROTA,TYPE,SCHED,RQ-SIZE,LOG-SEC,PHY-SEC,MOUNTPOINTS "/dev/$disk" | sed 's/^/          /'
	fi
	echo "fio:      $(fio --version)"
	echo "go:       $(go version)"
	echo "ustore:   $(git rev-parse --short HEAD 2>/dev/null || echo '?') + $(git status --porcelain 2>/dev/null | wc -l) uncommitted paths (built into $ustore)"
	echo "command:  bench/ring-vs-fio.sh  FILE=$FILE SIZE=$SIZE BS=$BS QDS=$QDS RWS=$RWS DURATION=$DURATION REPS=$REPS MAIN=$MAIN DIRECT_PATH=$DIRECT_PATH"
} >"$OUT/machine.txt"
cat "$OUT/machine.txt"
echo

printf '%s\t' rep rw qd engine disk_ios_before disk_ios_after wall_s rc busy_before busy_after \
	steal_before steal_after own_before own_after | sed 's/\t$/\n/' >"$OUT/runs.tsv"
failures=0
# run REP RW QD ENGINE JSON CMD...: one run, its JSON in JSON, stderr beside it.
run() {
	local rep=$1 rw=$2 qd=$3 eng=$4 json=$5
	shift 5
	local before after t0 rc=0 busy0 steal0 own0 busy1 steal1 own1
	read -r busy0 steal0 own0 < <(cputicks)
	before=$(diskios)
	t0=$EPOCHREALTIME
	timeout $((dur_s + 180)) "$@" >"$json" 2>"${json%.json}.stderr" || rc=$?
	after=$(diskios)
	read -r busy1 steal1 own1 < <(cputicks)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$rw" "$qd" "$eng" \
		"$before" "$after" "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" "$rc" \
		"$busy0" "$busy1" "$steal0" "$steal1" "$own0" "$own1" >>"$OUT/runs.tsv"
	if ((rc != 0)); then
		failures=$((failures + 1))
		echo "ring-vs-fio: FAILED (rc $rc): $*" >&2
		sed 's/^/    /' "${json%.json}.stderr" >&2
		rm -f "$json"
	fi
}

n_total=$((REPS * ${#rw_list[@]} * ${#qd_list[@]}))
n=0
((MAIN)) || REPS_MAIN=0
for ((rep = 1; rep <= ${REPS_MAIN:-$REPS}; rep++)); do
	mkdir -p "$OUT/rep$rep"
	for rw in "${rw_list[@]}"; do
		for qd in "${qd_list[@]}"; do
			n=$((n + 1))
			echo "ring-vs-fio: [$n/$n_total] rep $rep $rw qd $qd: fio, ring, ring-sync, pread" >&2
			base="$OUT/rep$rep/$rw-qd$qd"
			run "$rep" "$rw" "$qd" fio "$base-fio.json" \
				fio --name=ring --filename="$FILE" --ioengine=io_uring --direct=1 --bs="$BS" \
				--iodepth="$qd" --rw="$rw" --size="$SIZE" --time_based --runtime="$DURATION" \
				--randrepeat=0 --norandommap --lat_percentiles=1 --output-format=json
			for eng in ring ring-sync pread; do
				run "$rep" "$rw" "$qd" "$eng" "$base-$eng.json" \
					"$ustore" bench ring --engine "$eng" --file "$FILE" --size "$SIZE" --bs "$BS" \
					--qd "$qd" --rw "$rw" --duration "$DURATION" --json --progress never
			done
		done
	done
done

if ((DIRECT_PATH)); then
	for ((rep = 1; rep <= REPS; rep++)); do
		echo "ring-vs-fio: direct path, rep $rep/$REPS: ring-sync qd 1 with, then without, the direct path" >&2
		mkdir -p "$OUT/rep$rep"
		dp=("$ustore" bench ring --engine ring-sync --file "$FILE" --size "$SIZE" --bs "$BS"
			--qd 1 --rw "$RWS" --duration "$DURATION" --json --progress never)
		run "$rep" dp direct ring-sync "$OUT/rep$rep/dp-direct.json" "${dp[@]}"
		run "$rep" dp ring ring-sync "$OUT/rep$rep/dp-ring.json" "${dp[@]}" --no-direct-path
	done
fi

echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
echo
summarize "$OUT" | tee "$OUT/summary.txt"
echo
echo "raw results: $OUT (details.txt: ranges, paired ratios, foreign I/O per run)"
if ((failures)); then
	echo "ring-vs-fio: $failures runs failed" >&2
	exit 1
fi
