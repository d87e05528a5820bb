"""Tests of the installed ``markerd`` package against real markerd processes.

    .build/python-venv/bin/python clients/python/tests/test_client.py --markerd .build/debug/markerd

Run with the virtual environment's Python, where ``pip install ./clients/python`` put the package
(`make test` does both). Prints "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import pynng

import markerd
from markerd import Client, MarkerdError, pb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from test_reference_client import make_certificates  # noqa: E402  (openssl: a CA, server and client certificates)
from test_reference_client import ShardedPair, eventually  # noqa: E402  (nats-server + two markerd in groups a and b)

assert "site-packages" in markerd.__file__, f"markerd imported from {markerd.__file__}, not from the installed package"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_answering(client, proc):
    """Until the markerd process ``proc`` answers anything (an error status counts: e.g. UNAUTHENTICATED)."""
    deadline = time.time() + 20
    while True:
        try:
            client.get_server_info()
            return
        except MarkerdError as e:
            if e.code != "UNAVAILABLE":
                return
            if time.time() > deadline or proc.poll() is not None:
                raise
            time.sleep(0.05)


class Markerd:
    """A markerd process on a free loopback port (``--ephemeral``), stopped by ``stop``."""

    def __init__(self, binary, *args):
        self.url = f"tcp://127.0.0.1:{free_port()}"
        self.proc = subprocess.Popen([binary, "--listen", self.url, "--ephemeral", *args], stderr=subprocess.DEVNULL)

    def wait_until_answering(self, client):
        wait_until_answering(client, self.proc)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def marker(mid, lat, lon):
    return pb.Marker(id=mid, position=pb.LatLng(latitude=lat, longitude=lon))


def test_typed_methods_round_trip(server, markerd_binary):
    with Client(server.url) as client:
        layer = client.create_layer(layer_id="py-pkg").layer
        assert layer.id == "py-pkg", layer
        r = client.upsert_markers(layer_id="py-pkg", markers=[marker(f"m{i}", 35 + i * 0.01, 139) for i in range(10)])
        assert (r.created_count, r.updated_count) == (10, 0), r
        got = client.get_markers(pb.GetMarkersRequest(layer_id="py-pkg", ids=["m3", "nope"]))
        assert [m.id for m in got.markers] == ["m3"] and list(got.missing_ids) == ["nope"], got
        assert client.get_layer_stats(layer_id="py-pkg").stats.marker_count == 10
        assert "py-pkg" in [l.id for l in client.list_layers().layers]
        # ListMarkers pages through every marker once (storage order, so compared as sets).
        listed, token = [], ""
        while True:
            page = client.list_markers(layer_id="py-pkg", page_size=4, page_token=token)
            listed += [m.id for m in page.markers]
            token = page.next_page_token
            if not token:
                break
        assert sorted(listed) == sorted(f"m{i}" for i in range(10)), listed
        try:
            client.upsert_markers(layer_id="py-pkg", markers=[marker("far-north", 89, 0)])
            raise AssertionError("expected INVALID_ARGUMENT")
        except MarkerdError as e:
            assert e.code == "INVALID_ARGUMENT" and "far-north" in e.message, e


def test_every_rpc_reaches_its_method(server, markerd_binary):
    """Each rpc of the descriptor, called with an empty request, is known to the server (any
    status but UNIMPLEMENTED), so the method names and paths derived from the descriptor are right;
    and none is a mutation the client sends without an idempotency key (``markerd.MUTATIONS``)."""
    with Client(server.url) as client:
        for rpc in pb.DESCRIPTOR.services_by_name["MarkerService"].methods:
            try:
                getattr(client, markerd.method_name(rpc.name))()
            except MarkerdError as e:
                assert e.code != "UNIMPLEMENTED", (rpc.name, e)
                assert "idempotency_key is required" not in e.message, (rpc.name, e)
        try:
            client.call("NoSuchMethod", pb.GetLayerRequest(), pb.GetLayerResponse)
            raise AssertionError("expected UNIMPLEMENTED")
        except MarkerdError as e:
            assert e.code == "UNIMPLEMENTED", e


def test_next_endpoint_when_refused(server, markerd_binary):
    refused = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    with Client([refused, server.url]) as client:
        client.create_layer(layer_id="py-endpoints")
        assert client.url == server.url
    with Client([refused]) as client:
        try:
            client.list_layers()
            raise AssertionError("expected UNAVAILABLE")
        except MarkerdError as e:
            assert e.code == "UNAVAILABLE" and refused in e.message, e


def test_retry_after_timeout_reuses_the_key(server, markerd_binary):
    """The first endpoint takes the request and never answers: the call times out there and goes to
    the real server with the same idempotency key, so that key, sent again, replays the first reply
    (a second CreateLayer with another key would be ALREADY_EXISTS)."""
    silent_url = f"tcp://127.0.0.1:{free_port()}"
    with pynng.Rep0(listen=silent_url, recv_timeout=5000) as silent, \
            Client([silent_url, server.url], timeout_ms=300) as client:
        assert client.create_layer(layer_id="py-retry").layer.id == "py-retry"
        assert client.url == server.url
        first_try = pb.Request.FromString(silent.recv())
    assert first_try.method.endswith("/CreateLayer") and first_try.idempotency_key, first_try
    with Client(server.url) as direct:
        again = direct.call("CreateLayer", pb.CreateLayerRequest.FromString(first_try.payload),
                            idempotency_key=first_try.idempotency_key)
        assert again.layer.id == "py-retry", again
        try:
            direct.create_layer(layer_id="py-retry")
            raise AssertionError("expected ALREADY_EXISTS")
        except MarkerdError as e:
            assert e.code == "ALREADY_EXISTS", e


def test_mutual_tls(server, markerd_binary):
    """A tls+tcp:// endpoint with a client certificate works; a server certificate from another CA is
    refused at once (CryptoError), not retried on the next endpoint."""
    certs = tempfile.mkdtemp(prefix="markerd-pypkg-tls-")
    path = make_certificates(certs)
    tls_url = f"tls+tcp://127.0.0.1:{free_port()}"
    secured = Markerd(markerd_binary, "--listen", tls_url, "--tls-cert", path("server"), "--tls-key", path("server", "key"),
                      "--tls-client-ca", path("ca"))
    mine = dict(tls_server_name="localhost", tls_cert_file=path("client"), tls_key_file=path("client", "key"))
    try:
        with Client(secured.url) as plain:
            secured.wait_until_answering(plain)
        with Client(tls_url, tls_ca_file=path("ca"), **mine) as client:
            assert client.create_layer(layer_id="py-tls").layer.id == "py-tls"
        with Client([tls_url, secured.url], tls_ca_file=path("other-ca"), **mine) as client:
            try:
                client.list_layers()
                raise AssertionError("expected CryptoError")
            except pynng.exceptions.CryptoError:
                assert client.url == tls_url
    finally:
        secured.stop()
        shutil.rmtree(certs, ignore_errors=True)


def test_auth_token(server, markerd_binary):
    folder = tempfile.mkdtemp(prefix="markerd-pypkg-auth-")
    tokens = os.path.join(folder, "tokens")
    def add(name, *quota):
        return subprocess.run([markerd_binary, "token", "add", name, "--scopes", "read,write,admin", "--layers", "py-*",
                               "--auth-file", tokens, *quota], check=True, capture_output=True, text=True).stdout.strip()
    token = add("py")
    slow = add("py-slow", "--rps", "0.5")  # a bucket of one request, refilled every 2 s
    guarded = Markerd(markerd_binary, "--auth-file", tokens)
    try:
        with Client(guarded.url) as anonymous, Client(guarded.url, auth_token=token) as client:
            guarded.wait_until_answering(anonymous)
            for who, layer, code in [(anonymous, "py-1", "UNAUTHENTICATED"), (client, "other-1", "PERMISSION_DENIED")]:
                try:
                    who.create_layer(layer_id=layer)
                    raise AssertionError(f"expected {code}")
                except MarkerdError as e:
                    assert e.code == code, e
            assert client.create_layer(layer_id="py-1").layer.id == "py-1"
        # Over the quota: RESOURCE_EXHAUSTED with a retry hint; a client with retries waits that long and succeeds.
        with Client(guarded.url, auth_token=slow, retries=0) as impatient, \
                Client(guarded.url, auth_token=slow, retries=2) as patient:
            impatient.list_layers()
            try:
                impatient.list_layers()
                raise AssertionError("expected RESOURCE_EXHAUSTED")
            except MarkerdError as e:
                assert e.code == "RESOURCE_EXHAUSTED" and e.retry_after_ms > 0, e
            assert "py-1" in [layer.id for layer in patient.list_layers().layers]
    finally:
        guarded.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_cluster_redirects(server, markerd_binary):
    """Cluster mode: a client configured with group b's replica follows MOVED to group a, caches the
    endpoint, and when that endpoint is gone falls back to b, which names a's new replica."""
    pair = ShardedPair(markerd_binary)
    try:
        with Client(pair.urls["a"]) as a, Client(pair.urls["b"], timeout_ms=1000) as b:
            for group, client in (("a", a), ("b", b)):
                wait_until_answering(client, pair.procs[group])
            a.create_layer(layer_id="py-shard")
            stats = eventually(lambda: b.get_layer_stats(layer_id="py-shard"), "b follows to a")
            assert stats.stats.layer_id == "py-shard", stats
            assert b.cached_endpoint("py-shard") == pair.urls["a"]
            b.upsert_markers(layer_id="py-shard", markers=[marker("s1", 35, 139)])
            assert a.get_layer_stats(layer_id="py-shard").stats.marker_count == 1
            # a stops (and leaves the members); a2 of group a takes over the layer.
            pair.procs["a"].terminate()
            pair.procs["a"].wait(timeout=10)
            a2_url = f"tcp://127.0.0.1:{free_port()}"
            pair.procs["a2"] = subprocess.Popen(
                [markerd_binary, "--listen", a2_url, "--ephemeral", "--cluster", pair.nats_url,
                 "--cluster-group", "a", "--node-id", "a2"], stderr=subprocess.DEVNULL)
            with Client(a2_url) as a2:
                wait_until_answering(a2, pair.procs["a2"])
                # a2 applies group a's log from its start: it holds the layer and its marker.
                assert a2.get_layer_stats(layer_id="py-shard").stats.marker_count == 1
            deadline = time.time() + 20
            while True:  # until b names only a2 for group a
                try:
                    with Client(pair.urls["b"]) as fresh:
                        fresh.get_layer_stats(layer_id="py-shard")
                        if fresh.cached_endpoint("py-shard") == a2_url:
                            break
                except MarkerdError:
                    pass
                assert time.time() < deadline, "b never named a2"
                time.sleep(0.05)
            # The cached endpoint (a) gives no reply: back to b, MOVED to a2.
            assert b.get_layer_stats(layer_id="py-shard").stats.marker_count == 1
            assert b.cached_endpoint("py-shard") == a2_url
            # a2 killed (no goodbye): once its heartbeat ages out (3 s), b names no member of group a.
            pair.procs["a2"].kill()
            pair.procs["a2"].wait(timeout=10)
            deadline = time.time() + 20
            while True:
                try:
                    with Client(pair.urls["b"], timeout_ms=300, retries=0) as fresh:
                        fresh.get_layer_stats(layer_id="py-shard")
                except MarkerdError as e:
                    if e.code == "MOVED":
                        assert "no live member" in e.message, e
                        break
                assert time.time() < deadline, "b still names the killed a2"
                time.sleep(0.1)
    finally:
        pair.stop()


