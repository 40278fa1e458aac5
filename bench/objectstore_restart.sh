#!/bin/bash
# SeaweedFS's own stall after a restart: `weed mini` on a folder, one PUT,
# then three times kill -9 and start again on the same folder, timing how
# long until it answers reads and the first and second PUT of data (a
# plain curl straight to its S3 port, no Tabula involved). Run from the
# repository root after `make tools`, e.g.
#   bash bench/objectstore_restart.sh
W=${TABULA_WEED:-.tools/bin/weed}
d=$(mktemp -d /tmp/tabula-restart-XXXX)
start() { $W mini -dir="$d" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.port=29533 -volume.port=29540 \
  -filer.port=29088 -s3.port=29433 -s3.port.iceberg=0 -s3.port.lance=0 -webdav=false -admin.ui=false \
  -bucket=tabula -metricsPort=29534 >> "$d.log" 2>&1 & pid=$!
  for _ in $(seq 240); do curl -s -o /dev/null -f -I http://127.0.0.1:29433/tabula && break; sleep 0.25; done; }
put() { curl -s -o /dev/null -w "%{http_code} %{time_total}s" -X PUT --data-binary @/etc/services "http://127.0.0.1:29433/tabula/$1"; }
start
echo "first start: PUT a $(put a) ; PUT b $(put b)"
for i in 1 2 3; do
  kill -9 $pid; wait $pid 2>/dev/null
  t0=$(date +%s.%N); start; t1=$(date +%s.%N)
  echo "restart $i: answered reads after $(echo "$t1 - $t0" | bc)s; first PUT $(put r$i-1); next PUT $(put r$i-2)"
done
kill $pid; wait $pid 2>/dev/null; rm -rf "$d" "$d.log"
