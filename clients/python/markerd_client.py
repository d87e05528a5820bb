"""A reference markerd client in Python: pynng (REQ socket) + protobuf modules generated from Protos/.

It proves that any language with NNG and protobuf can call markerd. Generate the modules first
(the test does this into a temporary folder):

    python3 -m grpc_tools.protoc -I Protos --python_out=OUT Protos/markerd/v1/*.proto

then put OUT on sys.path (or call ``load_protos(OUT)``) before importing this module's client.
"""
import itertools
import os
import random
import subprocess
import sys
import tempfile
import uuid

import pynng

SERVICE = "/markerd.v1.MarkerService/"
# Cluster mode: how many MOVED replies (the layer is held by another replica group) one call follows.
MAX_REDIRECTS = 3
_pb = None


def load_protos(out_dir=None, protos_dir=None):
    """Generates (if needed) and imports markerd.v1 protobuf modules; returns markerd_pb2."""
    global _pb
    if _pb is not None:
        return _pb
    here = os.path.dirname(os.path.abspath(__file__))
    protos_dir = protos_dir or os.path.join(here, "..", "..", "Protos")
    out_dir = out_dir or tempfile.mkdtemp(prefix="markerd-pb-")
    files = [os.path.join(root, f) for root, _, fs in os.walk(protos_dir) for f in fs if f.endswith(".proto")]
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", protos_dir, "--python_out=" + out_dir, *files],
                   check=True)
    sys.path.insert(0, out_dir)
    from markerd.v1 import markerd_pb2  # noqa: E402
    _pb = markerd_pb2
    return _pb


def _tls_config(url, ca_file, server_name, cert_file, key_file):
    """pynng's client TLSConfig: the server is always verified (against ``ca_file``; none: nothing
    is trusted) and must carry ``server_name``, by default the URL's host."""
    def read(path):
        with open(path) as f:
            return f.read()
    if (cert_file is None) != (key_file is None):
        raise ValueError("tls_cert_file and tls_key_file go together")
    host = url.split("://", 1)[1].rsplit(":", 1)[0].strip("[]")
    return pynng.TLSConfig(pynng.TLSConfig.MODE_CLIENT, server_name=server_name or host,
                           ca_string=read(ca_file) if ca_file else None,
                           own_cert_string=read(cert_file) if cert_file else None,
                           own_key_string=read(key_file) if key_file else None,
                           auth_mode=pynng.TLSConfig.AUTH_MODE_REQUIRED)


class MarkerdError(Exception):
    """A non-OK reply: ``code`` is the gRPC status name (e.g. "INVALID_ARGUMENT"); ``field_violations``
    lists the request fields at fault as (field path, description) pairs, e.g. ("markers[2].position.latitude", ...)."""

    def __init__(self, code, message, field_violations=()):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.field_violations = list(field_violations)


