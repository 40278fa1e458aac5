#!/bin/bash
# Local disk vs an object store (SeaweedFS, built by `make tools`), side by
# side: a 3-server dev cluster whose tablets live in DATA/data, then in
# SeaweedFS on this machine, alternating ROUNDS times (default 2). Each run:
# 64-client durable unbatched random writes, batched sequential writes,
# random reads (warm), a scan, then the cluster is restarted (memtables
# flushed, block caches empty) and the random reads run again (cold), then
# the scan again (from SSTables, the file cache filled by the reads). For
# the store it prints the S3 requests each workload made (from SeaweedFS's
# own metrics), per 1,000 operations, and the requests the restarted
# cluster made until the store went quiet (every tablet loaded), per
# tablet. Run from the repository root after `make build tools`.
set -e
ROWS=${ROWS:-10000}
ROUNDS=${ROUNDS:-2}
store=$(mktemp -d /tmp/tabula-s3bench-store-XXXX)
.tools/bin/weed mini -dir="$store" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.port=19433 -volume.port=19440 \
  -filer.port=18988 -s3.port=18433 -s3.port.iceberg=0 -s3.port.lance=0 -webdav=false -admin.ui=false \
  -bucket=tabula -metricsPort=19434 > "$store.log" 2>&1 &
weed=$!
trap 'kill $weed; wait $weed 2>/dev/null; rm -rf "$store" "$store.log"' EXIT
for _ in $(seq 120); do curl -s -o /dev/null -f -I http://127.0.0.1:18433/tabula && break; sleep 0.5; done

# requests prints SeaweedFS's S3 request counts by type: "GET=12 PUT=40 ...".
requests() {
  curl -s http://127.0.0.1:19434/metrics | awk '/^SeaweedFS_s3_request_seconds_count/ {
    split($1, a, "type=\""); split(a[2], b, "\""); c[b[1]] += $2 } END { for (k in c) printf "%s=%d ", k, c[k] }'
}
# per1000 BEFORE AFTER OPS prints the difference per 1,000 operations.
per1000() {
  python3 -c '
import sys
def parse(s): return {k: int(v) for k, v in (p.split("=") for p in s.split())}
b, a, n = parse(sys.argv[1]), parse(sys.argv[2]), int(sys.argv[3])
print("  store requests per 1,000 ops:", " ".join("%s=%.1f" % (k, (a.get(k, 0) - b.get(k, 0)) * 1000 / n) for k in sorted(a) if a.get(k, 0) != b.get(k, 0)) or "none")
' "$1" "$2" "$3"
}

# per_load BEFORE waits until the store has been quiet for 2 s (the
# restarted servers loaded every tablet) and prints the requests since
# BEFORE per tablet of the two tables (the servers' start included: a
# write probe, the new shared logs).
per_load() {
  local now prev=""
  for _ in $(seq 60); do
    sleep 2; now=$(requests)
    [ "$now" = "$prev" ] && break
    prev=$now
  done
  local n
  n=$(for t in bench bench2; do bin/tabula table tablets "$t" --output json; done | grep -c '"id"')
  python3 -c '
import sys
def parse(s): return {k: int(v) for k, v in (p.split("=") for p in s.split())}
b, a, n = parse(sys.argv[1]), parse(sys.argv[2]), int(sys.argv[3])
d = {k: a.get(k, 0) - b.get(k, 0) for k in a}
print("  store requests per tablet load (%d tablets, the servers\x27 start included): %.1f:" % (n, sum(d.values()) / n),
      " ".join("%s=%.1f" % (k, v / n) for k, v in sorted(d.items()) if v))
' "$1" "$now" "$n"
}

start_dev() {
  bin/tabula dev --servers 3 --data "$1" --master-addr 127.0.0.1:0 --http 127.0.0.1:0 $2 >> "$1.log" 2>&1 &
  pid=$!
  rm -f "$1/master.addr"
  for _ in $(seq 300); do [ -s "$1/master.addr" ] && break; sleep 0.1; done
  export TABULA_MASTER=$(cat "$1/master.addr")
}

run() { # run MODE WORKLOAD-ARGS...: one bench workload, with request counts on the store
  local mode=$1; shift
  local before after
  before=$(requests)
  bin/tabula bench --rows "$ROWS" --seed 7 --keep "$@" | grep -v '^bench:'
  after=$(requests)
  [ "$mode" = s3 ] && per1000 "$before" "$after" "$ROWS"
  return 0
}

for round in $(seq "$ROUNDS"); do
  for mode in local s3; do
    d=$(mktemp -d /tmp/tabula-s3bench-XXXX)
    flags=""
    [ "$mode" = s3 ] && flags="--storage s3://tabula/bench-$round?endpoint=http://127.0.0.1:18433"
    echo "== $mode, round $round"
    start_dev "$d" "$flags"
    run $mode --clients 64 --workloads randwrite
    run $mode --clients 8 --batch 100 --workloads seqwrite --table bench2
    run $mode --clients 64 --workloads randread
    run $mode --clients 8 --workloads scan
    kill -TERM $pid; wait $pid || true
    echo "-- restarted: block caches empty, memtables flushed"
    before=$(requests)
    start_dev "$d" "$flags"
    [ "$mode" = s3 ] && per_load "$before"
    run $mode --clients 64 --workloads randread
    # Now from SSTables (the restart flushed every memtable), with the file
    # cache filled by the reads above.
    run $mode --clients 8 --workloads scan
    kill -TERM $pid; wait $pid || true
    rm -rf "$d" "$d.log"
  done
done
