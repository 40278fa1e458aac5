#!/bin/bash
# What the number of tablets written costs the commit log: 64 clients of
# durable unbatched random writes into a table of 1 tablet and of 16
# tablets, on the local disk and on SeaweedFS (built by `make tools`), one
# dev cluster of SERVERS tablet servers (default 1: every tablet on the same
# server, so both tables share one log) per backend, alternating ROUNDS
# times. Each table gets two rounds of writes: the first includes the
# tablets' loading right after the table was created, the second is
# steady state. BIN picks the tabula binary (default bin/tabula; build an older
# commit elsewhere to compare). Run from the repository root after
# `make build tools`.
set -e
ROWS=${ROWS:-10000}
ROUNDS=${ROUNDS:-2}
SERVERS=${SERVERS:-1}
BIN=${BIN:-bin/tabula}
store=$(mktemp -d /tmp/tabula-logbench-store-XXXX)
.tools/bin/weed mini -dir="$store" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.port=19633 -volume.port=19640 \
  -filer.port=19188 -s3.port=18633 -s3.port.iceberg=0 -s3.port.lance=0 -webdav=false -admin.ui=false \
  -bucket=tabula > "$store.log" 2>&1 &
weed=$!
trap 'kill $weed; wait $weed 2>/dev/null; rm -rf "$store" "$store.log"' EXIT
for _ in $(seq 120); do curl -s -o /dev/null -f -I http://127.0.0.1:18633/tabula && break; sleep 0.5; done
for mode in local s3; do
  d=$(mktemp -d /tmp/tabula-logbench-XXXX)
  flags=""
  [ "$mode" = s3 ] && flags="--storage s3://tabula/logbench?endpoint=http://127.0.0.1:18633"
  "$BIN" dev --servers "$SERVERS" --data "$d" --master-addr 127.0.0.1:0 $flags > "$d.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do [ -s "$d/master.addr" ] && break; sleep 0.1; done
  export TABULA_MASTER=$(cat "$d/master.addr")
  for round in $(seq "$ROUNDS"); do
    for tablets in 1 16; do
      echo "== $mode, $tablets tablet(s), round $round"
      "$BIN" bench --rows "$ROWS" --clients 64 --tablets $tablets --table "t$tablets-$round" \
        --workloads randwrite,randwrite --seed 7 | grep randwrite
    done
  done
  kill -TERM $pid; wait $pid || true
  rm -rf "$d" "$d.log"
done
