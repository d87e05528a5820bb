import MarkerdAPI
import MarkerdTransport
import Synchronization

extension MarkerdClient {
    /// How many MOVED answers (cluster mode: the layer is held by another replica group) one call
    /// follows before it throws `.status(code: .moved, ...)`: 3.
    public static let maxRedirects = 3

    /// Where a layer was last found (cluster mode): a MOVED answer's endpoint, cached so the next
    /// call for that layer goes straight there. Unset layers use the configured URL.
    public func cachedEndpoint(forLayer layerID: String) -> String? {
        routes.withLock { $0.layers[layerID] }
    }

    /// The transport for a call naming `layerID`: the cached endpoint's, or the configured one
    /// (`cached` false).
    func route(_ layerID: String?) -> (transport: NNGRequestClient, cached: Bool) {
        guard let layerID, let peer = routes.withLock({ r in r.layers[layerID].flatMap { r.peers[$0] } }) else {
            return (transport, false)
        }
        return (peer, true)
    }

    /// After a failed call on `layerID`'s cached endpoint: forget it, so the call goes to the
    /// configured URL (which answers MOVED again with the members alive now).
    func forgetRoute(_ layerID: String?) {
        guard let layerID else { return }
        _ = routes.withLock { $0.layers.removeValue(forKey: layerID) }
    }

    /// Follows a MOVED answer: one of the redirect's endpoints (at random, spreading clients over
    /// the group's replicas), remembered for its layer. Throws MOVED after ``maxRedirects`` hops
    /// or when the group has no live member.
    func follow(_ redirect: V1.Redirect, hops: Int) throws(ClientError) -> NNGRequestClient {
        guard hops <= Self.maxRedirects else {
            throw .status(code: .moved, message: "layer \(redirect.layerID): more than \(Self.maxRedirects) redirects "
                          + "(last to group \(redirect.group))", fieldViolations: [])
        }
        guard let endpoint = redirect.endpoints.randomElement() else {
            throw .status(code: .moved, message: "layer \(redirect.layerID) is held by replica group \(redirect.group), "
                          + "which has no live member", fieldViolations: [])
        }
        return try routes.withLock { r throws(ClientError) -> NNGRequestClient in
            r.layers[redirect.layerID] = endpoint
            if endpoint == url { return transport }
            if let peer = r.peers[endpoint] { return peer }
            var configuration = self.configuration
            configuration.url = endpoint
            do throws(NNGError) {
                let peer = try NNGRequestClient(configuration: configuration)
                r.peers[endpoint] = peer
                return peer
            } catch {
                r.layers[redirect.layerID] = nil
                throw .transport(error)
            }
        }
    }

    /// The layer a request of `method` names (field 1 of the rpcs that have one), or nil.
    static func layerID(method: String, payload: [UInt8]) -> String? {
        guard ProtoSchema.layerMethodPaths.contains(method) else { return nil }
        return payload.withUnsafeBytes { p in
            V1.layerIDRange(inPayload: p).map { String(decoding: UnsafeRawBufferPointer(rebasing: p[$0]), as: UTF8.self) }
        }
    }
}

/// The client's layer -> endpoint cache and the transports to endpoints other than its URL.
struct RedirectRoutes {
    /// Layer id -> the endpoint (NNG URL) a MOVED answer named.
    var layers: [String: String] = [:]
    /// Endpoint -> its transport (dialed once, kept for the client's life).
    var peers: [String: NNGRequestClient] = [:]
}

/// A reply: the method's response, or MOVED's redirect.
enum Reply<Response> {
    case response(Response)
    case moved(V1.Redirect)
}
