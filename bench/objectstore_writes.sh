#!/bin/bash
# Durable writes on SeaweedFS, binaries OLD and NEW alternated twice: a 3-server
# dev cluster on the store, 64-client random writes and 8-client batched
# sequential writes (tabula bench), with SeaweedFS's own request counts
# per 1,000 writes (what the commit log costs the store). Run from the
# repository root after `make build tools`, e.g.
#   OLD=/tmp/old/tabula NEW=bin/tabula ROWS=20000 bash bench/objectstore_writes.sh
ROWS=${ROWS:-20000}
OLD=${OLD:?the old tabula binary}
NEW=${NEW:-bin/tabula}
W=${TABULA_WEED:-.tools/bin/weed}
store=$(mktemp -d /tmp/tabula-writes-store-XXXX)
$W mini -dir="$store" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.port=19533 -volume.port=19540 \
  -filer.port=19088 -s3.port=19433 -s3.port.iceberg=0 -s3.port.lance=0 -webdav=false -admin.ui=false \
  -bucket=tabula -metricsPort=19534 > "$store.log" 2>&1 &
weed=$!
trap 'kill $weed; wait $weed 2>/dev/null; rm -rf "$store" "$store.log"' EXIT
for _ in $(seq 120); do curl -s -o /dev/null -f -I http://127.0.0.1:19433/tabula && break; sleep 0.5; done
requests() {
  curl -s http://127.0.0.1:19534/metrics | awk '/^SeaweedFS_s3_request_seconds_count/ {
    split($1, a, "type=\""); split(a[2], b, "\""); c[b[1]] += $2 } END { for (k in c) printf "%s=%d ", k, c[k] }'
}
per1000() {
  python3 -c '
import sys
def parse(s): return {k: int(v) for k, v in (p.split("=") for p in s.split())}
b, a, n = parse(sys.argv[1]), parse(sys.argv[2]), int(sys.argv[3])
print("  store requests per 1,000 ops:", " ".join("%s=%.1f" % (k, (a.get(k, 0) - b.get(k, 0)) * 1000 / n) for k in sorted(a) if a.get(k, 0) != b.get(k, 0)) or "none")
' "$1" "$2" "$3"
}
for round in 1 2; do
  for b in old new; do
    bin=$OLD; [ $b = new ] && bin=$NEW
    d=$(mktemp -d /tmp/tabula-writes-XXXX)
    echo "== $b round $round"
    $bin dev --servers 3 --data "$d" --master-addr 127.0.0.1:0 --http 127.0.0.1:0 --storage "s3://tabula/w-$b-$round?endpoint=http://127.0.0.1:19433" >> "$d.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do [ -s "$d/master.addr" ] && break; sleep 0.1; done
    export TABULA_MASTER=$(cat "$d/master.addr")
    for w in "--clients 64 --workloads randwrite" "--clients 8 --batch 100 --workloads seqwrite --table bench2"; do
      before=$(requests)
      $bin bench --rows "$ROWS" --seed 7 --keep $w | grep -v '^bench:'
      per1000 "$before" "$(requests)" "$ROWS"
    done
    kill -TERM $pid; wait $pid
    rm -rf "$d" "$d.log"
  done
done
