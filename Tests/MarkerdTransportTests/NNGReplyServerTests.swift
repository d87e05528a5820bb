import MarkerdTestSupport
import Dispatch
import Foundation
import Testing
import MarkerdTransport
import Synchronization

@Suite(.serialized) struct NNGReplyServerTests {
    private func echoOnce(_ url: String) throws {
        let server = NNGReplyServer(configuration: ServerConfiguration(listenURLs: [url], contexts: 2),
                                    handler: EchoHandler())
        try server.start()
        defer { server.stop(drainTimeout: .seconds(1)) }
        let client = try NNGRequestClient(url: server.boundURLs[0])
        defer { client.close() }
        for size in [0, 1, 100, 10_000, 1 << 20] {
            let request = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            #expect(try client.call(request, timeout: .seconds(5)) == request)
        }
    }

    @Test func echoOverInproc() throws { try echoOnce("inproc://" + uniqueName("echo")) }
    @Test func echoOverIPC() throws { try echoOnce(ipcURL()) }
    @Test func echoOverTCPPortZero() throws { try echoOnce("tcp://127.0.0.1:0") }

    @Test func severalListenURLsAndBoundPort() throws {
        let urls = ["inproc://" + uniqueName("multi"), ipcURL(), "tcp://127.0.0.1:0"]
        let server = NNGReplyServer(configuration: ServerConfiguration(listenURLs: urls, contexts: 4),
                                    handler: EchoHandler())
        try server.start()
        defer { server.stop() }
        try #require(server.boundURLs.count == 3)
        #expect(server.boundTCPPorts.count == 1)
        let port = try #require(server.boundTCPPorts.first)
        #expect(port > 0)
        #expect(server.boundURLs[2] == "tcp://127.0.0.1:\(port)")
        for url in server.boundURLs {
            let client = try NNGRequestClient(url: url)
            #expect(try client.call(Array(url.utf8), timeout: .seconds(5)) == Array(url.utf8))
            client.close()
        }
        #expect(server.statistics.received == 3)
        #expect(server.statistics.responded == 3)
    }

    @Test func clientStartsBeforeServer() throws {
        let url = ipcURL()
        let client = try NNGRequestClient(url: url)
        defer { client.close() }
        let server = NNGReplyServer(configuration: ServerConfiguration(listenURLs: [url], contexts: 1),
                                    handler: EchoHandler())
        try server.start()
        defer { server.stop() }
        #expect(try client.call([1, 2, 3], timeout: .seconds(5)) == [1, 2, 3])
    }

    /// 32 client threads x 200 requests through 4 contexts; replies come from other threads
    /// after a small random delay. Every reply must be the echo of its own request.
    @Test func concurrentClientsDeferredReplies() throws {
        let seed = testSeed("concurrentClientsDeferredReplies")
        let delaySeed = Mutex(SplitMix64(seed: seed ^ 0xD1CE))
        let server = NNGReplyServer(
            configuration: ServerConfiguration(listenURLs: ["tcp://127.0.0.1:0"], contexts: 4),
            handler: DeferredEchoHandler(delay: {
                .microseconds(delaySeed.withLock { Int.random(in: 0...300, using: &$0) })
            }))
        try server.start()
        defer { server.stop() }
        let client = try NNGRequestClient(url: server.boundURLs[0])
        defer { client.close() }
        let tally = Tally()
        onThreads(32) { t in
            var rng = SplitMix64(seed: seed &+ UInt64(t))
            for seq in 0..<200 {
                let request = makeRequest(thread: t, seq: seq, rng: &rng, maxPadding: 512)
                do throws(NNGError) {
                    let reply = try client.call(request, timeout: .seconds(30))
                    if reply == request { tally.ok() } else { tally.mismatch() }
                } catch { tally.error(error) }
            }
        }
        let result = tally.snapshot
        #expect(result.errors.isEmpty, "errors: \(result.errors.prefix(5))")
        #expect(result.mismatched == 0)
        #expect(result.ok == 32 * 200)
        #expect(server.statistics.responded == 32 * 200)
    }

