#!/bin/bash
# The Cloud Bigtable API path vs Tabula's own client, side by side: one
# one-server dev cluster with its Bigtable gateway, and ROUNDS times
# (default 3), in a rotating order, the same `tabula bench` through
#   native    --api tabula    Tabula's Go client -> tablet server
#   gateway   --api bigtable  the official Bigtable Go client -> the gateway
#                             -> Tabula's Go client -> tablet server
#   emulator  --api emulator  the official client -> bttest in the bench
#                             process (in memory, not durable: a reference)
# with identical settings (ROWS, CLIENTS, VALUE_SIZE, TABLETS, seed):
# unbatched writes, reads and SCANS scans, then writes batched BATCH rows a
# call. Prints per workload the median ops/s over the rounds, the ratio
# gateway/native and emulator/native. Run from the repository root; builds
# bin/tabula unless BIN names a binary. Writes are durable (sync=always)
# in native and gateway.
# APIS (default "native gateway emulator") picks the paths run.
set -e
ROWS=${ROWS:-20000}
CLIENTS=${CLIENTS:-16}
ROUNDS=${ROUNDS:-3}
VALUE_SIZE=${VALUE_SIZE:-1000}
TABLETS=${TABLETS:-8}
BATCH=${BATCH:-100}
SCANS=${SCANS:-5}
read -r -a apis <<< "${APIS:-native gateway emulator}"
export PATH=$PATH:/usr/local/go/bin
# BIN: the tabula binary to measure (e.g. one built from another commit,
# for old vs new runs); by default bin/tabula, built from this tree.
BIN=${BIN:-}
if [ -z "$BIN" ]; then
  go build -o bin/tabula ./cmd/tabula
  BIN=bin/tabula
fi

d=$(mktemp -d /tmp/tabula-btbench-XXXX)
"$BIN" dev --servers 1 --data "$d" --master-addr 127.0.0.1:0 --gateway 127.0.0.1:0 --http "" > "$d.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid; wait $pid || true; rm -rf "$d" "$d.log"' EXIT
for _ in $(seq 300); do [ -s "$d/master.addr" ] && [ -s "$d/gateway.addr" ] && break; sleep 0.1; done
export TABULA_MASTER=$(cat "$d/master.addr")
gw=$(cat "$d/gateway.addr")
results=$d/results.jsonl

scans=scan
for _ in $(seq 2 "$SCANS"); do scans=$scans,scan; done
same="--rows $ROWS --clients $CLIENTS --value-size $VALUE_SIZE --tablets $TABLETS --seed 7 --output json"
# run NAME ROUND ARGS...: one bench, its JSON lines tagged with NAME and ROUND.
run() {
  local name=$1 round=$2; shift 2
  "$BIN" bench $same "$@" 2>/dev/null | sed "s/^{/{\"api\":\"$name\",\"round\":$round,/" >> "$results"
}
for round in $(seq "$ROUNDS"); do
  for i in "${!apis[@]}"; do
    name=${apis[$(( (i + round - 1) % ${#apis[@]} ))]}
    case $name in
      native) api="--api tabula" ;;
      gateway) api="--api bigtable --bigtable-addr $gw" ;;
      emulator) api="--api emulator" ;;
    esac
    echo "== round $round: $name" >&2
    run "$name" "$round" $api --workloads "seqwrite,randwrite,seqread,randread,$scans"
    run "$name-batched" "$round" $api --batch "$BATCH" --workloads seqwrite,randwrite
  done
done

python3 - "$results" "$BATCH" <<'PY'
import json, statistics, sys
from collections import defaultdict
batch = sys.argv[2]
# (api, round, workload) -> [ops, seconds, p50s]; repeated scans add up.
acc = defaultdict(lambda: [0, 0.0, []])
for line in open(sys.argv[1]):
    r = json.loads(line)
    api, w = r["api"], r["workload"]
    if api.endswith("-batched"):
        api, w = api[:-8], w + " (batch %s)" % batch
    a = acc[(api, r["round"], w)]
    a[0] += r["ops"]; a[1] += r["seconds"]; a[2].append(r["p50_us"])
med = defaultdict(dict)  # workload -> api -> (median ops/s, all ops/s, median p50 µs)
for w in sorted({k[2] for k in acc}, key=lambda w: ["seqwrite", "randwrite", "seqread", "randread", "scan"].index(w.split()[0]) + (10 if "batch" in w else 0)):
    for api in ("native", "gateway", "emulator"):
        rates = [acc[k][0] / acc[k][1] for k in sorted(acc) if k[0] == api and k[2] == w]
        p50 = [statistics.median(acc[k][2]) for k in sorted(acc) if k[0] == api and k[2] == w]
        if rates:
            med[w][api] = (statistics.median(rates), rates, statistics.median(p50))
print("%-22s %28s %28s %28s %9s %9s" % ("workload (ops/s)", "native", "gateway", "emulator", "gw/nat", "emu/nat"))
ratio = lambda m, a: "%9.2f" % (m[a][0] / m["native"][0]) if a in m and "native" in m else "%9s" % "-"
for w, m in med.items():
    cell = lambda a: "%7.0f (%s) p50 %.0fµs" % (m[a][0], ",".join("%.0f" % x for x in m[a][1]), m[a][2]) if a in m else "-"
    print("%-22s %28s %28s %28s %s %s" % (w, cell("native"), cell("gateway"), cell("emulator"), ratio(m, "gateway"), ratio(m, "emulator")))
PY
