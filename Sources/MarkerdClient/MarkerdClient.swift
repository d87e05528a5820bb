import MarkerdAPI
import MarkerdTransport
import Synchronization

/// Why a call failed: the transport (no reply), a non-OK status from the server, or a reply
/// that could not be decoded.
public enum ClientError: Error, CustomStringConvertible, Sendable {
    case transport(NNGError)
    /// A non-OK reply: its code, message and the request fields at fault (INVALID_ARGUMENT).
    case status(code: V1.Code, message: String, fieldViolations: [V1.FieldViolation])
    case malformedReply(String)

    public var description: String {
        switch self {
        case .transport(let e): return "transport: \(e)"
        case .status(let code, let message, _): return "\(code.name): \(message)"
        case .malformedReply(let m): return "malformed reply: \(m)"
        }
    }

    /// The status code, or UNAVAILABLE for a transport failure, INTERNAL for a malformed reply.
    public var code: V1.Code {
        switch self {
        case .transport: return .unavailable
        case .status(let code, _, _): return code
        case .malformedReply: return .internal
        }
    }

    /// The request fields a non-OK reply names (`Response.field_violations`); empty for others.
    public var fieldViolations: [V1.FieldViolation] {
        if case .status(_, _, let violations) = self { violations } else { [] }
    }
}

/// A blocking markerd client over one NNG REQ socket; safe to use from many threads at once
/// (each call has its own NNG context).
///
/// Mutations get a fresh random idempotency key unless the caller passes one, so NNG's resends
/// never apply a write twice. ``async`` has the same calls as `async` functions, for a Swift
/// backend (a Vapor or Hummingbird handler, a task group) that must not block its threads:
///
/// ```swift
/// // Package.swift: .package(path: "../markerd"), then .product(name: "MarkerdClient", package: "markerd")
/// import MarkerdAPI
/// import MarkerdClient
///
/// let markerd = try MarkerdClient(url: "tcp://127.0.0.1:7450", timeout: .seconds(5), authToken: token)
/// var shop = V1.Marker()
/// shop.id = "s1"
/// shop.position = V1.LatLng(latitude: 35.68, longitude: 139.76)
/// let reply = try await markerd.async.upsertMarkers(V1.UpsertMarkersRequest(layerID: "shops", markers: [shop]))
/// print(reply.createdCount)  // a retry with the same idempotencyKey: applies nothing twice
/// ```
public final class MarkerdClient: Sendable {
    public let url: String
    let transport: NNGRequestClient
    let timeout: Duration
    /// Sent as every request's `auth_token` (a token of the server's `--auth-file`); "" sends none.
    let authToken: String
    /// Scratch bytes of plain request encodings, kept between calls (`upsertMarkers`): at most
    /// `maxPooledScratches`, each as large as the largest batch's attributes it encoded.
    let scratches = Mutex<[EncodingScratch]>([])
    static let maxPooledScratches = 8
    /// The transport settings, for the endpoints MOVED answers name (their URL replaced).
    let configuration: ClientConfiguration
    /// Cluster mode: layer -> endpoint of the MOVED answers followed, and those endpoints'
    /// transports (``follow(_:hops:)``).
    let routes = Mutex(RedirectRoutes())
    /// The highest `Response.sequence` seen (cluster mode), see ``lastSequence``.
    private let sequence = Atomic<UInt64>(0)
    /// See `init`'s `readYourWrites`.
    public let readYourWrites: Bool

    /// Cluster mode: the highest replicated-log sequence this client's replies carried (a
    /// write's reply carries its record's sequence or a later one); 0 on a single node. Pass it
    /// as `min_sequence` to read these writes on any replica (``readYourWrites`` does it).
    public var lastSequence: UInt64 { sequence.load(ordering: .relaxed) }

    /// Raises ``lastSequence`` to `value` (e.g. a sequence another client or process wrote at),
    /// so that with ``readYourWrites`` the next reads see at least that state.
    public func observe(sequence value: UInt64) {
        sequence.max(value, ordering: .relaxed)
    }

    /// Dials `url` (the server may start later: the dial retries in the background).
    /// - Parameters:
    ///   - timeout: how long one call waits for its reply. Default 60 s.
    ///   - maxMessageBytes: largest reply accepted. Default 256 MiB.
    ///   - tls: CA, server name and client certificate for a `tls+tcp://` URL. A TLS handshake
    ///     that fails (untrusted, expired or misnamed server certificate; a client certificate
    ///     missing or refused) throws `.transport` here (`.cryptographic`, or
    ///     `.connectionShutdown` for a missing client certificate); see
    ///     `NNGRequestClient.init(configuration:)`.
    ///   - authToken: the token every request carries (`markerd token add`); default none.
    ///   - readYourWrites: cluster mode: every request carries ``lastSequence`` as its
    ///     `min_sequence`, so a read answered by any replica shows this client's writes (it waits
    ///     up to 2 s for that replica to apply them, else UNAVAILABLE). Default false.
    public init(url: String = "tcp://127.0.0.1:7450", timeout: Duration = .seconds(60),
                maxMessageBytes: Int = 256 << 20, tls: TLSClientFiles? = nil, authToken: String = "",
                readYourWrites: Bool = false) throws(ClientError) {
        self.url = url
        self.readYourWrites = readYourWrites
        self.timeout = timeout
        self.authToken = authToken
        configuration = ClientConfiguration(url: url, maxMessageBytes: maxMessageBytes, tls: tls)
        do {
            transport = try NNGRequestClient(configuration: configuration)
        } catch {
            throw .transport(error)
        }
    }

