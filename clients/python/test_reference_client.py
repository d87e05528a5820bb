"""Drives a real markerd process through the Python reference client (pynng + protobuf).

    python3 clients/python/test_reference_client.py --markerd .build/debug/markerd

Starts markerd on a free loopback port with a temporary data directory (and on a second one over
mutual TLS, with certificates made by the openssl command line tool), runs the tests, stops it,
and prints "N passed, N failed".
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback

import pynng  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from markerd_client import MarkerdClient, MarkerdError, load_protos  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The tls+tcp:// URL of the markerd under test and the directory of its certificates (set by main).
TLS = {}


def make_certificates(directory):
    """ca.pem signs server.pem and client.pem; other-ca.pem signs nothing markerd trusts. EC P-256 keys."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    def path(name, ext="pem"):
        return os.path.join(directory, f"{name}.{ext}")
    for ca in ("ca", "other-ca"):
        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", path(ca, "key"), "-out", path(ca), "-days", "2", "-subj", f"/CN={ca}")
    with open(path("san", "ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for name in ("server", "client"):
        run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", path(name, "key"), "-out", path(name, "csr"), "-subj", f"/CN={name}")
        run("x509", "-req", "-in", path(name, "csr"), "-CA", path("ca"), "-CAkey", path("ca", "key"),
            "-CAcreateserial", "-out", path(name), "-days", "2", "-extfile", path("san", "ext"))
    return path


def test_mutual_tls(client, pb):
    path, url = TLS["path"], TLS["url"]
    tls_client = MarkerdClient(url, tls_ca_file=path("ca"), tls_server_name="localhost",
                               tls_cert_file=path("client"), tls_key_file=path("client", "key"))
    try:
        tls_client.create_layer("py-tls")
        tls_client.upsert_markers("py-tls", [marker(pb, "t", 10, 20)])
        assert tls_client.layer_stats("py-tls").marker_count == 1
    finally:
        tls_client.close()
    assert client.layer_stats("py-tls").marker_count == 1  # the same server over tcp://
    refusals = {
        "no client certificate": dict(tls_ca_file=path("ca"), tls_server_name="localhost"),
        "server not signed by this CA": dict(tls_ca_file=path("other-ca"), tls_server_name="localhost",
                                             tls_cert_file=path("client"), tls_key_file=path("client", "key")),
        "another server name": dict(tls_ca_file=path("ca"), tls_server_name="markerd.example.com",
                                    tls_cert_file=path("client"), tls_key_file=path("client", "key")),
    }
    for what, options in refusals.items():
        try:
            MarkerdClient(url, **options).close()
            raise AssertionError(f"{what}: the TLS dial succeeded")
        except pynng.exceptions.NNGException as e:  # CryptoError; a missing client certificate: connection shut
            assert not isinstance(e, pynng.exceptions.Timeout), (what, e)


def marker(pb, mid, lat, lon, **kw):
    m = pb.Marker(id=mid, position=pb.LatLng(latitude=lat, longitude=lon), **kw)
    return m


def test_create_upsert_get_remove(client, pb):
    layer = client.create_layer("py-layer")
    assert layer.id == "py-layer", layer
    assert layer.options.tiling.min_marker_count == 2000, layer.options
    markers = [marker(pb, f"m{i}", 35.0 + i * 0.01, 139.0 + i * 0.01) for i in range(100)]
    markers[0].attributes["name"] = "Tokyo"
    markers[1].pin.label = "B"
    markers[1].pin.fill_color = 0xFF00FF00
    r = client.upsert_markers("py-layer", markers)
    assert (r.created_count, r.updated_count) == (100, 0), r
    got = client.get_markers("py-layer", ["m0", "m1", "nope"])
    assert [m.id for m in got.markers] == ["m0", "m1"], got
    assert list(got.missing_ids) == ["nope"]
    assert abs(got.markers[0].position.latitude - 35.0) < 1e-6
    assert got.markers[0].attributes["name"] == "Tokyo"
    assert got.markers[1].pin.label == "B" and got.markers[1].pin.fill_color == 0xFF00FF00
    assert got.markers[0].clickable and got.markers[0].visible and not got.markers[0].draggable
    r = client.remove_markers("py-layer", ["m0", "m1", "nope"])
    assert (r.removed_count, r.not_found_count) == (2, 1), r
    assert client.layer_stats("py-layer").marker_count == 98


def test_idempotent_resend(client, pb):
    client.create_layer("py-idem")
    m = [marker(pb, "a", 1, 1)]
    first = client.upsert_markers("py-idem", m, key="k-1")
    again = client.upsert_markers("py-idem", m, key="k-1")
    assert first == again and first.created_count == 1, (first, again)
    assert client.layer_stats("py-idem").marker_count == 1


def test_invalid_batch_changes_nothing(client, pb):
    client.create_layer("py-bad")
    bad = [marker(pb, "ok", 1, 1), marker(pb, "far-north", 89.0, 1)]
    try:
        client.upsert_markers("py-bad", bad)
        raise AssertionError("expected INVALID_ARGUMENT")
    except MarkerdError as e:
        assert e.code == "INVALID_ARGUMENT", e
        assert "far-north" in e.message and "latitude" in e.message, e.message
        assert [f for f, _ in e.field_violations] == ["markers[1].position.latitude"], e.field_violations
    assert client.layer_stats("py-bad").marker_count == 0


def test_update_one_label(client, pb):
    client.create_layer("py-update")
    client.upsert_markers("py-update", [marker(pb, "a", 10, 20, z_index=4, attributes={"name": "A"})])
    before = client.get_markers("py-update", ["a"]).markers[0]
    update = pb.MarkerUpdate(id="a", marker=pb.Marker(label=pb.MarkerLabel(text="Alpha")), paths=["label.text"])
    r = client.update_markers("py-update", [update])
    assert r.updated_count == 1, r
    after = client.get_markers("py-update", ["a"]).markers[0]
    before.label.text = "Alpha"
    assert after == before, (after, before)


def test_list_layers_pages(client, pb):
    for name in ("py-page-a", "py-page-b", "py-page-c"):
        client.create_layer(name)
    ids = [layer.id for layer in client.list_layers(page_size=2)]
    assert ids == sorted(ids) and {"py-page-a", "py-page-b", "py-page-c"} <= set(ids), ids
    try:
        list(client.list_layers(page_size=5000))
        raise AssertionError("expected INVALID_ARGUMENT")
    except MarkerdError as e:
        assert e.code == "INVALID_ARGUMENT" and [f for f, _ in e.field_violations] == ["page_size"], e


def test_unknown_method(client, pb):
    try:
        client.call("NoSuchMethod", pb.GetLayerRequest(layer_id="x"), pb.GetLayerResponse)
        raise AssertionError("expected UNIMPLEMENTED")
    except MarkerdError as e:
        assert e.code == "UNIMPLEMENTED", e


def wait_until_answering(client, pb, proc):
    """Waits until markerd answers anything (an error status counts: e.g. UNAUTHENTICATED)."""
    deadline = time.time() + 20
    while True:
        try:
            return client.call("ListLayers", pb.ListLayersRequest(), pb.ListLayersResponse)
        except MarkerdError:
            return None
        except Exception:
            if time.time() > deadline or proc.poll() is not None:
                raise
            time.sleep(0.1)


def check_auth_token(markerd, pb):
    """A markerd with --auth-file: no token is UNAUTHENTICATED, the token from `markerd token add` works
    on its layers and is PERMISSION_DENIED on others."""
    folder = tempfile.mkdtemp(prefix="markerd-py-auth-")
    tokens = os.path.join(folder, "tokens")
    token = subprocess.run([markerd, "token", "add", "py", "--scopes", "read,write,admin", "--layers", "py-*",
                            "--auth-file", tokens], check=True, capture_output=True, text=True).stdout.strip()
    url = f"tcp://127.0.0.1:{free_port()}"
    proc = subprocess.Popen([markerd, "--listen", url, "--ephemeral", "--auth-file", tokens],
                            stderr=subprocess.DEVNULL)
    try:
        anonymous = MarkerdClient(url)
        client = MarkerdClient(url, auth_token=token)
        wait_until_answering(anonymous, pb, proc)
        for who, layer, code in [(anonymous, "py-1", "UNAUTHENTICATED"), (client, "other-1", "PERMISSION_DENIED")]:
            try:
                who.create_layer(layer)
                raise AssertionError(f"expected {code}")
            except MarkerdError as e:
                assert e.code == code, e
        assert client.create_layer("py-1").id == "py-1"
        anonymous.close()
        client.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(folder, ignore_errors=True)


def start_nats(store_dir):
    """``nats-server -js`` (Debian's package) on a free loopback port, its store in ``store_dir``;
    returns (process, nats:// URL) once it accepts connections. Fails clearly when it is missing."""
    binary = shutil.which("nats-server") or next(
        (p for p in ("/usr/sbin/nats-server", "/usr/bin/nats-server") if os.access(p, os.X_OK)), None)
    if binary is None:
        raise AssertionError("nats-server not found: the cluster tests need it "
                             "(apt-get install nats-server, or scripts/install-deps.sh --test)")
    port = free_port()
    proc = subprocess.Popen([binary, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", store_dir],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"nats://127.0.0.1:{port}"
        except OSError:
            if time.time() > deadline or proc.poll() is not None:
                proc.kill()
                raise AssertionError(f"nats-server did not start on port {port}")
            time.sleep(0.05)


class ShardedPair:
    """A nats-server and two markerd replicas in cluster mode, group "a" and group "b" (ephemeral,
    free loopback ports): ``urls["a"]``, ``urls["b"]``, ``procs``; ``stop()`` ends them all."""

    def __init__(self, markerd):
        self.folder = tempfile.mkdtemp(prefix="markerd-py-cluster-")
        self.nats, self.nats_url = start_nats(os.path.join(self.folder, "js"))
        self.urls, self.procs = {}, {}
        for group in ("a", "b"):
            self.urls[group] = url = f"tcp://127.0.0.1:{free_port()}"
            self.procs[group] = subprocess.Popen(
                [markerd, "--listen", url, "--ephemeral", "--cluster", self.nats_url, "--cluster-group", group,
                 "--node-id", group + "1"], stderr=subprocess.DEVNULL)

    def stop(self):
        for proc in list(self.procs.values()) + [self.nats]:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(self.folder, ignore_errors=True)


def eventually(call, what):
    """``call()``'s result once it stops raising NOT_FOUND or MOVED (a replica learns a new placement,
    and of a replica that just started, from its NATS watchers within milliseconds); other errors
    are raised at once."""
    deadline = time.time() + 20
    while True:
        try:
            return call()
        except MarkerdError as e:
            if e.code not in ("NOT_FOUND", "MOVED") or time.time() > deadline:
                raise AssertionError(f"{what}: {e}")
            time.sleep(0.02)


def check_redirects(markerd, pb):
    """Cluster mode: a layer created on group a, asked for on group b, is answered MOVED naming a;
    the client follows it, caches the endpoint, and sends the next call straight there."""
    pair = ShardedPair(markerd)
    try:
        a, b = MarkerdClient(pair.urls["a"]), MarkerdClient(pair.urls["b"])
        wait_until_answering(a, pb, pair.procs["a"])
        wait_until_answering(b, pb, pair.procs["b"])
        a.create_layer("py-shard")
        assert eventually(lambda: b.layer_stats("py-shard"), "b follows to a").layer_id == "py-shard"
        assert b.routes == {"py-shard": pair.urls["a"]}, b.routes
        b.upsert_markers("py-shard", [marker(pb, "s1", 35, 139)])
        assert a.layer_stats("py-shard").marker_count == 1
        # What b answers itself: MOVED with the redirect, nothing done.
        raw = pynng.Req0(dial=pair.urls["b"], recv_timeout=10_000)
        raw.send(pb.Request(method="/markerd.v1.MarkerService/GetLayer", request_id=1,
                            payload=pb.GetLayerRequest(layer_id="py-shard").SerializeToString()).SerializeToString())
        reply = pb.Response.FromString(raw.recv())
        raw.close()
        assert reply.code == pb.MOVED and reply.redirect.group == "a", reply
        assert list(reply.redirect.endpoints) == [pair.urls["a"]], reply
        # b's own layers are served by b, uncached.
        b.create_layer("py-local")
        assert "py-local" not in b.routes and [l.id for l in b.list_layers()] == ["py-local"]
        a.close()
        b.close()
    finally:
        pair.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--markerd", required=True)
    args = ap.parse_args()
    pb = load_protos()
    data = tempfile.mkdtemp(prefix="markerd-py-")
    url = f"tcp://127.0.0.1:{free_port()}"
    TLS["url"] = f"tls+tcp://127.0.0.1:{free_port()}"
    certs = tempfile.mkdtemp(prefix="markerd-py-tls-")
    TLS["path"] = path = make_certificates(certs)
    proc = subprocess.Popen([args.markerd, "--listen", url, "--listen", TLS["url"], "--data-dir", data,
                             "--tls-cert", path("server"), "--tls-key", path("server", "key"),
                             "--tls-client-ca", path("ca")], stderr=subprocess.PIPE, text=True)
    passed = failed = 0
    try:
        client = MarkerdClient(url)
        deadline = time.time() + 20
        while True:  # wait until it answers
            try:
                client.call("ListLayers", pb.ListLayersRequest(), pb.ListLayersResponse)
                break
            except Exception:
                if time.time() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.1)
        for name, fn in sorted(globals().items()):
            if name.startswith("test_") and callable(fn):
                try:
                    fn(client, pb)
                    passed += 1
                    print(f"ok   {name}")
                except Exception:
                    failed += 1
                    print(f"FAIL {name}")
                    traceback.print_exc()
        client.close()
        for check in (check_auth_token, check_redirects):
            try:
                check(args.markerd, pb)
                passed += 1
                print(f"ok   {check.__name__}")
            except Exception:
                failed += 1
                print(f"FAIL {check.__name__}")
                traceback.print_exc()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(certs, ignore_errors=True)
    print(f"reference-client: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
