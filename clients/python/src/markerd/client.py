"""The markerd client: one NNG REQ socket, protobuf envelopes, a typed method per rpc.

The typed methods are made from the ``MarkerService`` descriptor of the generated modules, so an
rpc added to Protos/markerd/v1/markerd.proto gets its method at the next install, without edits here.
"""
import itertools
import random
import re
import time
import uuid

import pynng

from markerd.v1 import markerd_pb2 as pb

SERVICE = pb.DESCRIPTOR.services_by_name["MarkerService"]
PREFIX = f"/{SERVICE.full_name}/"

# The rpcs the server applies through its idempotency table (markerd's MutationKind): each call
# carries an idempotency key, a fresh random one unless the caller passes one, reused by every retry.
MUTATIONS = frozenset({"CreateLayer", "DeleteLayer", "RegisterIcon", "UpsertMarkers", "UpdateMarkers", "RemoveMarkers",
                       "ClearLayer", "MoveMarkers", "BeginDrag", "EndDrag", "CancelDrag", "CreateFence", "DeleteFence"})

# Cluster mode: how many MOVED answers (the layer is held by another replica group) one call follows.
MAX_REDIRECTS = 3

# Raised at once, never retried on another endpoint: the TLS configuration is wrong for the server.
_TLS_FAILURES = (pynng.exceptions.CryptoError, pynng.exceptions.AuthenticationError)


class MarkerdError(Exception):
    """A non-OK reply, or no reply at all. ``code`` is the gRPC status name ("INVALID_ARGUMENT",
    "UNAVAILABLE" when no endpoint answered); ``retry_after_ms`` is the server's hint with a quota's
    RESOURCE_EXHAUSTED, else 0."""

    def __init__(self, code, message, retry_after_ms=0):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retry_after_ms = retry_after_ms


