#!/bin/bash
# Local disk vs an object store (SeaweedFS, built by `make tools`): the
# same `tabula bench` against a 3-server dev cluster whose tablets live in
# DATA/data, then in SeaweedFS on this machine, alternating twice. Run from
# the repository root after `make build tools`.
set -e
store=$(mktemp -d /tmp/tabula-s3bench-store-XXXX)
.tools/bin/weed mini -dir="$store" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.port=19433 -volume.port=19440 \
  -filer.port=18988 -s3.port=18433 -s3.port.iceberg=0 -s3.port.lance=0 -webdav=false -admin.ui=false \
  -bucket=tabula > "$store.log" 2>&1 &
weed=$!
trap 'kill $weed; wait $weed 2>/dev/null; rm -rf "$store" "$store.log"' EXIT
for _ in $(seq 120); do curl -s -o /dev/null -f -I http://127.0.0.1:18433/tabula && break; sleep 0.5; done
ROWS=${ROWS:-10000}
for round in 1 2; do
  for mode in local s3; do
    d=$(mktemp -d /tmp/tabula-s3bench-XXXX)
    flags=""
    [ "$mode" = s3 ] && flags="--storage s3://tabula/bench-$round?endpoint=http://127.0.0.1:18433"
    bin/tabula dev --servers 3 --data "$d" --master-addr 127.0.0.1:0 $flags > "$d.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do [ -s "$d/master.addr" ] && break; sleep 0.1; done
    export TABULA_MASTER=$(cat "$d/master.addr")
    echo "== $mode, round $round"
    bin/tabula bench --rows "$ROWS" --clients 64 --workloads randwrite,randread,scan --seed 7
    bin/tabula bench --rows "$ROWS" --clients 8 --batch 100 --workloads seqwrite --seed 7 --table bench2
    kill -TERM $pid
    wait $pid || true
    rm -rf "$d" "$d.log"
  done
done
