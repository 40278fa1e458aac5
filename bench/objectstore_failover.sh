#!/bin/bash
# Failover on an object store, two binaries side by side: for each seed of
# SEEDS, `tabula verify run --object-store` with server kills and stops
# (60 s, at least 3 of each) by OLD then NEW, every run kept in OUT; then,
# from the kept logs, per binary and kind of fault: the time from each
# fault until every tablet the master moved off the faulted server was
# loaded by its new owner ("serving again"), and each load's replay time.
# Run from the repository root after `make build tools`, e.g.
#   OLD=/tmp/old/tabula NEW=bin/tabula SEEDS="105 106" bash bench/objectstore_failover.sh
set -e
OLD=${OLD:?the old tabula binary}
NEW=${NEW:-bin/tabula}
SEEDS=${SEEDS:-101 102}
OUT=${OUT:-$(mktemp -d /tmp/tabula-failover-XXXX)}
export TABULA_WEED=${TABULA_WEED:-$PWD/.tools/bin/weed}
for seed in $SEEDS; do
  for b in old new; do
    bin=$OLD; [ $b = new ] && bin=$NEW
    echo "== $b seed $seed ($bin)"
    "$bin" verify run --object-store --faults server-kill,server-stop --duration 60s \
      --min-faults-per-kind 3 --seed "$seed" --data-dir "$OUT/$b-$seed" --keep > "$OUT/$b-$seed.out" 2>&1 || true
    grep -E "^  server-(kill|stop) |violations" "$OUT/$b-$seed.out"
  done
done
python3 - "$OUT" <<'PY'
import glob, os, re, statistics, sys
def clock(s):
    h, m, x = s.split(":"); return int(h) * 3600 + int(m) * 60 + float(x)
def dur(s):
    for suf, f in (("ms", 1e-3), ("µs", 1e-6), ("s", 1)):
        if s.endswith(suf): return float(s[:-len(suf)]) * f
serving, replays = {}, {}
for run in sorted(glob.glob(sys.argv[1] + "/*/")):
    b = os.path.basename(run.rstrip("/")).split("-")[0]
    out = open(run.rstrip("/") + ".out").read()
    times = [clock(x) for x in re.findall(r"fault \d+ \S+\s+\S+\s+at (\S+)", out)] + [1e9]
    assigns, loads = [], {}
    for f in glob.glob(run + "cluster/logs/master-*.log"):
        for l in open(f):
            m = re.search(r"T(\S+)Z .*msg=\"assigned tablet\".*tablet=\S+/tablets/(\S+) server=\S+ epoch=(\d+) from=(\S+)", l)
            if m: assigns.append((clock(m[1]), m[2], m[3], m[4]))
    for f in glob.glob(run + "cluster/logs/ts-*.log"):
        for l in open(f):
            m = re.search(r"T(\S+)Z .*msg=\"loaded tablet\" server=\S+ tablet=(\S+) epoch=(\d+)", l)
            if m: loads[(m[2], m[3])] = clock(m[1])
            m = re.search(r"msg=opened .*replay=(\S+)", l)
            if m and dur(m[1]) >= 0.001: replays.setdefault(b, []).append(dur(m[1]))
    for kind, srv, at in re.findall(r"fault \d+ (server-kill|server-stop)\s+(ts-\d+)\s+at (\S+)", out):
        at = clock(at); nxt = min(x for x in times if x > at)
        first = {}
        for a in sorted(assigns):
            if a[3] == srv and at <= a[0] < nxt and a[1] not in first: first[a[1]] = a
        done = [loads.get((a[1], a[2])) for a in first.values()]
        if first and None not in done:  # nothing moved: the server was back before its lease ran out
            serving.setdefault((b, kind), []).append(max(done) - at)
for (b, kind), v in sorted(serving.items()):
    print("%s %-12s serving again: n=%d median %.2f s max %.2f s" % (b, kind, len(v), statistics.median(v), max(v)))
for b, v in sorted(replays.items()):
    v.sort(); print("%s replay per load: n=%d median %.2f s p90 %.2f s max %.2f s" % (b, len(v), statistics.median(v), v[int(len(v) * 0.9)], v[-1]))
PY
echo "runs kept in $OUT"
