#!/usr/bin/env bash
# A development cluster on loopback: three nats-server with JetStream clustered over routes, and three
# markerd replicas of one replica group, each connected to all three NATS servers (docs/CLUSTER.md).
#
#   deploy/cluster/cluster.sh [options] start  [DIR]   write the configs, start everything, wait until it is up
#   deploy/cluster/cluster.sh [options] status [DIR]   each process, markerd's /healthz and /readyz, JetStream's
#                                                      meta leader and peers; exit 0 only when all six run
#   deploy/cluster/cluster.sh [options] stop   [DIR]   SIGTERM markerd, then NATS; SIGKILL what is left after 15 s
#
# DIR (default .build/cluster) holds everything: nats-N.conf, nats-N/ (JetStream's store), markerd-N/ (data
# directory), *.log, *.pid, and cluster.env, which `start` writes so that `status` and `stop` need no options.
#
# Options (before the command; an environment variable of the same name in capitals works too):
#   --base-port P      ports P..P+44 on 127.0.0.1 (default 14200), for replica N = 1, 2, 3:
#                        NATS client P+N, NATS route P+10+N, NATS monitoring (HTTP) P+20+N,
#                        markerd RPC tcp://127.0.0.1:P+30+N, markerd HTTP gateway 127.0.0.1:P+40+N
#   --markerd PATH     the markerd binary (default .build/release/markerd, else .build/debug/markerd)
#   --nats-server PATH default nats-server on PATH (Debian's package: apt-get install nats-server)
#   --group NAME       the replicas' --cluster-group (default default)
#   --timeout S        how long start waits for each step (default 60)
# MARKERD_ARGS (environment) is appended to every markerd command line, e.g. MARKERD_ARGS="--fsync off".
#
# Node names: NATS servers n1..n3 (cluster "markerd-dev"), markerd replicas m1..m3 (--node-id).
# Needs bash, curl and python3 (to read /jsz). The processes run detached; `stop` ends them by their pid files.
set -euo pipefail

die() { echo "cluster.sh: $*" >&2; exit 2; }

BASE_PORT=${BASE_PORT:-14200}
MARKERD=${MARKERD:-}
NATS_SERVER=${NATS_SERVER:-nats-server}
GROUP=${GROUP:-default}
TIMEOUT=${TIMEOUT:-60}
while [ $# -gt 0 ]; do
  case "$1" in
    --base-port) BASE_PORT=${2:?--base-port needs a port}; shift 2 ;;
    --markerd) MARKERD=${2:?--markerd needs a path}; shift 2 ;;
    --nats-server) NATS_SERVER=${2:?--nats-server needs a path}; shift 2 ;;
    --group) GROUP=${2:?--group needs a name}; shift 2 ;;
    --timeout) TIMEOUT=${2:?--timeout needs seconds}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    start|stop|status) break ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
COMMAND=${1:-}
DIR=${2:-.build/cluster}
[ -n "$COMMAND" ] || die "usage: cluster.sh [options] start|stop|status [DIR]"
[[ "$BASE_PORT" =~ ^[0-9]+$ ]] && [ "$BASE_PORT" -ge 1024 ] && [ "$BASE_PORT" -le 65490 ] ||
  die "--base-port must be 1024-65490, got $BASE_PORT"
NODES=(1 2 3)
ABS_DIR=$(cd "$DIR" 2>/dev/null && pwd || true)  # start sets it once DIR exists

# status and stop use what start recorded; an explicit option or variable given now is overridden.
if [ "$COMMAND" != start ] && [ -f "$DIR/cluster.env" ]; then
  # shellcheck source=/dev/null
  . "$DIR/cluster.env"
fi
nats_client_port() { echo $((BASE_PORT + $1)); }
nats_route_port() { echo $((BASE_PORT + 10 + $1)); }
nats_http_port() { echo $((BASE_PORT + 20 + $1)); }
markerd_rpc_port() { echo $((BASE_PORT + 30 + $1)); }
markerd_http_port() { echo $((BASE_PORT + 40 + $1)); }

# The pid in DIR/NAME.pid if that process is alive and still the one started here: its command line names its
# file under DIR (NAME.conf, or the data directory NAME), which a process that reused the pid would not.
live_pid() {
  local name=$1 pid
  [ -f "$DIR/$name.pid" ] || return 1
  pid=$(cat "$DIR/$name.pid")
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  # An exited process that nobody reaped yet (a zombie) is not running.
  grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null && return 1
  [ -n "$ABS_DIR" ] && tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline" | grep -qF -- "$ABS_DIR/$name" || return 1
  echo "$pid"
}

