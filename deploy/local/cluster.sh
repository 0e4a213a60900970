#!/usr/bin/env bash
# Start, check and stop the local 3-node NATS JetStream cluster of deploy/local/n{1,2,3}.conf.
#
#   cluster.sh up | down | status
#
# Environment (set by deploy/cluster.mk):
#   NATS_SERVER  the nats-server binary (built from the pinned module into .bin/)
#   PRODUCER     bin/producer (creates ditto's streams R3)
#   NATSCLI      .bin/nats (optional: prints the streams' replica placement)
#   CLUSTER_DIR  state: stores, pid files, logs (default ditto-data/cluster)
#   SYNC         always (default, as deployed) | default (the server's 2-minute sync_interval)
#
# Processes are tracked by pid file and stopped by pid only (SIGTERM: a clean shutdown that
# flushes the stores), never by name.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
: "${NATS_SERVER:?NATS_SERVER unset}"
: "${CLUSTER_DIR:=ditto-data/cluster}"
: "${SYNC:=always}"
URLS="nats://127.0.0.1:14221,nats://127.0.0.1:14222,nats://127.0.0.1:14223"

alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

up() {
  mkdir -p "$CLUSTER_DIR"
  for i in 1 2 3; do
    pid="$CLUSTER_DIR/n$i.pid"
    if alive "$pid"; then echo "n$i already running (pid $(cat "$pid"))"; continue; fi
    conf="$here/n$i.conf"
    case "$SYNC" in
      always) ;;
      default) # the same node without the sync_interval line: the server's 2-minute default
        sed '/sync_interval:/d' "$conf" >"$CLUSTER_DIR/n$i.conf"; conf="$CLUSTER_DIR/n$i.conf" ;;
      *) echo "SYNC=$SYNC: want always or default" >&2; exit 2 ;;
    esac
    "$NATS_SERVER" -c "$conf" --store_dir "$CLUSTER_DIR/n$i" -P "$pid" -l "$CLUSTER_DIR/n$i.log" \
      </dev/null >/dev/null 2>&1 &
    echo "n$i started (pid $!), client nats://127.0.0.1:1422$i, log $CLUSTER_DIR/n$i.log"
  done
  # Every node accepts clients (bash's /dev/tcp: no curl needed on a fresh machine).
  deadline=$((SECONDS + 60))
  for i in 1 2 3; do
    until (exec 3<>"/dev/tcp/127.0.0.1/1422$i") 2>/dev/null; do
      if ((SECONDS > deadline)); then echo "n$i not listening after 60s; see $CLUSTER_DIR/n$i.log" >&2; exit 1; fi
      sleep 0.2
    done
  done
  # JetStream answers once the meta leader is elected: create (or scale) ditto's streams to
  # R3, retrying until the deadline because the first request can race the election.
  until out=$(DITTO_REPLICAS=3 "$PRODUCER" summary --nats-url "$URLS" --replicas 3 2>&1); do
    if ((SECONDS > deadline)); then echo "$out" >&2; exit 1; fi
    sleep 0.5
  done
  echo "JetStream cluster up (sync_interval: $SYNC): $URLS"
  if [[ -x "${NATSCLI:-}" ]]; then
    for s in DITTO_EVENTS DITTO_JOBS; do
      echo "  $s:"
      "$NATSCLI" --server "$URLS" stream info "$s" 2>/dev/null |
        grep -E '^ +(Replicas|Leader|Replica):' | sed 's/^ */    /' || true
    done
  fi
}

down() {
  local any=0
  for i in 1 2 3; do
    pid="$CLUSTER_DIR/n$i.pid"
    [[ -f "$pid" ]] || continue
    any=1
    p=$(cat "$pid")
    if kill -0 "$p" 2>/dev/null; then
      kill -TERM "$p"
      deadline=$((SECONDS + 30))
      while kill -0 "$p" 2>/dev/null; do
        if ((SECONDS > deadline)); then echo "n$i (pid $p) still running after 30s" >&2; exit 1; fi
        sleep 0.1
      done
      echo "n$i stopped (pid $p)"
    fi
    rm -f "$pid"
  done
  ((any)) || echo "no cluster running under $CLUSTER_DIR"
}

status() {
  for i in 1 2 3; do
    pid="$CLUSTER_DIR/n$i.pid"
    if alive "$pid"; then
      echo "n$i pid $(cat "$pid") nats://127.0.0.1:1422$i (monitoring http://127.0.0.1:1822$i/healthz)"
    else
      echo "n$i down"
    fi
  done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
