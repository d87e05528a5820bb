import Dispatch
import MarkerdAPI
import MarkerdAuth
import MarkerdService

/// Turns one request envelope into one response envelope: decodes `Request`, checks the
/// deadline, routes `method` through the method table to the service, and encodes `Response`.
///
/// Failure modes, each answered with an error reply (never a crash):
/// - undecodable envelope or payload -> INVALID_ARGUMENT
/// - unknown method -> UNIMPLEMENTED
/// - with an auth file: no or an unknown `auth_token` -> UNAUTHENTICATED, a method or layer
///   outside the token's scopes and layers -> PERMISSION_DENIED (``AccessControl``), over the
///   token's quotas -> RESOURCE_EXHAUSTED with `retry_after_ms` (``QuotaBook``); all before any work
/// - `timeout_ms` expired before the work started -> DEADLINE_EXCEEDED (nothing applied)
/// - anything the service throws -> its code, message and field violations (the request fields
///   an INVALID_ARGUMENT names); an unexpected Swift error -> INTERNAL
public final class RPCDispatcher: Sendable {
    public static let servicePrefix = "/markerd.v1.MarkerService/"

    let service: MarkerService
    let routes: [String: Route]
    public let metrics: ServerMetrics
    /// Tokens, scopes and the audit log; without an auth file every call is allowed.
    public let access: AccessControl
    /// Cluster mode's layer placement: requests for layers placed on another replica group are
    /// answered MOVED (``ShardRouter``). nil on a single node.
    public let shards: ShardRouter?