# HTTP status code of a GET on loopback, 000 when nothing answers.
http_code() { curl -s -o /dev/null -m 2 -w '%{http_code}' "http://127.0.0.1:$1$2" || true; }

# One line about JetStream's meta group from the NATS servers' monitoring endpoints (/jsz; only the meta
# leader lists the other peers): "meta leader n2, cluster size 3, peers n1 n2 n3 (all current)".
# Fails when no server answers.
jetstream_meta() {
  local i
  for i in "${NODES[@]}"; do
    curl -s -m 2 "http://127.0.0.1:$(nats_http_port "$i")/jsz" 2>/dev/null | tr -d '\n' || true
    echo
  done | python3 -c '
import json, sys
metas = []
for line in sys.stdin:
    try:
        metas.append(json.loads(line).get("meta_cluster") or {})
    except ValueError:
        pass
if not metas:
    sys.exit(1)
# The leader'"'"'s own view if it answered (it names every peer), else any server'"'"'s.
meta = next((m for m in metas if "replicas" in m), metas[0])
replicas = meta.get("replicas") or []
peers = sorted([meta["leader"]] + [r["name"] for r in replicas]) if "replicas" in meta else ["?"]
lagging = [r["name"] for r in replicas if not r.get("current")]
print("meta leader %s, cluster size %s, peers %s (%s)" % (meta.get("leader") or "none", meta.get("cluster_size", 0),
      " ".join(peers), "lagging: " + " ".join(lagging) if lagging else "all current"))
'
}

write_nats_config() {
  local i=$1 routes="" j
  for j in "${NODES[@]}"; do routes+="    nats-route://127.0.0.1:$(nats_route_port "$j")"$'\n'; done
  cat > "$DIR/nats-$i.conf" <<EOF
# Written by deploy/cluster/cluster.sh: NATS server n$i of the development cluster.
server_name: n$i
listen: 127.0.0.1:$(nats_client_port "$i")
http: 127.0.0.1:$(nats_http_port "$i")
# Room for large writes (bulk upserts) in one message; NATS's default is 1 MB, it advises at most 8 MB.
max_payload: 8MB
jetstream {
  store_dir: "$ABS_DIR/nats-$i"
  max_memory_store: 256MB
  max_file_store: 4GB
}
cluster {
  name: markerd-dev
  listen: 127.0.0.1:$(nats_route_port "$i")
  routes: [
$routes  ]
}
EOF
}

# Waits until `check` succeeds, polling every 0.2 s, for at most TIMEOUT seconds.
await() {
  local what=$1; shift
  local deadline=$((SECONDS + TIMEOUT))
  until "$@"; do
    [ $SECONDS -lt $deadline ] || { echo "cluster.sh: timed out after ${TIMEOUT}s waiting for $what (logs in $DIR)" >&2; return 1; }
    sleep 0.2
  done
}
meta_leader_elected() { jetstream_meta 2>/dev/null | grep -q '^meta leader n[0-9], cluster size 3, peers n1 n2 n3'; }
markerd_healthy() { [ "$(http_code "$(markerd_http_port "$1")" /healthz)" = 200 ]; }
process_alive() { live_pid "$1" > /dev/null || { echo "cluster.sh: $1 exited; its log:" >&2; tail -20 "$DIR/$1.log" >&2; exit 1; }; }
nats_up() { process_alive "nats-$1"; [ "$(http_code "$(nats_http_port "$1")" /varz)" = 200 ]; }
markerd_up() { process_alive "markerd-$1"; markerd_healthy "$1"; }

