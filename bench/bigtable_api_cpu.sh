#!/bin/bash
# CPU per operation of the native and the Bigtable API path, which on a
# loaded machine tells more than rates do: one one-server dev cluster with
# its gateway (as bigtable_api.sh), and ROUNDS times, alternating the order,
# per path (native: --api tabula; gateway: --api bigtable) a table filled by
# an unbatched seqwrite, then each of WORKLOADS in a bench of its own. For
# every bench, the user+system CPU of the bench process (the client) and of
# the dev process (tablet server, master, etcd and the gateway, which runs
# in it) over it. Prints per workload the median CPU microseconds per
# operation (per row for scans) of each path and native/gateway (the rate
# ratio a CPU-bound run would reach). BATCHED (default none; e.g.
# "randwrite") are write workloads run after those, with --batch BATCH
# (default 100): CPU per row written. Run from the repository root; builds
# bin/tabula unless BIN names a binary.
set -e
ROWS=${ROWS:-20000}
CLIENTS=${CLIENTS:-16}
ROUNDS=${ROUNDS:-3}
WORKLOADS=${WORKLOADS:-randread,seqread,scan}
BATCHED=${BATCHED:-}
BATCH=${BATCH:-100}
export PATH=$PATH:/usr/local/go/bin
# BIN: the tabula binary to measure (e.g. one built from another commit,
# for old vs new runs); by default bin/tabula, built from this tree.
BIN=${BIN:-}
if [ -z "$BIN" ]; then
  go build -o bin/tabula ./cmd/tabula
  BIN=bin/tabula
fi

d=$(mktemp -d /tmp/tabula-btcpu-XXXX)
"$BIN" dev --servers 1 --data "$d" --master-addr 127.0.0.1:0 --gateway 127.0.0.1:0 --http "" > "$d.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid; wait $pid || true; rm -rf "$d" "$d.log"' EXIT
for _ in $(seq 300); do [ -s "$d/master.addr" ] && [ -s "$d/gateway.addr" ] && break; sleep 0.1; done
export TABULA_MASTER=$(cat "$d/master.addr")
gw=$(cat "$d/gateway.addr")
tick=$(getconf CLK_TCK)
results=$d/results.jsonl
devcpu() { awk -v t="$tick" '{printf "%.3f", ($14 + $15) / t}' /proc/$pid/stat; }
same="--rows $ROWS --clients $CLIENTS --value-size 1000 --tablets 8 --seed 7 --output json --keep"
# one NAME ROUND WORKLOAD ARGS...: one bench, with its CPU; LABEL, if
# set, names the workload in the results.
one() {
  local name=$1 round=$2 w=$3; shift 3
  local label=${LABEL:-$w}
  local before after ops
  before=$(devcpu)
  ops=$(/usr/bin/time -f "%U %S" -o "$d/time" "$BIN" bench $same "$@" --workloads "$w" 2>/dev/null |
    python3 -c 'import json,sys; print(sum(json.loads(l)["ops"] for l in sys.stdin))')
  after=$(devcpu)
  read -r u s < "$d/time"
  awk -v n="$name" -v r="$round" -v w="$label" -v o="$ops" -v u="$u" -v s="$s" -v b="$before" -v a="$after" 'BEGIN {
    printf "{\"api\":\"%s\",\"round\":%d,\"workload\":\"%s\",\"ops\":%d,\"client\":%.3f,\"dev\":%.3f}\n", n, r, w, o, u + s, a - b }' >> "$results"
}
apis=(native gateway)
for round in $(seq "$ROUNDS"); do
  for i in 0 1; do
    name=${apis[$(( (i + round - 1) % 2 ))]}
    case $name in
      native) api="--api tabula" ;;
      gateway) api="--api bigtable --bigtable-addr $gw" ;;
    esac
    echo "== round $round: $name" >&2
    table="cpu_${name}_$round"
    one "$name" "$round" seqwrite $api --table "$table"
    for w in ${WORKLOADS//,/ }; do
      one "$name" "$round" "$w" $api --table "$table"
    done
    for w in ${BATCHED//,/ }; do
      LABEL="$w/$BATCH" one "$name" "$round" "$w" $api --table "$table" --batch "$BATCH"
    done
  done
done

python3 - "$results" <<'PY'
import json, statistics, sys
from collections import defaultdict
per = defaultdict(list)  # (workload, api) -> [(µs/op, client µs/op, dev µs/op)]
order = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["workload"] not in order:
        order.append(r["workload"])
    n = r["ops"]
    per[(r["workload"], r["api"])].append(((r["client"] + r["dev"]) / n * 1e6, r["client"] / n * 1e6, r["dev"] / n * 1e6))
print("%-10s %34s %34s %12s" % ("CPU µs/op", "native (client + dev)", "gateway (client + dev)", "native/gw"))
for w in order:
    cell = {}
    for api in ("native", "gateway"):
        v = per[(w, api)]
        cell[api] = (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v), statistics.median(x[2] for x in v), [round(x[0], 1) for x in v])
    f = lambda c: "%6.1f (%5.1f + %5.1f) %s" % (c[0], c[1], c[2], c[3])
    print("%-10s %34s %34s %12.2f" % (w, f(cell["native"]), f(cell["gateway"]), cell["native"][0] / cell["gateway"][0]))
PY