class MarkerdClient:
    """Blocking client. Every mutation carries a fresh idempotency key unless one is given.

    A ``tls+tcp://`` URL takes ``tls_ca_file`` (PEM: the CAs the server's certificate must chain to),
    optionally ``tls_server_name`` (the name that certificate must carry; default the URL's host) and
    ``tls_cert_file`` + ``tls_key_file`` (PEM: a client certificate, for a markerd started with
    ``--tls-client-ca``). Its first dial is synchronous, so a failed handshake (untrusted, expired or
    misnamed server certificate; a client certificate missing or refused) raises
    ``pynng.exceptions.CryptoError`` (or ``AuthenticationError``) here instead of every call timing
    out; a server not up yet (connection refused) is dialed in the background as for tcp://.

    ``auth_token``: a token of the server's ``--auth-file`` (``markerd token add``), sent with
    every request; None sends none.

    Cluster mode: a MOVED reply is followed to one of the endpoints it names (at most
    ``MAX_REDIRECTS`` times, the same idempotency key) and cached for the layer (``routes``), so the
    next call goes straight there; a cached endpoint that gives no reply is forgotten and the call
    goes to ``url`` again."""

    def __init__(self, url="tcp://127.0.0.1:7450", timeout_ms=10_000, tls_ca_file=None, tls_server_name=None,
                 tls_cert_file=None, tls_key_file=None, auth_token=None):
        self.pb = load_protos()
        self.auth_token = auth_token
        self.timeout_ms = timeout_ms
        self.routes = {}  # layer id -> the endpoint a MOVED reply named
        self._peers = {}  # such an endpoint -> its socket (plain tcp://: redirects within a cluster)
        self.sock = pynng.Req0(recv_timeout=timeout_ms, send_timeout=timeout_ms)
        if url.startswith("tls+"):
            try:
                self.sock.tls_config = _tls_config(url, tls_ca_file, tls_server_name, tls_cert_file, tls_key_file)
                self.sock.dial(url, block=True)
            except pynng.exceptions.ConnectionRefused:
                self.sock.dial(url, block=False)
            except Exception:
                self.sock.close()
                raise
        else:
            self.sock.dial(url, block=False)  # connects (and reconnects) in the background
        self._ids = itertools.count(1)
        # Cluster mode: the highest replicated-log sequence a reply carried (0 on a single node).
        self.last_sequence = 0

    def close(self):
        self.sock.close()
        for sock in self._peers.values():
            sock.close()

    def _socket(self, url):
        if url not in self._peers:
            self._peers[url] = pynng.Req0(recv_timeout=self.timeout_ms, send_timeout=self.timeout_ms)
            self._peers[url].dial(url, block=False)
        return self._peers[url]

    def call(self, method, request, response_type, idempotency_key=None, timeout_ms=0, min_sequence=0):
        """``min_sequence`` (cluster mode): the replica answers once it applied at least that
        sequence (e.g. ``last_sequence`` of a client that wrote through another replica)."""
        pb = self.pb
        envelope = pb.Request(method=SERVICE + method, payload=request.SerializeToString(), timeout_ms=timeout_ms,
                              min_sequence=min_sequence)
        if idempotency_key is not None:
            envelope.idempotency_key = idempotency_key
        if self.auth_token:
            envelope.auth_token = self.auth_token
        field = request.DESCRIPTOR.fields_by_number.get(1)
        layer = request.layer_id if field is not None and field.name == "layer_id" else ""
        for _ in range(MAX_REDIRECTS + 1):
            envelope.request_id = next(self._ids)
            routed = self.routes.get(layer)
            sock = self._socket(routed) if routed else self.sock
            try:
                sock.send(envelope.SerializeToString())
                data = sock.recv()
            except pynng.exceptions.NNGException:
                if not routed:
                    raise
                del self.routes[layer]  # the cached endpoint gave no reply: back to self.sock
                sock = self.sock
                sock.send(envelope.SerializeToString())
                data = sock.recv()
            reply = pb.Response()
            reply.ParseFromString(data)
            if reply.request_id != envelope.request_id:
                raise MarkerdError("INTERNAL", f"reply for request {reply.request_id}, expected {envelope.request_id}")
            self.last_sequence = max(self.last_sequence, reply.sequence)
            if reply.code != pb.MOVED or not layer or not reply.redirect.endpoints:
                break
            self.routes[layer] = random.choice(reply.redirect.endpoints)
        else:
            raise MarkerdError("MOVED", f"{reply.message} (more than {MAX_REDIRECTS} redirects)")
        if reply.code != pb.OK:
            raise MarkerdError(pb.Code.Name(reply.code), reply.message,
                               [(v.field, v.description) for v in reply.field_violations])
        out = response_type()
        out.ParseFromString(reply.payload)
        return out

    def _mutate(self, method, request, response_type, key):
        return self.call(method, request, response_type, idempotency_key=key or uuid.uuid4().hex)

    def create_layer(self, layer_id, min_marker_count=None, key=None):
        pb = self.pb
        req = pb.CreateLayerRequest(layer_id=layer_id)
        if min_marker_count is not None:
            req.options.tiling.min_marker_count = min_marker_count
        return self._mutate("CreateLayer", req, pb.CreateLayerResponse, key).layer

    def upsert_markers(self, layer_id, markers, key=None):
        pb = self.pb
        return self._mutate("UpsertMarkers", pb.UpsertMarkersRequest(layer_id=layer_id, markers=markers),
                            pb.UpsertMarkersResponse, key)

    def update_markers(self, layer_id, updates, key=None):
        """Partial updates: each ``pb.MarkerUpdate(id=..., marker=..., paths=[...])`` sets the fields its paths name."""
        pb = self.pb
        return self._mutate("UpdateMarkers", pb.UpdateMarkersRequest(layer_id=layer_id, updates=updates),
                            pb.UpdateMarkersResponse, key)

    def get_markers(self, layer_id, ids):
        pb = self.pb
        return self.call("GetMarkers", pb.GetMarkersRequest(layer_id=layer_id, ids=ids), pb.GetMarkersResponse)

    def remove_markers(self, layer_id, ids, key=None):
        pb = self.pb
        return self._mutate("RemoveMarkers", pb.RemoveMarkersRequest(layer_id=layer_id, ids=ids),
                            pb.RemoveMarkersResponse, key)

    def list_layers(self, page_size=0):
        """Every layer, in order of their ids, fetched page by page (page_size 0 = the server's default)."""
        pb = self.pb
        token = ""
        while True:
            page = self.call("ListLayers", pb.ListLayersRequest(page_size=page_size, page_token=token), pb.ListLayersResponse)
            yield from page.layers
            token = page.next_page_token
            if not token:
                return

    def layer_stats(self, layer_id):
        pb = self.pb
        return self.call("GetLayerStats", pb.GetLayerStatsRequest(layer_id=layer_id), pb.GetLayerStatsResponse).stats
