import Dispatch
import Foundation
import MarkerdAPI
import MarkerdAuth
import MarkerdServer
import MarkerdService

/// The cost of checking a request's token (`--auth-file`), in this process: the token lookup
/// alone (`Authenticator.grant`: a remembered token, and one seen for the first time or unknown,
/// which costs its SHA-256), and a GetLayer envelope through `RPCDispatcher.handle` without and
/// with an auth file of 1,000 tokens (the difference is everything the check adds: the lookup,
/// the method's rule, the layer read from the payload, the pattern match). Thread CPU time per
/// call, best of 5 rounds; not size-dependent (`--only auth`).
struct AuthBench {
    let table: Table

    static let tokens = 1_000
    static let calls = 200_000

    func run() throws {
        let dir = NSTemporaryDirectory() + "marker-bench-auth-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/tokens"
        var lines = ""
        var tokens: [String] = []
        for i in 0..<Self.tokens {
            let token = "mkd_" + Crypto.base64url(try Crypto.randomBytes(32))
            tokens.append(token)
            lines += TokenRecord(name: "t\(i)", digest: Crypto.sha256(Array(token.utf8)), scopes: [.read, .write],
                                 layers: [LayerPattern("tenant\(i)-*")!, LayerPattern("shared")!]).line + "\n"
        }
        try lines.write(toFile: path, atomically: true, encoding: .utf8)
        let authenticator = try Authenticator(path: path)
        let token = tokens[Self.tokens / 2]
        _ = authenticator.grant(token: token)

        Progress.log("auth: token lookups")
        let remembered = bestNanos(Self.calls) { _ in _ = authenticator.grant(token: token) }
        table.add(Row(size: "-", measure: "auth: token lookup, remembered token (Authenticator.grant), thread CPU",
                      value: Table.fixed(remembered, 0), unit: "ns/call",
                      target: Target(text: "well under 1 µs", met: remembered < 500),
                      note: "\(Self.tokens) tokens in the file; SipHash of the token's bytes + constant-time compare under a mutex; best of 5 rounds of \(Table.count(Self.calls))"))
        let unknown = (0..<20_000).map { _ in "mkd_" + Crypto.base64url((0..<32).map { _ in UInt8.random(in: 0...255) }) }
        let first = bestNanos(unknown.count) { i in _ = authenticator.grant(token: unknown[i]) }
        table.add(Row(size: "-", measure: "auth: token lookup, unknown or first-seen token (SHA-256 of the token, libmbedcrypto), thread CPU",
                      value: Table.fixed(first, 0), unit: "ns/call",
                      note: "digest looked up among \(Self.tokens) by its first 8 bytes, compared whole in constant time; "
                        + "a valid token pays this once, then is remembered"))

        Progress.log("auth: GetLayer through RPCDispatcher.handle, auth off and on")
        var config = MarkerdConfiguration()
        config.authFile = path
        config.tileSigningKeyFile = dir + "/key"
        let service = MarkerService()
        let open = RPCDispatcher(service: service)
        var create = V1.Request()
        create.method = RPCDispatcher.servicePrefix + "CreateLayer"
        create.idempotencyKey = "bench"
        create.payload = V1.CreateLayerRequest(layerID: "tenant500-a").serializedBytes()
        let created = DispatchSemaphore(value: 0)
        create.serializedBytes().withUnsafeBytes { raw in open.handle(body: raw, receivedAt: .now) { _ in created.signal() } }
        created.wait()
        let checked = RPCDispatcher(service: service, access: try AccessControl(configuration: config))
        var env = V1.Request()
        env.method = RPCDispatcher.servicePrefix + "GetLayer"
        env.requestID = 1
        env.payload = V1.GetLayerRequest(layerID: "tenant500-a").serializedBytes()
        let plain = env.serializedBytes()
        env.authToken = token
        let withToken = env.serializedBytes()
        /// GetLayer replies on the calling thread, before `handle` returns.
        final class Reply: @unchecked Sendable { var code = V1.Code.internal }
        let reply = Reply()
        func call(_ d: RPCDispatcher, _ bytes: [UInt8]) {
            reply.code = .internal
            bytes.withUnsafeBytes { raw in d.handle(body: raw, receivedAt: .now) { reply.code = $0.code } }
            precondition(reply.code == .ok, "GetLayer answered \(reply.code)")
        }
        let n = Self.calls / 4
        let off = bestNanos(n) { _ in call(open, plain) }
        let on = bestNanos(n) { _ in call(checked, withToken) }
        table.add(Row(size: "-", measure: "auth: GetLayer dispatched in process (RPCDispatcher.handle), without / with --auth-file, thread CPU",
                      value: "\(Table.fixed(off / 1000, 2)) / \(Table.fixed(on / 1000, 2))", unit: "µs/call",
                      ratio: String(format: "%.2fx", on / off),
                      target: Target(text: "check adds well under 1 µs", met: on - off < 500),
                      note: "the check adds \(Table.fixed(on - off, 0)) ns: envelope decode and service call included in both; "
                        + "best of 5 rounds of \(Table.count(n)), interleaved"))
    }

    /// The best (lowest) thread CPU time per call over 5 rounds of `count` calls of `body(i)`.
    private func bestNanos(_ count: Int, _ body: (Int) -> Void) -> Double {
        var best = Double.infinity
        for _ in 0..<5 {
            let cpu0 = Machine.threadCPUSeconds
            for i in 0..<count { body(i) }
            best = min(best, (Machine.threadCPUSeconds - cpu0) * 1e9 / Double(count))
        }
        return best
    }
}