    @Test func outOfOrderReplies() throws {
        let seed = testSeed("outOfOrderReplies")
        let handler = OutOfOrderHandler(batch: 4)
        let server = NNGReplyServer(
            configuration: ServerConfiguration(listenURLs: ["inproc://" + uniqueName("ooo")], contexts: 8),
            handler: handler)
        try server.start()
        defer { server.stop() }
        let client = try NNGRequestClient(url: server.boundURLs[0])
        defer { client.close() }
        let tally = Tally()
        onThreads(8) { t in
            var rng = SplitMix64(seed: seed &+ UInt64(t))
            for seq in 0..<100 {
                let request = makeRequest(thread: t, seq: seq, rng: &rng, maxPadding: 64)
                do throws(NNGError) {
                    let reply = try client.call(request, timeout: .seconds(30))
                    if reply == request { tally.ok() } else { tally.mismatch() }
                } catch { tally.error(error) }
            }
        }
        let result = tally.snapshot
        #expect(result.errors.isEmpty, "errors: \(result.errors.prefix(5))")
        #expect(result.mismatched == 0)
        #expect(result.ok == 800)
        #expect(handler.reordered.load(ordering: .relaxed) > 0)
    }

    /// A request above maxMessageBytes makes nng drop that connection; others keep being
    /// served, and the offending client can still talk afterwards (it reconnects).
    @Test func oversizeRequestDropsOnlyThatConnection() throws {
        let server = NNGReplyServer(
            configuration: ServerConfiguration(listenURLs: ["tcp://127.0.0.1:0"], contexts: 4, maxMessageBytes: 1024),
            handler: EchoHandler())
        try server.start()
        defer { server.stop() }
        let url = server.boundURLs[0]
        let good = try NNGRequestClient(url: url)
        let big = try NNGRequestClient(url: url)
        defer { good.close(); big.close() }
        #expect(try good.call([9], timeout: .seconds(5)) == [9])
        #expect(try big.call([8], timeout: .seconds(5)) == [8])
        #expect(throws: NNGError.timedOut) {
            try big.call([UInt8](repeating: 1, count: 4096), timeout: .milliseconds(500))
        }
        #expect(try good.call([7], timeout: .seconds(5)) == [7])
        let exact = [UInt8](repeating: 2, count: 1024)
        #expect(try big.call(exact, timeout: .seconds(5)) == exact)
        // Within nng's header allowance but over the body limit: dropped without a reply.
        #expect(throws: NNGError.timedOut) {
            try good.call([UInt8](repeating: 3, count: 1025), timeout: .milliseconds(300))
        }
        #expect(server.statistics.oversize >= 1)
        #expect(try good.call([6], timeout: .seconds(5)) == [6])
    }

    /// Raw junk on the TCP port (bad SP handshake, giant length prefix) must not hurt the server.
    @Test func garbageOnTheWireIsSurvived() throws {
        let seed = testSeed("garbageOnTheWireIsSurvived")
        var rng = SplitMix64(seed: seed)
        let server = NNGReplyServer(
            configuration: ServerConfiguration(listenURLs: ["tcp://127.0.0.1:0"], contexts: 2, maxMessageBytes: 4096),
            handler: EchoHandler())
        try server.start()
        defer { server.stop() }
        let port = try #require(server.boundTCPPorts.first)
        // SP header for REQ (0x30) talking to REP, then a length of 2^62 and random bytes.
        let handshake: [UInt8] = [0, 0x53, 0x50, 0, 0, 0x30, 0, 0]
        var inputs: [[UInt8]] = [handshake + [0x40, 0, 0, 0, 0, 0, 0, 0] + [1, 2, 3],
                                 handshake + [0, 0, 0, 0, 0, 0, 0, 4] + [0xFF, 0xFF, 0xFF, 0xFF],  // bad backtrace
                                 [0, 0x53, 0x50, 0, 0, 0x31, 0, 0]]  // REP talking to REP
        for _ in 0..<20 {
            inputs.append((0..<Int.random(in: 1...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
        for input in inputs { rawSend(port: port, bytes: input) }
        let client = try NNGRequestClient(url: server.boundURLs[0])
        defer { client.close() }
        #expect(try client.call([1, 2, 3], timeout: .seconds(5)) == [1, 2, 3])
    }

    /// stop() while requests are being handled: in-flight requests are answered (drain), the
    /// rest see a clean NNGError, nothing crashes, and replies after stop are refused.
    @Test func stopDrainsInFlightRequests() throws {
        let server = NNGReplyServer(
            configuration: ServerConfiguration(listenURLs: ["tcp://127.0.0.1:0"], contexts: 4),
            handler: DeferredEchoHandler(delay: { .milliseconds(150) }))
        try server.start()
        let client = try NNGRequestClient(url: server.boundURLs[0])
        defer { client.close() }
        let tally = Tally()
        let stopper = Thread {
            Thread.sleep(forTimeInterval: 0.05)
            server.stop(drainTimeout: .seconds(5))
        }
        stopper.start()
        onThreads(12) { t in
            let request = [UInt8(t), 1, 2, 3]
            do throws(NNGError) {
                let reply = try client.call(request, timeout: .milliseconds(1500))
                if reply == request { tally.ok() } else { tally.mismatch() }
            } catch { tally.error(error) }
        }
        let result = tally.snapshot
        #expect(result.mismatched == 0)
        #expect(result.ok >= 1 && result.ok <= 4, "ok=\(result.ok)")
        #expect(result.ok + result.errors.count == 12)
        #expect(result.errors.allSatisfy { $0 == .timedOut || $0 == .closed }, "\(result.errors)")
        #expect(server.statistics.responded == result.ok)
    }

    @Test func stopDrainIsBoundedAndLateRepliesAreRefused() throws {
        let handler = HoldingHandler()
        let server = NNGReplyServer(
            configuration: ServerConfiguration(listenURLs: ["inproc://" + uniqueName("hold")], contexts: 2),
            handler: handler)
        try server.start()
        let client = try NNGRequestClient(url: server.boundURLs[0])
        defer { client.close() }
        #expect(throws: NNGError.timedOut) { try client.call([1], timeout: .milliseconds(200)) }
        #expect(handler.count == 1)
        let start = ContinuousClock.now
        server.stop(drainTimeout: .milliseconds(200))
        #expect(ContinuousClock.now - start < .seconds(3))
        for request in handler.releaseAll() { #expect(request.respond([1]) == false) }
        server.stop()  // idempotent
        #expect(throws: NNGError.invalidState) { try server.start() }
    }

    /// A request dropped by the handler without a reply frees its context for the next one.
    @Test func droppedRequestFreesItsContext() throws {
        let handler = HoldingHandler()
        let server = NNGReplyServer(
            configuration: ServerConfiguration(listenURLs: ["inproc://" + uniqueName("drop")], contexts: 1),
            handler: handler)
        try server.start()
        defer { server.stop(drainTimeout: .zero) }
        let client = try NNGRequestClient(url: server.boundURLs[0])
        defer { client.close() }
        #expect(throws: NNGError.timedOut) { try client.call([1], timeout: .milliseconds(100)) }
        _ = handler.releaseAll()  // dropped without respond -> context re-armed
        #expect(throws: NNGError.timedOut) { try client.call([2], timeout: .milliseconds(300)) }
        let second = handler.releaseAll()
        // The second request is held, so still not abandoned; Swift may end a local's lifetime
        // after its last use (it does under -O), hence the explicit extension.
        withExtendedLifetime(second) {
            #expect(second.count == 1)
            #expect(server.statistics.abandoned == 1)
        }
    }

    @Test func busyPortThrowsAddressInUse() throws {
        let first = NNGReplyServer(configuration: ServerConfiguration(listenURLs: ["tcp://127.0.0.1:0"]),
                                   handler: EchoHandler())
        try first.start()
        defer { first.stop() }
        let port = try #require(first.boundTCPPorts.first)
        let second = NNGReplyServer(configuration: ServerConfiguration(listenURLs: ["tcp://127.0.0.1:\(port)"]),
                                    handler: EchoHandler())
        #expect(throws: NNGError.addressInUse) { try second.start() }
        // The first keeps working.
        let client = try NNGRequestClient(url: first.boundURLs[0])
        defer { client.close() }
        #expect(try client.call([5], timeout: .seconds(5)) == [5])
    }

    @Test func badConfigurationThrows() {
        let noURL = NNGReplyServer(configuration: ServerConfiguration(listenURLs: []), handler: EchoHandler())
        #expect(throws: NNGError.invalidArgument) { try noURL.start() }
        let badURL = NNGReplyServer(configuration: ServerConfiguration(listenURLs: ["bogus://x"]), handler: EchoHandler())
        #expect(throws: NNGError.self) { try badURL.start() }
    }

    @Test func roundTripHelperMeasures() throws {
        for size in [100, 10_000] {
            let iterations = ProcessInfo.processInfo.environment["ROUNDTRIP_ITERATIONS"].flatMap(Int.init) ?? 300
            let result = try NNGRoundTrip.measure(payloadBytes: size, iterations: iterations, warmup: 50)
            #expect(result.iterations == iterations)
            #expect(result.p50Microseconds > 0 && result.p50Microseconds <= result.p99Microseconds)
        }
    }
}

/// Connects to 127.0.0.1:port, writes `bytes`, lingers briefly, closes.
func rawSend(port: Int, bytes: [UInt8]) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return }
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = in_port_t(UInt16(port).bigEndian)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    let ok = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard ok == 0 else { return }
    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    usleep(20_000)
}
