import MarkerdAPI
import MarkerdClient
import MarkerdServer
@testable import MarkerdService
import MarkerdTestSupport
import Testing

/// `--idempotency-ttl` and `--idempotency-max-bytes`, and idempotency keys over RPC.
@Suite struct IdempotencyOptionsTests {
    @Test("--idempotency-ttl takes 24h, 90m, 3600s (default 24h); --idempotency-max-bytes takes bytes (default 64 MiB)")
    func parsesOptions() throws {
        let defaults = try MarkerdConfiguration.parse([])
        #expect(defaults.idempotencyTTL == .seconds(24 * 3600) && defaults.idempotencyMaxBytes == 64 << 20)
        #expect(try MarkerdConfiguration.parse(["--idempotency-ttl", "24h"]).idempotencyTTL == .seconds(86_400))
        #expect(try MarkerdConfiguration.parse(["--idempotency-ttl", "90m"]).idempotencyTTL == .seconds(5_400))
        #expect(try MarkerdConfiguration.parse(["--idempotency-ttl", "3600s"]).idempotencyTTL == .seconds(3_600))
        #expect(try MarkerdConfiguration.parse(["--idempotency-ttl", "8784h"]).idempotencyTTL == MarkerdConfiguration.maxIdempotencyTTL)
        for bad in ["", "h", "24", "24d", "1.5h", "-1h", "0s", "8785h", "99999999999h", "24 h"] {
            #expect(throws: MarkerdConfiguration.ParseError.self, "\(bad)") { try MarkerdConfiguration.parse(["--idempotency-ttl", bad]) }
        }
        #expect(try MarkerdConfiguration.parse(["--idempotency-max-bytes", "1048576"]).idempotencyMaxBytes == 1 << 20)
        #expect(try MarkerdConfiguration.parse(["--idempotency-max-bytes", "0"]).idempotencyMaxBytes == 0)
        for bad in ["-1", "1073741825", "64MiB"] {
            #expect(throws: MarkerdConfiguration.ParseError.self, "\(bad)") { try MarkerdConfiguration.parse(["--idempotency-max-bytes", bad]) }
        }
    }

    @Test("the options reach the service's cache")
    func optionsReachTheCache() throws {
        let s = try TestServer { c in
            c.idempotencyTTL = .seconds(90 * 60)
            c.idempotencyMaxBytes = 1 << 20
        }
        defer { s.stop() }
        #expect(s.server.service.idempotency.ttlMs == 90 * 60 * 1000)
        #expect(s.server.service.idempotency.maxBytes == 1 << 20)
    }

    @Test("over RPC, one key for ClearLayer then DeleteLayer of the same layer is INVALID_ARGUMENT")
    func sameKeyOtherMethod() throws {
        let s = try TestServer()
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "l")
        _ = try c.upsertMarkers("l", [marker("a", 1, 1)])
        _ = try c.clearLayer("l", idempotencyKey: "k")
        #expect(statusCode { _ = try c.deleteLayer("l", idempotencyKey: "k") } == .invalidArgument)
        #expect(try c.listLayers().map(\.id) == ["l"])
        _ = try c.clearLayer("l", idempotencyKey: "k")
    }
}