    public init(service: MarkerService, metrics: ServerMetrics = ServerMetrics(), access: AccessControl? = nil,
                shards: ShardRouter? = nil) {
        self.service = service
        self.metrics = metrics
        self.shards = shards
        let access = access ?? AccessControl()
        self.access = access
        self.routes = MethodTable.routes(for: service, access: access)
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
        let started = ContinuousClock.now
        let request: V1.Request
        do {
            request = try V1.request(body)
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
        var context = CallContext(method: method, idempotencyKey: request.idempotencyKey, deadline: deadline)
        let short = context.shortMethod
        metrics.record(stage: .queued, method: short, micros: ServerMetrics.micros(started - receivedAt))
        var token = request.authToken
        var (checked, refusal) = token.withUTF8 { t in
            request.payload.withUnsafeBytes { access.authorize(method: method, token: UnsafeRawBufferPointer(t), payload: $0) }
        }
        if refusal == nil { refusal = access.admitQuota(&checked, bytes: body.count) }
        let caller = checked
        if let refusal {
            finish(method: short, requestID: requestID, receivedAt: receivedAt, result: .failure(refusal), caller: caller, reply: reply)
            return
        }
        // Only methods without a layer list layers (ListLayers); the closure costs an allocation.
        if let grant = caller.grant, caller.access?.layerScoped == false { context.mayRead = { grant.allows(.read, layer: $0) } }
        do {
            try context.checkDeadline()
        } catch {
            finish(method: short, requestID: requestID, receivedAt: receivedAt, result: .failure(error), caller: caller, reply: reply)
            return
        }
        var placedHere: String?  // a layer CreateLayer placed on this group (released if the create fails)
        if let shards, let layer = request.payload.withUnsafeBytes({ Self.layerNamed(in: $0, method: method) }) {
            let redirect: V1.Redirect?
            if case .mutation(.createLayer) = route {
                do throws(RPCError) {
                    let target = (try? V1.CreateLayerRequest(serializedBytes: request.payload))?.group ?? ""
                    let wasPlaced = shards.placements.group(of: layer) != nil
                    redirect = try shards.placeNewLayer(layer, on: target)
                    if redirect == nil && !wasPlaced { placedHere = layer }
                } catch {
                    finish(method: short, requestID: requestID, receivedAt: receivedAt, result: .failure(error), caller: caller, reply: reply)
                    return
                }
            } else {
                redirect = shards.redirect(for: layer)
            }
            if let redirect {
                finish(method: short, requestID: requestID, receivedAt: receivedAt,
                       result: .failure(RPCError(.moved, "layer \(layer) is held by replica group \(redirect.group)")),
                       caller: caller, redirect: redirect, reply: reply)
                return
            }
        }
        let claimed = placedHere
        switch route {
        case .read(let body):
            let result: Result<[UInt8], RPCError> = request.payload.withUnsafeBytes { p in
                do throws(RPCError) {
                    // Cluster mode: read your writes made through another replica.
                    try service.waitUntilApplied(request.minSequence, timeout: deadline.map { $0 - .now })
                    return .success(try body(p, context))
                } catch {
                    return .failure(error)
                }
            }
            finish(method: short, requestID: requestID, receivedAt: receivedAt, result: result, caller: caller, reply: reply)
        case .mutation(let kind):
            service.mutate(kind, payload: request.payload, context: context) { [self] result in
                // Cluster mode: a layer gone (or never made) here gives its placement back, off
                // the journal's thread (a NATS round trip), before the reply.
                if let shards, kind == .deleteLayer || claimed != nil {
                    let layer = claimed ?? request.payload.withUnsafeBytes { Self.layerNamed(in: $0, method: method) } ?? ""
                    let gone = switch result {
                        case .success: kind == .deleteLayer
                        case .failure(let e): kind == .deleteLayer ? e.code == .notFound : e.code != .alreadyExists
                    }
                    if gone {
                        DispatchQueue.global().async { [self] in
                            shards.layerDeleted(layer)
                            finish(method: short, requestID: requestID, receivedAt: receivedAt, result: result, caller: caller, reply: reply)
                        }
                        return
                    }
                }
                finish(method: short, requestID: requestID, receivedAt: receivedAt, result: result, caller: caller, reply: reply)
            }
        }
    }

    /// Answers a request at once when it can without waiting, so that the server calls it on
    /// the network thread before handing requests to the worker queue:
    /// - GetTile of a cached tile (or not_modified: `MarkerService.cachedTile`);
    /// - a grid GetClusters mostly held in the layer's memo of unchanged cluster subtrees
    ///   (`MarkerService.inlineClustersPayload`; the memoized clusters are copied once, straight
    ///   into the buffer `respond` passes, under the layer's read lock and the memo's lock);
    /// - HitTest and QueryViewport of bounded work (`MarkerService.inlineHitTestPayload`,
    ///   `inlineQueryViewportPayload`; NATIVE pages of up to `inlinePageLimit` markers).
    /// Each only when the layer's locks are free (try-locks). Calls `respond` with the reply's
    /// size in bytes and a function that writes the reply into a buffer of exactly that size,
    /// and returns true: the same bytes as `handle` would answer. Otherwise returns false without
    /// calling it, and the caller hands the request to `handle`. The envelope is read in place
    /// (`V1.RequestHead`: no protobuf-c unpack, no copy of the payload, which is decoded from the
    /// request's bytes); an envelope it does not take (e.g. one with an idempotency key) goes to
    /// `handle`. Bodies over 512 bytes are not looked at. The auth token is checked here as in
    /// `handle` (``AccessControl/authorize(method:token:payload:)``); a refused call goes to
    /// `handle`, which refuses it the same way and writes the audit log.
    ///
    /// Records the `inline` and `reply` stages (``ServerMetrics/Stage``) of what it answers.
    public func answerInline(body: UnsafeRawBufferPointer, receivedAt: ContinuousClock.Instant,
                             respond handOff: (_ size: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Void) -> Void) -> Bool {
        var replyMicros = 0.0
        var replySize = 0  // the reply's bytes, once answered
        func respond(_ size: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Void) {
            replySize = size
            let start = ContinuousClock.now
            withoutActuallyEscaping(fill) { handOff(size, $0) }
            replyMicros = ServerMetrics.micros(since: start)
        }
        // Cluster mode: every answer carries the applied sequence (`Response.sequence`), which
        // the inline envelopes do not.
        guard body.count <= 512, !service.isReplicated, let head = V1.RequestHead(body), head.idempotencyKey.isEmpty, head.minSequence == 0,
              let method = Self.inlineMethods.first(where: { UnsafeRawBufferPointer(rebasing: body[head.method]).elementsEqual($0.bytes) }),
              head.timeoutMs == 0 || ContinuousClock.now < receivedAt.advanced(by: .milliseconds(Int64(head.timeoutMs)))
        else { return false }
        let id = head.requestID, payload = UnsafeRawBufferPointer(rebasing: body[head.payload])
        // Cluster mode: a layer held by another group is answered MOVED by `handle`.
        if let shards, let layer = Self.layerNamed(in: payload, method: method.fullName), shards.redirect(for: layer) != nil {
            return false
        }
        var caller: AccessControl.Caller?
        if access.authenticator != nil {
            let token = UnsafeRawBufferPointer(rebasing: body[head.authToken])
            var (checked, error) = access.authorize(method: method.fullName, token: token, payload: payload)
            // Answers here are bounded work: they take from the request and byte rates, never an expensive slot.
            checked.access?.expensive = false
            guard error == nil, access.admitQuota(&checked, bytes: body.count) == nil else { return false }
            caller = checked
        }
        defer {
            if let caller {
                if replySize > 0 {
                    access.finishQuota(caller, replyBytes: replySize)
                } else if caller.quotaAdmitted, let grant = caller.grant {
                    access.quotas.refund(grant, bytes: body.count, expensive: false)
                }
            }
        }
        /// An OK envelope around a payload of `size` bytes that `fill` writes in place.
        func respondEnveloped(_ size: Int, _ fill: @escaping (UnsafeMutableRawBufferPointer) -> Void) {
            respond(OKReplyEnvelope.headerSize(requestID: id, payloadCount: size) + size) { out in
                OKReplyEnvelope.write(requestID: id, payloadCount: size, into: out, payload: fill)
            }
        }
        var answered = false
        switch method.name {
        case "GetTile":
            if let r = Self.payload(payload, as: V1.GetTileRequest.self), let response = service.cachedTile(r) {
                let reply = InlineTileReply(requestID: id, response: response)
                respond(reply.size) { reply.write(into: $0) }
                answered = true
            }
        case "GetClusters":
            if let r = Self.payload(payload, as: V1.GetClustersRequest.self) {
                answered = service.inlineClustersPayload(r) { size, fill in
                    // `fill` is only called inside `respond`, which does not keep its closure.
                    withoutActuallyEscaping(fill) { fill in respondEnveloped(size, fill) }
                }
            }
        case "QueryViewport":
            // The payload written straight into the reply buffer (no 80 KB payload array and copy).
            if let r = Self.payload(payload, as: V1.QueryViewportRequest.self) {
                answered = service.inlineQueryViewportPayload(r, limitBudget: Self.inlinePageLimit) { size, fill in
                    // `fill` is only called inside `respond`, which does not keep its closure.
                    withoutActuallyEscaping(fill) { fill in respondEnveloped(size, fill) }
                }
            }
        default:
            if let hits = Self.payload(payload, as: V1.HitTestRequest.self).flatMap({ service.inlineHitTestPayload($0) }) {
                let reply = OKReplyEnvelope(requestID: id, payload: hits)
                respond(reply.size) { reply.write(into: $0) }
                answered = true
            }
        }
        if answered {
            metrics.recordInline(method: method.name, micros: ServerMetrics.micros(since: receivedAt), replyMicros: replyMicros)
        }
        return answered
    }

    /// Largest NATIVE QueryViewport page answered inline: 1,000 markers, the default page.
    ///
    /// Such a page is bounded CPU work (measured in markerd during marker-bench's rpc section at
    /// 1M markers: 170-240 µs of thread CPU, wall clock within a few µs of it, no waiting), so it
    /// does not block the nng thread; and answering it there takes out the hop to a worker
    /// thread and the reply's hand-off back to nng from a foreign thread (the worker path spent
    /// 15-25 µs at the median on the declined inline attempt, the queue hop and the second
    /// decode of the request, and up to milliseconds in the hop on a loaded machine). nng runs
    /// callbacks on a pool of 2 threads per core, so a few such pages at once still leave the
    /// others to serve; bigger pages (up to `MarkerConversion.maxBatch`) go to a worker.
    public static let inlinePageLimit = 1_000

    /// `payload` decoded as `R`, or nil.
    private static func payload<R: ProtoMessage>(_ payload: UnsafeRawBufferPointer, as _: R.Type) -> R? {
        try? R(serializedBytes: payload)
    }

    /// The methods `answerInline` may answer: short name, full name and the full name's bytes.
    static let inlineMethods: [(name: String, fullName: String, bytes: [UInt8])] =
        ["GetTile", "GetClusters", "HitTest", "QueryViewport"].map { ($0, servicePrefix + $0, Array((servicePrefix + $0).utf8)) }


    /// The layer a request of `method` names (field 1 of the methods that have one, from the
    /// descriptors: ``MethodAccess/layerScoped``), or nil.
    static func layerNamed(in payload: UnsafeRawBufferPointer, method: String) -> String? {
        guard MethodAccess.table[method]?.layerScoped == true, let r = V1.layerIDRange(inPayload: payload) else { return nil }
        return String(decoding: UnsafeRawBufferPointer(rebasing: payload[r]), as: UTF8.self)
    }

    private func finish(
        method: Substring, requestID: UInt64, receivedAt: ContinuousClock.Instant,
        result: Result<[UInt8], RPCError>, caller: AccessControl.Caller? = nil, redirect: V1.Redirect? = nil,
        reply: @Sendable (V1.Response) -> Void
    ) {
        var response = envelope(method: method, requestID: requestID, receivedAt: receivedAt, result: result)
        response.redirect = redirect
        if let caller {
            response.retryAfterMs = caller.retryAfterMs
            access.finishQuota(caller, replyBytes: response.payload.count)
            access.audit(caller, method: method, code: response.code, requestID: requestID)
        }
        let start = ContinuousClock.now
        reply(response)
        metrics.record(stage: .reply, method: method, micros: ServerMetrics.micros(since: start))
    }

    /// The reply envelope of `result`, recorded in `metrics`.
    private func envelope(method: Substring, requestID: UInt64, receivedAt: ContinuousClock.Instant,
                          result: Result<[UInt8], RPCError>) -> V1.Response {
        var response = V1.Response()
        response.requestID = requestID
        // Cluster mode: at least the write's log sequence (its record was applied before the
        // reply), or what a read saw; 0 (left out) on a single node.
        response.sequence = service.appliedSequence
        switch result {
        case .success(let payload):
            response.code = .ok
            response.payload = payload
        case .failure(let error):
            response.code = error.code
            response.message = error.message
            response.fieldViolations = error.fieldViolations
        }
        metrics.record(method: method, code: response.code, micros: ServerMetrics.micros(since: receivedAt))
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
