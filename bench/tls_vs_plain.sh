#!/bin/bash
# The cost of security: `tabula bench` against a 3-server dev cluster,
# plaintext and `--auth` (TLS on every port, a token checked on every
# call), alternating twice with the same settings and seed. Run from the
# repository root after `make build`; prints the four result tables.
set -e
for round in 1 2; do
  for mode in plain auth; do
    d=$(mktemp -d /tmp/tabula-tlsbench-XXXX)
    flags=""
    [ "$mode" = auth ] && flags="--auth"
    bin/tabula dev --servers 3 --data "$d" --master-addr 127.0.0.1:0 $flags > "$d.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do [ -s "$d/master.addr" ] && break; sleep 0.1; done
    export TABULA_MASTER=$(cat "$d/master.addr")
    unset TABULA_TLS_CA TABULA_TOKEN
    if [ "$mode" = auth ]; then
      export TABULA_TLS_CA=$d/tls/ca.pem TABULA_TOKEN=$(cat "$d/admin.token")
    fi
    echo "== $mode, round $round"
    bin/tabula bench --rows 20000 --clients 16 --workloads randwrite,randread,scan --seed 7
    kill -TERM $pid
    wait $pid || true
    rm -rf "$d" "$d.log"
  done
done
