#!/usr/bin/env python3
"""Tests deploy/cluster/cluster.sh: `start` brings up three nats-server that form one JetStream cluster (a meta
leader elected among 3 peers, agreed on by all three) and three markerd replicas connected to all of them (each
answers /healthz), `status` reports them, and `stop` leaves nothing running and nothing listening.

    python3 deploy/cluster/test_cluster.py --markerd .build/test/release/markerd

Ports: a free block of 45 on 127.0.0.1 found at random (seeded by SEED, default 39; ports in use are skipped). Exit status 0 on success;
a failure prints what differed and the cluster's logs, and stops the cluster.
"""
import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "cluster.sh")
NODES = (1, 2, 3)
# Port offsets from the base port (cluster.sh's --help): NATS client, route and monitoring, markerd RPC and HTTP.
OFFSETS = {"nats": 0, "route": 10, "monitor": 20, "rpc": 30, "http": 40}


def port(base, kind, node):
    return base + OFFSETS[kind] + node


def all_ports(base):
    return [port(base, kind, node) for kind in OFFSETS for node in NODES]


def free_base_port(rng):
    """A base port whose 15 ports all bind on 127.0.0.1 now."""
    for _ in range(200):
        base = rng.randrange(20000, 60000, 50)
        sockets = []
        try:
            for p in all_ports(base):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise SystemExit("no free block of ports found")


def get(url):
    """(status, body) of a GET; status 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


def await_condition(what, check, timeout=30):
    """Polls `check` (returns a value or None) every 0.1 s until it returns a value; fails after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


def meta_cluster(base, node):
    status, body = get(f"http://127.0.0.1:{port(base, 'monitor', node)}/jsz")
    return json.loads(body).get("meta_cluster") if status == 200 else None


def agreed_meta_leader(base):
    """The meta leader if all three servers name the same one in a group of 3, and the leader's own view (only the
    leader lists the other peers) names n1, n2 and n3, all current; else None."""
    metas = {node: meta_cluster(base, node) for node in NODES}
    if not all(metas.values()) or any(meta.get("cluster_size") != 3 for meta in metas.values()):
        return None
    leaders = {meta.get("leader") for meta in metas.values()}
    if len(leaders) != 1 or leaders == {None}:
        return None
    leader = leaders.pop()
    view = metas.get(int(leader[1:])) if leader in ("n1", "n2", "n3") else None
    replicas = (view or {}).get("replicas") or []
    if {leader} | {r["name"] for r in replicas} != {"n1", "n2", "n3"} or not all(r.get("current") for r in replicas):
        return None
    return leader


def running(pid):
    """Whether pid is a live process (an unreaped zombie is not)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except FileNotFoundError:
        return False


def listening(p):
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", p)) == 0


def run_script(base, markerd, command, directory):
    return subprocess.run([SCRIPT, "--base-port", str(base), "--markerd", markerd, "--timeout", "60", command,
                           directory], capture_output=True, text=True, timeout=180)


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def test(markerd, directory, base):
    started = run_script(base, markerd, "start", directory)
    check(started.returncode == 0, f"start exited {started.returncode}:\n{started.stdout}{started.stderr}")
    pids = {name: int(open(os.path.join(directory, f"{name}.pid")).read())
            for name in [f"nats-{n}" for n in NODES] + [f"markerd-{n}" for n in NODES]}
    check(all(running(pid) for pid in pids.values()), f"not all six processes run after start: {pids}")

    # One JetStream cluster: every server sees the same meta leader among n1, n2, n3.
    leader = await_condition("one meta leader agreed on by 3 JetStream peers", lambda: agreed_meta_leader(base))
    for node in NODES:
        status, body = get(f"http://127.0.0.1:{port(base, 'monitor', node)}/varz")
        varz = json.loads(body) if status == 200 else {}
        check(varz.get("server_name") == f"n{node}", f"n{node}'s /varz: server_name {varz.get('server_name')}")
        check(varz.get("cluster", {}).get("name") == "markerd-dev", f"n{node}'s /varz: cluster {varz.get('cluster')}")
        check(varz.get("jetstream", {}).get("config", {}).get("store_dir", "").startswith(
            os.path.join(os.path.abspath(directory), f"nats-{node}")), f"n{node}'s JetStream store is not under DIR")

    # Three markerd replicas, each told all three NATS servers, its node id and group, serving /healthz.
    cluster = ",".join(f"nats://127.0.0.1:{port(base, 'nats', n)}" for n in NODES)
    for node in NODES:
        status, _ = get(f"http://127.0.0.1:{port(base, 'http', node)}/healthz")
        check(status == 200, f"markerd m{node}'s /healthz answered {status}")
        argv = open(f"/proc/{pids[f'markerd-{node}']}/cmdline").read().split("\0")
        for flag, value in (("--cluster", cluster), ("--node-id", f"m{node}"), ("--cluster-group", "default"),
                            ("--listen", f"tcp://127.0.0.1:{port(base, 'rpc', node)}"),
                            ("--data-dir", os.path.join(os.path.abspath(directory), f"markerd-{node}"))):
            check(flag in argv and argv[argv.index(flag) + 1] == value, f"markerd m{node} runs {argv}, not {flag} {value}")
        check(listening(port(base, "rpc", node)), f"markerd m{node}'s RPC port is not listening")

    status = run_script(base, markerd, "status", directory)
    check(status.returncode == 0, f"status exited {status.returncode} with all six up:\n{status.stdout}")
    check(f"meta leader {leader}, cluster size 3, peers n1 n2 n3" in status.stdout, f"status:\n{status.stdout}")
    check(status.stdout.count("running (pid") == 6, f"status:\n{status.stdout}")

    stopped = run_script(base, markerd, "stop", directory)
    check(stopped.returncode == 0, f"stop exited {stopped.returncode}:\n{stopped.stdout}{stopped.stderr}")
    left = [f"{name} (pid {pid})" for name, pid in pids.items() if running(pid)]
    check(not left, f"still running after stop: {left}")
    bound = [p for p in all_ports(base) if listening(p)]
    check(not bound, f"ports still listening after stop: {bound}")
    after = run_script(base, markerd, "status", directory)
    check(after.returncode == 3 and after.stdout.count("stopped") == 6, f"status after stop:\n{after.stdout}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markerd", required=True, help="the markerd binary")
    args = parser.parse_args()
    rng = random.Random(int(os.environ.get("SEED", "39")))
    with tempfile.TemporaryDirectory(prefix="markerd-cluster-") as directory:
        base = free_base_port(rng)
        try:
            test(os.path.abspath(args.markerd), directory, base)
        except BaseException:
            for name in sorted(f for f in os.listdir(directory) if f.endswith(".log")):
                print(f"--- {name} (last 20 lines)", file=sys.stderr)
                print("".join(open(os.path.join(directory, name)).readlines()[-20:]), file=sys.stderr)
            run_script(base, args.markerd, "stop", directory)
            # What a broken stop left behind (its pid file is still there, and it runs from this directory).
            for name in (f for f in os.listdir(directory) if f.endswith(".pid")):
                pid = int(open(os.path.join(directory, name)).read())
                if running(pid) and directory in open(f"/proc/{pid}/cmdline").read():
                    os.kill(pid, signal.SIGKILL)
            raise
    print("deploy/cluster/cluster.sh: 3 NATS servers formed one JetStream cluster, 3 markerd replicas served "
          "/healthz, status reported them, stop left nothing running")


if __name__ == "__main__":
    main()
