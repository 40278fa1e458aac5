#!/bin/bash
# The cost of metrics: `tabula bench` against a 3-server dev cluster with
# metrics on (the default: gRPC interceptors on every server, engine
# callbacks, /metrics scraped every 5 s as Prometheus would, more often
# than its usual 15 s) and off (`--metrics=false`: no registry, no
# interceptors, no callbacks; /healthz still served), alternating ROUNDS
# times with the same settings and seed. Run from the repository root
# after `make build`; prints one line per workload and run, then the CPU
# the dev process (master, servers, etcd) used during the whole bench:
#   <mode> <round> <workload> <ops/s>
#   <mode> <round> cpu_seconds <s>
# On a shared machine throughput is noisy; the dev process's CPU per
# operation is the steadier measure of what metrics add.
set -e
ROUNDS=${ROUNDS:-5}
ROWS=${ROWS:-20000}
WORKLOADS=${WORKLOADS:-randwrite,randread,scan}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for round in $(seq "$ROUNDS"); do
  for mode in on off; do
    d=$(mktemp -d /tmp/tabula-metricsbench-XXXX)
    bin/tabula dev --servers 3 --data "$d" --master-addr 127.0.0.1:0 --gateway "" \
      --http 127.0.0.1:0 --metrics=$([ "$mode" = on ] && echo true || echo false) --log-level warn > "$d.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do [ -s "$d/master.addr" ] && [ -s "$d/http.addr" ] && break; sleep 0.1; done
    export TABULA_MASTER=$(cat "$d/master.addr")
    http=$(cat "$d/http.addr")
    scraper=""
    if [ "$mode" = on ]; then
      (while sleep 5; do curl -s -o /dev/null "http://$http/metrics"; done) &
      scraper=$!
    fi
    t0=$(ticks $pid)
    bin/tabula bench --rows "$ROWS" --clients 16 --workloads "$WORKLOADS" --seed 7 2>/dev/null |
      awk -v m="$mode" -v r="$round" '$1 ~ /^(seqwrite|randwrite|seqread|randread|scan)$/ {print m, r, $1, $4}'
    t1=$(ticks $pid)
    echo "$mode $round cpu_seconds $(echo "scale=2; ($t1 - $t0) / $(getconf CLK_TCK)" | bc)"
    [ -n "$scraper" ] && kill "$scraper"
    kill -TERM $pid
    wait $pid || true
    rm -rf "$d" "$d.log"
  done
done
