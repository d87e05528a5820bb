import Foundation
import MarkerdAPI
import MarkerdAuth
import MarkerdService
import Synchronization

/// markerd's access rules, shared by the RPC dispatcher and the HTTP gateway: the tokens of
/// `--auth-file` (nil: no authentication, every call allowed), the key of signed tile URLs, the
/// audit log and the CORS origins. ``reload()`` (SIGHUP) re-reads the auth file and the key and
/// reopens the audit log; whatever fails to load keeps its old state and is logged.
public final class AccessControl: Sendable {
    /// The token table; nil when markerd runs without `--auth-file`.
    public let authenticator: Authenticator?
    /// Where the signing key is read from; nil: no signed URLs.
    let signingKeyPath: String?
    private let signer: Mutex<TileSigner?>
    let audit: AuditLog?
    /// `--cors-origin` values; empty: `*` for what is served without a token, nothing otherwise.
    public let corsOrigins: [String]
    /// Per-token quotas (the auth file's `rps=`, `bps=`, `expensive=`).
    public let quotas = QuotaBook()

    /// The longest SignTileURL ttl: 7 days. The default: 1 hour.
    public static let maxSignedTTL: Int64 = 7 * 24 * 3600
    public static let defaultSignedTTL: Int64 = 3600

    /// Loads the auth file, the signing key (created beside the auth file as `PATH.tile-key`
    /// when neither it nor `--tile-signing-key-file` exists) and opens the audit log. Throws
    /// a message naming the file that failed.
    public init(configuration: MarkerdConfiguration) throws(AuthError) {
        authenticator = try configuration.authFile.map { path throws(AuthError) in try Authenticator(path: path) }
        signingKeyPath = configuration.tileSigningKeyFile ?? configuration.authFile.map { $0 + ".tile-key" }
        do {
            signer = Mutex(try signingKeyPath.map { path throws(AuthError) in try TileSigner.loadOrCreate(path: path) })
        } catch {
            throw AuthError(error.description + (configuration.tileSigningKeyFile == nil
                ? " (the default beside --auth-file; give --tile-signing-key-file PATH somewhere markerd may write, e.g. its data directory)" : ""))
        }
        do {
            audit = try configuration.auditLog.map { path throws(AuditLog.AuditLogError) in try AuditLog(path: path) }
        } catch {
            throw AuthError(error.description)
        }
        corsOrigins = configuration.corsOrigins
    }

    /// No authentication, no signing key, no audit (tests of the dispatcher alone).
    init() {
        authenticator = nil
        signingKeyPath = nil
        signer = Mutex(nil)
        audit = nil
        corsOrigins = []
    }

    /// Re-reads the auth file and the signing key, reopens the audit log (SIGHUP). Each part
    /// that fails keeps what it had; returns the errors (also logged).
    @discardableResult
    public func reload() -> [String] {
        var errors: [String] = []
        if let authenticator {
            do {
                let n = try authenticator.reload()
                Log.info("auth file reloaded", ["path": authenticator.path, "tokens": n])
            } catch {
                errors.append("\(error.description); keeping the tokens loaded before")
            }
        }
        if let signingKeyPath {
            do {
                let new = try TileSigner.loadOrCreate(path: signingKeyPath)
                signer.withLock { $0 = new }
            } catch {
                errors.append("\(error.description); keeping the key loaded before")
            }
        }
        do {
            try audit?.reopen()
        } catch {
            errors.append(error.description)
        }
        for e in errors { Log.error("reload failed", ["error": e]) }
        return errors
    }

    /// The current signing key, if any.
    var tileSigner: TileSigner? { signer.withLock { $0 } }

    // MARK: - RPC

    /// Who called and what, for the audit log and ListLayers.
    struct Caller: Sendable {
        /// nil without authentication.
        var grant: Grant?
        var access: MethodAccess?
        /// The layer the request names (only read when it is written to the audit log).
        var layer: String?
        /// Let in by the token's quotas (to be finished with the reply's size).
        var quotaAdmitted = false
        /// With RESOURCE_EXHAUSTED from a quota: the retry hint.
        var retryAfterMs: UInt32 = 0
    }

    /// Takes a call of `bytes` from its token's quotas (``QuotaBook``); RESOURCE_EXHAUSTED with
    /// a retry hint (also set in `caller`) when over them.
    func admitQuota(_ caller: inout Caller, bytes: Int) -> RPCError? {
        guard let grant = caller.grant, !grant.limits.isUnlimited else { return nil }
        if let refusal = quotas.admit(grant, bytes: bytes, expensive: caller.access?.expensive == true) {
            caller.retryAfterMs = refusal.retryAfterMilliseconds
            return .resourceExhausted("\(refusal.reason); retry after \(refusal.retryAfterMilliseconds) ms")
        }
        caller.quotaAdmitted = true
        return nil
    }