def method_name(rpc):
    """The Python name of an rpc: "GetLayerStats" -> "get_layer_stats", "SignTileURL" -> "sign_tile_url"."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", rpc).lower()


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


class Client:
    """A blocking markerd client (one call at a time; use one Client per thread).

    ``urls``: one endpoint ("tcp://host:7450", "tls+tcp://host:7451") or several. The client dials
    them in order at its first call and keeps the first that accepts a connection (none: that call
    raises ``MarkerdError`` "UNAVAILABLE" at once, naming each refusal); when a call gets no reply (refused,
    reset, or nothing within ``timeout_ms``) it moves to the next and sends the call again, up to
    ``retries`` more times, with the same idempotency key, so that a mutation the first server did
    apply is not applied twice there. While connected, NNG itself resends an unanswered request every
    ``resend_ms`` (default 60 000) with the same key. UNAVAILABLE replies, and RESOURCE_EXHAUSTED
    ones with a ``retry_after_ms`` hint (a token's quota), are retried after that wait.

    ``timeout_ms``: how long one attempt waits for its reply (default 10 000 ms).

    TLS (``tls+tcp://`` URLs): ``tls_ca_file`` (PEM: the CAs the server's certificate must chain to),
    ``tls_server_name`` (the name it must carry; default the URL's host), ``tls_cert_file`` +
    ``tls_key_file`` (PEM: a client certificate, for a markerd started with ``--tls-client-ca``).
    A failed handshake raises ``pynng.exceptions.CryptoError`` (or ``AuthenticationError``) at once.

    ``auth_token``: a token of the server's ``--auth-file`` (``markerd token add``), sent with every
    request; None sends none.

    Cluster mode (``markerd --cluster``): a MOVED reply (the layer is held by another replica group)
    is followed to one of the endpoints it names, at most ``MAX_REDIRECTS`` times, with the same
    idempotency key, and that endpoint is cached for the layer (``cached_endpoint``), so the next call
    for it goes straight there. A cached endpoint that gives no reply is forgotten and the call goes
    to the configured ``urls`` again.

    ``last_sequence`` is the highest replicated-log sequence
    the replies carried (a write's reply carries its record's sequence or a later one; 0 on a single
    node). With ``read_your_writes=True`` every request carries it as ``min_sequence``, so a read
    answered by any replica shows this client's writes (the replica waits up to 2 s for them, else
    UNAVAILABLE, which is retried as above). Raise it by hand to read what another client wrote.

    Every rpc of ``MarkerService`` is a method named in snake case (``create_layer``,
    ``upsert_markers``, ``get_layer_stats``, ...). It takes the request message, or its fields as
    keywords, plus ``idempotency_key=`` and ``timeout_ms=`` (the server-side deadline, 0 = none),
    and returns the response message; a non-OK reply raises ``MarkerdError``.
    """

    def __init__(self, urls="tcp://127.0.0.1:7450", *, timeout_ms=10_000, retries=2, resend_ms=60_000,
                 tls_ca_file=None, tls_server_name=None, tls_cert_file=None, tls_key_file=None, auth_token=None,
                 read_your_writes=False):
        self.urls = [urls] if isinstance(urls, str) else list(urls)
        self.read_your_writes = read_your_writes
        self.last_sequence = 0
        if not self.urls:
            raise ValueError("no endpoint URL")
        self.timeout_ms = timeout_ms
        self.retries = retries
        self.resend_ms = resend_ms
        self.auth_token = auth_token
        self._tls = (tls_ca_file, tls_server_name, tls_cert_file, tls_key_file)
        self._index = 0  # the endpoint in use, or the next to try
        self._sock = None
        self._ids = itertools.count(1)
        self._routes = {}  # layer id -> the endpoint a MOVED reply named
        self._peers = {}  # such an endpoint -> its socket

    @property
    def url(self):
        """The endpoint the client is connected to, or will dial first."""
        return self.urls[self._index]

    def cached_endpoint(self, layer_id):
        """The endpoint a MOVED reply named for ``layer_id`` (cluster mode), or None."""
        return self._routes.get(layer_id)

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        for sock in self._peers.values():
            sock.close()
        self._peers.clear()

    def _peer(self, url):
        """The socket to an endpoint a MOVED reply named (dialed in the background, kept)."""
        sock = self._peers.get(url)
        if sock is None:
            sock = pynng.Req0(recv_timeout=self.timeout_ms, send_timeout=self.timeout_ms, resend_time=self.resend_ms)
            if url.startswith("tls+"):
                sock.tls_config = _tls_config(url, *self._tls)
            sock.dial(url, block=False)
            self._peers[url] = sock
        return sock

    def _forget(self, layer_id):
        """Drops ``layer_id``'s cached endpoint (and its socket) after it gave no reply."""
        url = self._routes.pop(layer_id, None)
        if url is not None and url not in self._routes.values():
            self._peers.pop(url).close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _connect(self):
        """Dials the endpoints in order from the current one; keeps the first that accepts."""
        failures = []
        for step in range(len(self.urls)):
            index = (self._index + step) % len(self.urls)
            url = self.urls[index]
            sock = pynng.Req0(recv_timeout=self.timeout_ms, send_timeout=self.timeout_ms, resend_time=self.resend_ms)
            try:
                if url.startswith("tls+"):
                    sock.tls_config = _tls_config(url, *self._tls)
                sock.dial(url, block=True)
            except _TLS_FAILURES + (ValueError, OSError):
                sock.close()
                raise
            except pynng.exceptions.NNGException as e:
                sock.close()
                failures.append(f"{url}: {e}")
                continue
            self._sock, self._index = sock, index
            return sock
        raise MarkerdError("UNAVAILABLE", "no endpoint accepts a connection: " + "; ".join(failures))

    def call(self, method, request, response_type=None, *, idempotency_key=None, timeout_ms=0):
        """Calls ``method`` ("UpsertMarkers" or "/markerd.v1.MarkerService/UpsertMarkers") with the
        request message; returns the reply as ``response_type`` (default: the rpc's output type)."""
        name = method.rsplit("/", 1)[-1]
        if response_type is None:
            response_type = _output_types.get(name)
            if response_type is None:
                raise ValueError(f"{name} is no rpc of {SERVICE.full_name}: pass its response_type")
        if idempotency_key is None and name in MUTATIONS:
            idempotency_key = uuid.uuid4().hex
        envelope = pb.Request(method=method if method.startswith("/") else PREFIX + method,
                              payload=request.SerializeToString(), timeout_ms=timeout_ms)
        if idempotency_key is not None:
            envelope.idempotency_key = idempotency_key
        if self.auth_token:
            envelope.auth_token = self.auth_token
        layer = _layer_id(request)
        failure = None
        attempt = hops = 0
        while attempt <= self.retries:
            envelope.request_id = next(self._ids)
            if self.read_your_writes:
                envelope.min_sequence = self.last_sequence
            routed = self._routes.get(layer) if layer else None
            try:
                sock = self._peer(routed) if routed else (self._sock or self._connect())
                sock.send(envelope.SerializeToString())
                data = sock.recv()
            except _TLS_FAILURES:
                raise
            except pynng.exceptions.NNGException as e:  # no reply: the next endpoint, the same key
                attempt += 1
                if routed:  # the cached endpoint: forget it, back to the configured ones
                    failure = f"{routed}: {e}"
                    self._forget(layer)
                    continue
                failure = f"{self.url}: {e}"
                if self._sock is not None:
                    self._sock.close()
                    self._sock = None
                self._index = (self._index + 1) % len(self.urls)
                continue
            reply = pb.Response()
            reply.ParseFromString(data)
            if reply.request_id != envelope.request_id:
                raise MarkerdError("INTERNAL", f"reply for request {reply.request_id}, expected {envelope.request_id}")
            self.last_sequence = max(self.last_sequence, reply.sequence)
            if reply.code == pb.MOVED and layer:
                hops += 1
                if hops > MAX_REDIRECTS or not reply.redirect.endpoints:
                    why = "no live member" if hops <= MAX_REDIRECTS else f"more than {MAX_REDIRECTS} redirects"
                    raise MarkerdError("MOVED", f"{reply.message} ({why})")
                self._routes[layer] = random.choice(reply.redirect.endpoints)
                continue
            retry = reply.code == pb.UNAVAILABLE or (reply.code == pb.RESOURCE_EXHAUSTED and reply.retry_after_ms)
            if retry and attempt < self.retries:
                attempt += 1
                time.sleep(reply.retry_after_ms / 1000)
                continue
            if reply.code != pb.OK:
                raise MarkerdError(pb.Code.Name(reply.code), reply.message, reply.retry_after_ms)
            out = response_type()
            out.ParseFromString(reply.payload)
            return out
        raise MarkerdError("UNAVAILABLE", f"no reply after {self.retries + 1} attempts; last: {failure}")


def _layer_id(request):
    """The layer a request names (field 1 is ``string layer_id`` in every such rpc), or None."""
    field = request.DESCRIPTOR.fields_by_number.get(1)
    if field is None or field.name != "layer_id" or field.type != field.TYPE_STRING:
        return None
    return request.layer_id or None


_output_types = {}


def _typed_method(rpc):
    request_type = getattr(pb, rpc.input_type.name)
    _output_types[rpc.name] = response_type = getattr(pb, rpc.output_type.name)

    def method(self, request=None, /, *, idempotency_key=None, timeout_ms=0, **fields):
        if request is None:
            request = request_type(**fields)
        elif fields:
            raise TypeError(f"{method.__name__}: pass a {request_type.__name__} or its fields, not both")
        return self.call(rpc.name, request, response_type, idempotency_key=idempotency_key, timeout_ms=timeout_ms)
    method.__name__ = method.__qualname__ = method_name(rpc.name)
    method.__annotations__ = {"request": request_type, "idempotency_key": str, "timeout_ms": int, "return": response_type}
    method.__doc__ = (f"{rpc.name}({request_type.__name__}) -> {response_type.__name__}"
                      + (" (a mutation: sent with an idempotency key)" if rpc.name in MUTATIONS else ""))
    return method


for _rpc in SERVICE.methods:
    setattr(Client, method_name(_rpc.name), _typed_method(_rpc))