start() {
  if [ -z "$MARKERD" ]; then
    for candidate in .build/release/markerd .build/debug/markerd; do
      [ -x "$candidate" ] && { MARKERD=$candidate; break; }
    done
  fi
  [ -n "$MARKERD" ] && [ -x "$MARKERD" ] || die "no markerd binary (build one with make release, or pass --markerd PATH)"
  command -v "$NATS_SERVER" > /dev/null || die "$NATS_SERVER not found (apt-get install nats-server, or --nats-server PATH)"
  local i running=()
  for i in "${NODES[@]}"; do
    live_pid "nats-$i" > /dev/null && running+=("nats-$i")
    live_pid "markerd-$i" > /dev/null && running+=("markerd-$i")
  done
  [ ${#running[@]} -eq 0 ] || die "already running in $DIR: ${running[*]} (cluster.sh stop $DIR first)"
  mkdir -p "$DIR"
  ABS_DIR=$(cd "$DIR" && pwd)
  MARKERD=$(cd "$(dirname "$MARKERD")" && pwd)/$(basename "$MARKERD")
  # A start that fails stops what it started (the logs stay), so that nothing is left behind half up.
  trap 'echo "cluster.sh: start failed; stopping what it started (logs in $DIR)" >&2; stop' EXIT
  printf 'BASE_PORT=%q\nMARKERD=%q\nNATS_SERVER=%q\nGROUP=%q\n' "$BASE_PORT" "$MARKERD" "$NATS_SERVER" "$GROUP" > "$DIR/cluster.env"

  local cluster_urls=""
  for i in "${NODES[@]}"; do
    write_nats_config "$i"
    cluster_urls+="${cluster_urls:+,}nats://127.0.0.1:$(nats_client_port "$i")"
    nohup "$NATS_SERVER" -c "$ABS_DIR/nats-$i.conf" >> "$DIR/nats-$i.log" 2>&1 < /dev/null &
    echo $! > "$DIR/nats-$i.pid"
  done
  for i in "${NODES[@]}"; do await "NATS server n$i" nats_up "$i"; done
  await "JetStream's meta leader among 3 peers" meta_leader_elected

  # --advertise/--advertise-http (the URLs clients are redirected to) exist once the shards' part is merged.
  local advertise=0
  "$MARKERD" --help 2>&1 | grep -q -- '--advertise ' && advertise=1
  for i in "${NODES[@]}"; do
    local rpc="tcp://127.0.0.1:$(markerd_rpc_port "$i")" http="127.0.0.1:$(markerd_http_port "$i")"
    local args=(--cluster "$cluster_urls" --node-id "m$i" --cluster-group "$GROUP"
                --listen "$rpc" --http "$http" --data-dir "$ABS_DIR/markerd-$i")
    [ $advertise = 1 ] && args+=(--advertise "$rpc" --advertise-http "http://$http")
    # shellcheck disable=SC2206
    args+=(${MARKERD_ARGS:-})
    mkdir -p "$DIR/markerd-$i"
    # The malloc tunables of deploy/markerd.service and `make run` (glibc reads them at startup only).
    GLIBC_TUNABLES=${GLIBC_TUNABLES-glibc.malloc.hugetlb=1} \
      nohup "$MARKERD" "${args[@]}" >> "$DIR/markerd-$i.log" 2>&1 < /dev/null &
    echo $! > "$DIR/markerd-$i.pid"
  done
  for i in "${NODES[@]}"; do await "markerd m$i's /healthz" markerd_up "$i"; done
  trap - EXIT
  status
}

status() {
  local i pid state all=0
  for i in "${NODES[@]}"; do
    if pid=$(live_pid "nats-$i"); then state="running (pid $pid)"; else state=stopped; all=3; fi
    printf 'nats-server n%s  %-20s client nats://127.0.0.1:%s  monitoring http://127.0.0.1:%s\n' \
      "$i" "$state" "$(nats_client_port "$i")" "$(nats_http_port "$i")"
  done
  for i in "${NODES[@]}"; do
    if pid=$(live_pid "markerd-$i"); then state="running (pid $pid)"; else state=stopped; all=3; fi
    local port; port=$(markerd_http_port "$i")
    printf 'markerd m%s      %-20s rpc tcp://127.0.0.1:%s  http http://127.0.0.1:%s  /healthz %s  /readyz %s\n' \
      "$i" "$state" "$(markerd_rpc_port "$i")" "$port" "$(http_code "$port" /healthz)" "$(http_code "$port" /readyz)"
  done
  echo "JetStream: $(jetstream_meta || echo 'no NATS monitoring endpoint answers')"
  return $all
}

# SIGTERM, then up to 15 s for the exit (markerd drains and exits within 10 s), then SIGKILL.
stop_process() {
  local name=$1 pid deadline
  if pid=$(live_pid "$name"); then
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + 15))
    while live_pid "$name" > /dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
    if live_pid "$name" > /dev/null; then
      echo "cluster.sh: $name (pid $pid) ignored SIGTERM for 15 s: SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    echo "stopped $name (pid $pid)"
  fi
  rm -f "$DIR/$name.pid"
}

stop() {
  local i
  for i in "${NODES[@]}"; do stop_process "markerd-$i"; done
  for i in "${NODES[@]}"; do stop_process "nats-$i"; done
}

case "$COMMAND" in
  start) start ;;
  status) status ;;
  stop) stop ;;
  *) die "unknown command $COMMAND (start, stop or status)" ;;
esac