def test_subscriber_catches_up_after_a_disconnect(server, markerd_binary):
    """The Subscriber follows the feed; one closed meanwhile misses events, and a new one from the
    version it held catches up (GetChanges) without missing a change; FAILED_PRECONDITION once
    the history no longer reaches back."""
    feed_url = f"tcp://127.0.0.1:{free_port()}"
    publishing = Markerd(markerd_binary, "--publish", feed_url, "--change-history-count", "50")
    try:
        with Client(publishing.url) as client:
            publishing.wait_until_answering(client)
            loaded = client.create_layer(layer_id="live").layer.version
            model = {}

            def apply(change):
                if isinstance(change, pb.GetChangesResponse):
                    if change.cleared:
                        model.clear()
                    model.update({m.id: (m.position.latitude, m.position.longitude) for m in change.markers})
                    for mid in change.removed_ids:
                        model.pop(mid, None)
                elif change.kind == pb.CHANGE_KIND_REMOVE:
                    for mid in change.removed_ids:
                        model.pop(mid, None)
                else:
                    model.update({m.id: (m.position.latitude, m.position.longitude) for m in change.markers})

            def write(writer, i):
                if i % 5 == 4:
                    return writer.remove_markers(layer_id="live", ids=[f"m{i % 7}"]).layer_version
                return writer.upsert_markers(layer_id="live", markers=[marker(f"m{i % 7}", i * 0.1, i * 0.2)]).layer_version

            def follow(sub, start, n):
                """n writes from another thread (then one every 50 ms: a subscriber that connected late
                learns of what it missed from the next event), applied until the subscriber holds them."""
                written, stop = [], threading.Event()

                def writer_thread():
                    with Client(publishing.url) as writer:
                        for i in range(start, start + n):
                            written.append(write(writer, i))
                        while not stop.wait(0.05):
                            writer.upsert_markers(layer_id="live", markers=[marker("tick", 0, 0)])
                thread = threading.Thread(target=writer_thread)
                thread.start()
                try:
                    deadline = time.time() + 30
                    for change in sub:
                        apply(change)
                        if len(written) == n and sub.version >= written[-1]:
                            return start + n
                        assert time.time() < deadline, "the subscriber did not follow"
                finally:
                    stop.set()
                    thread.join()

            first = markerd.Subscriber(client, feed_url, "live", since=loaded, poll_ms=50)
            i = follow(first, 0, 30)
            first.close()
            held = first.version
            for _ in range(20):  # missed by everyone
                write(client, i)
                i += 1
            second = markerd.Subscriber(client, feed_url, "live", since=held, poll_ms=50)
            i = follow(second, i, 30)
            second.close()
            listed = client.list_markers(layer_id="live", page_size=1000).markers
            assert model == {m.id: (m.position.latitude, m.position.longitude) for m in listed}, (model, listed)

            # 60 more changes push `loaded` out of a history of 50: reload.
            for _ in range(60):
                write(client, i)
                i += 1
            stale = markerd.Subscriber(client, feed_url, "live", since=loaded, poll_ms=50)
            try:
                next(iter(stale))
                raise AssertionError("expected FAILED_PRECONDITION")
            except MarkerdError as e:
                assert e.code == "FAILED_PRECONDITION" and "reload" in e.message, e
            finally:
                stale.close()
    finally:
        publishing.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--markerd", required=True)
    args = ap.parse_args()
    server = Markerd(args.markerd)
    passed = failed = 0
    try:
        with Client(server.url) as client:
            server.wait_until_answering(client)
        for name, fn in sorted(globals().items()):
            if name.startswith("test_") and callable(fn):
                try:
                    fn(server, args.markerd)
                    passed += 1
                    print(f"ok   {name}")
                except Exception:
                    failed += 1
                    print(f"FAIL {name}")
                    traceback.print_exc()
    finally:
        server.stop()
    print(f"python package: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