    /// Ends a call let in by ``admitQuota(_:bytes:)``: its reply's bytes, its expensive slot.
    func finishQuota(_ caller: Caller, replyBytes: Int) {
        guard caller.quotaAdmitted, let grant = caller.grant else { return }
        quotas.finish(grant, replyBytes: replyBytes, expensive: caller.access?.expensive == true)
    }

    /// Checks one call before any work: its token (`auth_token`'s bytes), the method's scope
    /// and the layer its payload names. UNAUTHENTICATED without a valid token, PERMISSION_DENIED
    /// outside its scopes or layers (or for a method with no access rule), INVALID_ARGUMENT when
    /// the layer cannot be read from the payload. Without an auth file, always allowed.
    func authorize(method: String, token: UnsafeRawBufferPointer,
                   payload: UnsafeRawBufferPointer) -> (caller: Caller, error: RPCError?) {
        guard let authenticator else { return (Caller(), nil) }
        let access = MethodAccess.table[method]
        var caller = Caller(access: access)
        var short: String { method.split(separator: "/").last.map(String.init) ?? method }
        // nil: the method names no layer, or its payload is not a well-formed message.
        let layerRange = access?.layerScoped == true ? V1.layerIDRange(inPayload: payload) : nil
        func layerName() -> String? {
            layerRange.map { String(decoding: UnsafeRawBufferPointer(rebasing: payload[$0]), as: UTF8.self) }
        }
        guard let grant = authenticator.grant(token: token) else {
            caller.layer = layerName()
            return (caller, RPCError(.unauthenticated, token.isEmpty ? "\(short) needs an auth_token" : "unknown auth_token"))
        }
        caller.grant = grant
        guard let access else {
            return (caller, RPCError(.permissionDenied, "\(short) has no access rule: refused to every token"))
        }
        guard grant.scopes.contains(access.scope) else {
            caller.layer = layerName()
            return (caller, RPCError(.permissionDenied, "token \(grant.name) lacks the \(access.scope) scope that \(short) needs"))
        }
        if access.layerScoped {
            guard let r = layerRange else {
                return (caller, .invalidArgument("undecodable \(short) payload (\(payload.count) bytes)"))
            }
            let allowed = grant.allows(access.scope, layer: UnsafeRawBufferPointer(rebasing: payload[r]))
            if !allowed || access.audited { caller.layer = layerName() }
            guard allowed else {
                return (caller, RPCError(.permissionDenied, "token \(grant.name) may not \(access.scope) layer \"\(caller.layer ?? "")\""))
            }
        }
        return (caller, nil)
    }

    /// Writes a finished call to the audit log when it is audited: a write or admin call, or any
    /// call refused for its token. DragTo only when refused.
    func audit(_ caller: Caller, method: Substring, code: V1.Code, requestID: UInt64) {
        guard let audit else { return }
        let refused = code == .unauthenticated || code == .permissionDenied
        guard refused || (caller.access?.audited == true && method != "DragTo") else { return }
        audit.record(token: caller.grant?.name, method: method, layer: caller.layer, code: code, requestID: requestID)
    }

    /// SignTileURL: a signed prefix for `request.layerID` (which must exist), valid for its ttl.
    func signTileURL(_ request: V1.SignTileURLRequest, service: MarkerService) throws(RPCError) -> V1.SignTileURLResponse {
        guard let signer = tileSigner else {
            throw .failedPrecondition("signed tile URLs need a key: start markerd with --auth-file or --tile-signing-key-file")
        }
        let layer = try service.getLayer(V1.GetLayerRequest(layerID: request.layerID)).layer
        let ttl = request.ttlSeconds == 0 ? Self.defaultSignedTTL : min(Int64(request.ttlSeconds), Self.maxSignedTTL)
        let expiry = Int64(Date().timeIntervalSince1970) + ttl
        let prefix = signer.prefix(layer: request.layerID, expiry: expiry)
        var response = V1.SignTileURLResponse()
        response.pathPrefix = prefix
        response.urlTemplate = prefix + "/tiles/\(request.layerID)/\(layer?.options?.tiling?.tileSize ?? 256)/{z}/{x}/{y}.png"
        response.expiresUnix = expiry
        return response
    }
}
