import MarkerdAPI
import MarkerdService

/// Turns one request envelope into one response envelope: decodes `Request`, checks the
/// deadline, routes `method` through the method table to the service, and encodes `Response`.
///
/// Failure modes, each answered with an error reply (never a crash):
/// - undecodable envelope or payload -> INVALID_ARGUMENT
/// - unknown method -> UNIMPLEMENTED
/// - `timeout_ms` expired before the work started -> DEADLINE_EXCEEDED (nothing applied)
/// - anything the service throws -> its code; an unexpected Swift error -> INTERNAL
public final class RPCDispatcher: Sendable {
    public static let servicePrefix = "/markerd.v1.MarkerService/"

    let service: MarkerService
    let routes: [String: Route]
    public let metrics: ServerMetrics

    public init(service: MarkerService, metrics: ServerMetrics = ServerMetrics()) {
        self.service = service
        self.metrics = metrics
        self.routes = MethodTable.routes(for: service)
    }

    /// Every method name the server answers, for documentation and tests.
    public var methodNames: [String] { routes.keys.sorted() }

    /// Handles one request. `reply` is called exactly once, possibly later and from another
    /// thread (mutations reply after their journal record is durable).
    public func handle(
        body: UnsafeRawBufferPointer,
        receivedAt: ContinuousClock.Instant,
        reply: @escaping @Sendable (V1.Response) -> Void
    ) {
        let request: V1.Request
        do {
            request = try V1.Request(serializedBytes: body)
        } catch {
            finish(method: "invalid", requestID: 0, receivedAt: receivedAt,
                   result: .failure(.invalidArgument("undecodable request envelope (\(body.count) bytes): \(error)")),
                   reply: reply)
            return
        }
        let requestID = request.requestID
        let method = request.method
        guard let route = routes[method] else {
            finish(method: "unknown", requestID: requestID, receivedAt: receivedAt,
                   result: .failure(RPCError(.unimplemented, "unknown method \"\(method)\"")), reply: reply)
            return
        }
        let deadline: ContinuousClock.Instant? =
            request.timeoutMs == 0 ? nil : receivedAt.advanced(by: .milliseconds(Int64(request.timeoutMs)))
        let context = CallContext(method: method, idempotencyKey: request.idempotencyKey, deadline: deadline)
        let short = context.shortMethod
        do {
            try context.checkDeadline()
        } catch {
            finish(method: short, requestID: requestID, receivedAt: receivedAt, result: .failure(error), reply: reply)
            return
        }
        switch route {
        case .read(let body):
            let result: Result<[UInt8], RPCError> = request.payload.withUnsafeBytes { p in
                do throws(RPCError) {
                    return .success(try body(p, context))
                } catch {
                    return .failure(error)
                }
            }
            finish(method: short, requestID: requestID, receivedAt: receivedAt, result: result, reply: reply)
        case .mutation(let kind):
            service.mutate(kind, payload: request.payload, context: context) { [self] result in
                finish(method: short, requestID: requestID, receivedAt: receivedAt, result: result, reply: reply)
            }
        }
    }

    /// A GetTile that `MarkerService.cachedTile` answers at once (a cached tile, or
    /// not_modified): the reply, or nil, and the caller hands the request to `handle`. Never
    /// waits, so the server calls it on the network thread before handing requests to the
    /// worker queue. Other requests cost a byte search: only small bodies that name GetTile are
    /// decoded.
    public func inlineReply(body: UnsafeRawBufferPointer, receivedAt: ContinuousClock.Instant) -> InlineTileReply? {
        guard let (request, tileRequest) = Self.inlineRequest(body, receivedAt, Self.getTileMethod, as: V1.GetTileRequest.self),
              let response = service.cachedTile(tileRequest)
        else { return nil }
        recordInline("GetTile", receivedAt)
        return InlineTileReply(requestID: request.requestID, response: response)
    }

    /// A grid GetClusters that `MarkerService.inlineClustersPayload` answers at once (mostly from
    /// the layer's memo of unchanged cluster subtrees): calls `respond` with the reply's size in
    /// bytes and a function that writes the reply (an `OKReplyEnvelope`) into a buffer of exactly
    /// that size, and returns true; or returns false without calling it, and the caller hands the
    /// request to `handle`. `respond` runs under the layer's read lock and its memo's lock: the
    /// memoized clusters are copied once, straight into the buffer it passes. Never waits, like
    /// `inlineReply`; the same bytes as `handle` would answer.
    public func inlineClustersReply(body: UnsafeRawBufferPointer, receivedAt: ContinuousClock.Instant,
                                    respond: (_ size: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Void) -> Void) -> Bool {
        guard let (request, clustersRequest) = Self.inlineRequest(body, receivedAt, Self.getClustersMethod, as: V1.GetClustersRequest.self)
        else { return false }
        let id = request.requestID
        let answered = service.inlineClustersPayload(clustersRequest) { size, fill in
            // `fill` is only called inside `respond`, which does not keep its closure.
            withoutActuallyEscaping(fill) { fill in
                respond(OKReplyEnvelope.headerSize(requestID: id, payloadCount: size) + size) { out in
                    OKReplyEnvelope.write(requestID: id, payloadCount: size, into: out, payload: fill)
                }
            }
        }
        if answered { recordInline("GetClusters", receivedAt) }
        return answered
    }

