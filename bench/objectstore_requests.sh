#!/bin/bash
# Store requests per tablet load and per 1,000 operations, as the tablet
# servers count them (tabula bench --store-metrics): a 3-server dev cluster
# on SeaweedFS (`weed mini` on this machine, built by `make tools`), a
# table of TABLETS tablets created by the bench (the "tabletload" row: the
# loads of the creation), durable random writes, random reads, a scan;
# then the cluster is restarted (every tablet flushed, then loaded again
# with an SSTable per family) and the reads run again into a second bench
# table, whose creation gives a second "tabletload" row. Run from the
# repository root after `make build tools`; BIN picks the binary.
set -e
BIN=${BIN:-bin/tabula}
ROWS=${ROWS:-10000}
TABLETS=${TABLETS:-8}
store=$(mktemp -d /tmp/tabula-s3req-store-XXXX)
.tools/bin/weed mini -dir="$store" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.port=19533 -volume.port=19540 \
  -filer.port=19088 -s3.port=18533 -s3.port.iceberg=0 -s3.port.lance=0 -webdav=false -admin.ui=false \
  -bucket=tabula > "$store.log" 2>&1 &
weed=$!
d=$(mktemp -d /tmp/tabula-s3req-XXXX)
trap 'kill $pid 2>/dev/null; kill $weed; wait $weed 2>/dev/null; rm -rf "$store" "$store.log" "$d" "$d.log"' EXIT
for _ in $(seq 120); do curl -s -o /dev/null -f -I http://127.0.0.1:18533/tabula && break; sleep 0.5; done

start_dev() {
  rm -f "$d/master.addr" "$d/http.addr"
  "$BIN" dev --servers 3 --data "$d" --master-addr 127.0.0.1:0 --http 127.0.0.1:0 \
    --storage "s3://tabula/req?endpoint=http://127.0.0.1:18533" >> "$d.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do [ -s "$d/master.addr" ] && [ -s "$d/http.addr" ] && break; sleep 0.1; done
  export TABULA_MASTER=$(cat "$d/master.addr")
}
bench() { "$BIN" bench --rows "$ROWS" --seed 7 --keep --tablets "$TABLETS" --store-metrics "$(cat "$d/http.addr")" "$@" | grep -v '^bench:'; }

start_dev
bench --clients 64 --workloads randwrite,randread,scan
kill -TERM $pid; wait $pid || true
echo "-- restarted: every tablet flushed, loaded again with its SSTables"
start_dev
# Reads of the first table load its tablets again (the bench table
# exists, so its tabletload row counts none); a second table's creation
# is the second tabletload row.
bench --clients 64 --workloads randread
# The restarted servers' counters since their start (a write probe and a
# new shared log each, then the loads of the existing tablets, with their
# SSTables, then the reads above), per tablet load.
curl -s "http://$(cat "$d/http.addr")/metrics" | awk '
  /^tabula_tabletserver_tablet_loads_total/ { loads += $NF }
  /^tabula_tabletserver_store_requests_total/ { split($0, a, "kind=\""); split(a[2], b, "\""); c[b[1]] += $NF }
  END { printf "restarted servers since their start: %d loads;", loads
        for (k in c) if (c[k] > 0) printf " %s %d", k, c[k]; print "" }'
bench --clients 64 --workloads randwrite --table bench2