    /// Calls `method` ("UpsertMarkers" or the full "/markerd.v1.MarkerService/UpsertMarkers").
    ///
    /// Cluster mode: a MOVED answer (the layer is held by another replica group) is followed to
    /// one of the endpoints it names, at most ``maxRedirects`` times, with the same request and
    /// idempotency key; the endpoint is cached for the layer, so the next call for it goes
    /// straight there. A cached endpoint that gives no reply is forgotten and the call is sent
    /// to the configured URL again.
    public func call<Request: ProtoMessage, Response: ProtoMessage>(
        _ method: String, _ request: Request, as _: Response.Type = Response.self,
        idempotencyKey: String = "", timeoutMs: UInt32 = 0
    ) throws(ClientError) -> Response {
        try call(method, payload: request.serializedBytes(), idempotencyKey: idempotencyKey, timeoutMs: timeoutMs)
    }

    /// `call` with the request already encoded (`payload`).
    func call<Response: ProtoMessage>(
        _ method: String, payload: [UInt8], as _: Response.Type = Response.self,
        idempotencyKey: String = "", timeoutMs: UInt32 = 0
    ) throws(ClientError) -> Response {
        try call(method, payloadCount: payload.count, layerID: Self.layerID(method: envelopeMethod(method), payload: payload),
                 idempotencyKey: idempotencyKey, timeoutMs: timeoutMs) { out in
            payload.withUnsafeBytes { out.copyMemory(from: $0) }
        }
    }

    /// `call` with a request of `payloadCount` bytes that `writePayload` encodes straight into
    /// the transport's message, after the envelope's fields (one copy of a bulk load's request
    /// bytes, where an encoded array would be copied into protobuf-c's, packed into a third and
    /// copied into the message).
    /// `layerID`: the layer the payload names (nil for rpcs without one), for the redirect cache.
    func call<Response: ProtoMessage>(
        _ method: String, payloadCount: Int, layerID: String?, as _: Response.Type = Response.self,
        idempotencyKey: String = "", timeoutMs: UInt32 = 0,
        writePayload: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(ClientError) -> Response {
        let envelope = envelope(method, idempotencyKey: idempotencyKey, timeoutMs: timeoutMs)
        var (transport, cached) = route(layerID)
        var hops = 0
        while true {
            let replyBytes: [UInt8]
            do {
                replyBytes = try transport.call(requestSize: envelope.serializedSize(payloadCount: payloadCount), timeout: timeout,
                                                write: { envelope.write(payloadCount: payloadCount, into: $0, payload: writePayload) },
                                                read: { Array($0.bindMemory(to: UInt8.self)) })
            } catch {
                guard cached else { throw .transport(error) }
                forgetRoute(layerID)
                (transport, cached) = (self.transport, false)
                continue
            }
            switch try decodeReply(replyBytes, to: envelope, as: Response.self) {
            case .response(let response): return response
            case .moved(let redirect):
                hops += 1
                (transport, cached) = (try follow(redirect, hops: hops), true)
            }
        }
    }

    /// The envelope's `method` string of `method` (a short name gets the service's prefix).
    func envelopeMethod(_ method: String) -> String {
        method.hasPrefix("/") ? method : "/markerd.v1.MarkerService/" + method
    }

    /// The request envelope of one call: `method`'s full name, a random request id, the auth token,
    /// `payload` (empty for `call(_:payloadCount:...)`, which writes the payload in place).
    func envelope(_ method: String, payload: [UInt8] = [], idempotencyKey: String, timeoutMs: UInt32) -> V1.Request {
        var envelope = V1.Request()
        envelope.method = envelopeMethod(method)
        envelope.requestID = UInt64.random(in: 1...UInt64.max)
        envelope.idempotencyKey = idempotencyKey
        envelope.timeoutMs = timeoutMs
        envelope.authToken = authToken
        envelope.payload = payload
        if readYourWrites { envelope.minSequence = lastSequence }
        return envelope
    }

    /// The response message of the reply to `envelope`, or MOVED's redirect: `.status` for other
    /// codes, `.malformedReply` when it does not decode or answers another request. Raises
    /// ``lastSequence`` to the reply's.
    func decodeReply<Response: ProtoMessage>(_ replyBytes: [UInt8], to envelope: V1.Request,
                                                    as _: Response.Type) throws(ClientError) -> Reply<Response> {
        let reply: V1.Response
        do {
            reply = try V1.Response(serializedBytes: replyBytes)
        } catch {
            throw .malformedReply("undecodable Response envelope (\(replyBytes.count) bytes)")
        }
        guard reply.requestID == envelope.requestID else {
            throw .malformedReply("reply to request \(reply.requestID), expected \(envelope.requestID)")
        }
        observe(sequence: reply.sequence)
        if reply.code == .moved, let redirect = reply.redirect { return .moved(redirect) }
        guard reply.code == .ok else {
            throw .status(code: reply.code, message: reply.message, fieldViolations: reply.fieldViolations)
        }
        do {
            return .response(try Response(serializedBytes: reply.payload))
        } catch {
            throw .malformedReply("undecodable \(Response.self) payload")
        }
    }

    /// A mutation: like `call`, with an idempotency key (a fresh random one by default).
    public func mutate<Request: ProtoMessage, Response: ProtoMessage>(
        _ method: String, _ request: Request, as _: Response.Type = Response.self,
        idempotencyKey: String? = nil, timeoutMs: UInt32 = 0
    ) throws(ClientError) -> Response {
        try call(method, request, as: Response.self,
                 idempotencyKey: idempotencyKey ?? Self.newIdempotencyKey(), timeoutMs: timeoutMs)
    }

    /// 128 random bits as 32 hex digits.
    public static func newIdempotencyKey() -> String {
        let a = UInt64.random(in: 0...UInt64.max), b = UInt64.random(in: 0...UInt64.max)
        return hex(a) + hex(b)
    }

    private static func hex(_ v: UInt64) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }
}