    /// A HitTest or QueryViewport that `MarkerService.inlineHitTestPayload` /
    /// `inlineQueryViewportPayload` answer at once (layer's read lock free, bounded work), or nil,
    /// and the caller hands the request to `handle`. Never waits, like `inlineReply`; the same
    /// bytes as `handle` would answer.
    public func inlineQueryReply(body: UnsafeRawBufferPointer, receivedAt: ContinuousClock.Instant) -> OKReplyEnvelope? {
        if let (request, hit) = Self.inlineRequest(body, receivedAt, Self.hitTestMethod, as: V1.HitTestRequest.self) {
            guard let payload = service.inlineHitTestPayload(hit) else { return nil }
            recordInline("HitTest", receivedAt)
            return OKReplyEnvelope(requestID: request.requestID, payload: payload)
        }
        guard let (request, viewport) = Self.inlineRequest(body, receivedAt, Self.queryViewportMethod, as: V1.QueryViewportRequest.self),
              let payload = service.inlineQueryViewportPayload(viewport)
        else { return nil }
        recordInline("QueryViewport", receivedAt)
        return OKReplyEnvelope(requestID: request.requestID, payload: payload)
    }

    /// The envelope and payload of a small request for `method` within its deadline, or nil.
    private static func inlineRequest<R: ProtoMessage>(_ body: UnsafeRawBufferPointer, _ receivedAt: ContinuousClock.Instant,
                                                       _ method: [UInt8], as _: R.Type) -> (V1.Request, R)? {
        guard body.count <= 512, contains(body, method),
              let request = try? V1.Request(serializedBytes: body),
              request.method.utf8.elementsEqual(method),
              request.timeoutMs == 0 || ContinuousClock.now < receivedAt.advanced(by: .milliseconds(Int64(request.timeoutMs))),
              let payload = request.payload.withUnsafeBytes({ try? R(serializedBytes: $0) })
        else { return nil }
        return (request, payload)
    }

    private func recordInline(_ method: Substring, _ receivedAt: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - receivedAt
        metrics.record(method: method, code: .ok,
                       micros: Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12)
    }

    static let getTileMethod = Array((servicePrefix + "GetTile").utf8)
    static let getClustersMethod = Array((servicePrefix + "GetClusters").utf8)
    static let hitTestMethod = Array((servicePrefix + "HitTest").utf8)
    static let queryViewportMethod = Array((servicePrefix + "QueryViewport").utf8)

    /// Whether `needle` occurs in `haystack`.
    static func contains(_ haystack: UnsafeRawBufferPointer, _ needle: [UInt8]) -> Bool {
        guard let first = needle.first, haystack.count >= needle.count else { return false }
        var i = 0
        while i <= haystack.count - needle.count {
            if haystack[i] == first && needle.indices.allSatisfy({ haystack[i + $0] == needle[$0] }) { return true }
            i += 1
        }
        return false
    }

    private func finish(
        method: Substring, requestID: UInt64, receivedAt: ContinuousClock.Instant,
        result: Result<[UInt8], RPCError>, reply: @Sendable (V1.Response) -> Void
    ) {
        reply(envelope(method: method, requestID: requestID, receivedAt: receivedAt, result: result))
    }

    /// The reply envelope of `result`, recorded in `metrics`.
    private func envelope(method: Substring, requestID: UInt64, receivedAt: ContinuousClock.Instant,
                          result: Result<[UInt8], RPCError>) -> V1.Response {
        var response = V1.Response()
        response.requestID = requestID
        switch result {
        case .success(let payload):
            response.code = .ok
            response.payload = payload
        case .failure(let error):
            response.code = error.code
            response.message = error.message
        }
        let elapsed = ContinuousClock.now - receivedAt
        let micros = Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12
        metrics.record(method: method, code: response.code, micros: micros)
        return response
    }
}

/// How one method is served.
enum Route: Sendable {
    /// Decodes the payload and answers synchronously (queries; also DragTo, which is not journaled).
    case read(@Sendable (UnsafeRawBufferPointer, CallContext) throws(RPCError) -> [UInt8])
    /// Goes through idempotency, the layer's write lock and the journal.
    case mutation(MutationKind)
}
