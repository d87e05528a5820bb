import MarkerdTestSupport
import Synchronization
import Testing
import MarkerdTransport

@Suite(.serialized) struct NNGRequestClientAsyncTests {
    @Test func manyConcurrentAsyncCallsMatchTheirReplies() async throws {
        let seed = testSeed("manyConcurrentAsyncCallsMatchTheirReplies")
        let delays = Mutex(SplitMix64(seed: seed ^ 0xA5))
        let server = NNGReplyServer(
            configuration: ServerConfiguration(listenURLs: ["tcp://127.0.0.1:0"], contexts: 4),
            handler: DeferredEchoHandler(delay: { .microseconds(delays.withLock { Int.random(in: 0...200, using: &$0) }) }))
        try server.start()
        defer { server.stop() }
        let client = try NNGRequestClient(url: server.boundURLs[0])
        defer { client.close() }
        let ok = try await withThrowingTaskGroup(of: Bool.self) { group in
            for t in 0..<64 {
                group.addTask {
                    var rng = SplitMix64(seed: seed &+ UInt64(t))
                    for seq in 0..<20 {
                        let request = makeRequest(thread: t, seq: seq, rng: &rng, maxPadding: 256)
                        guard try await client.asyncCall(request, timeout: .seconds(30)) == request else { return false }
                    }
                    return true
                }
            }
            var all = true
            for try await ok in group { all = all && ok }
            return all
        }
        #expect(ok)
    }

    @Test func asyncTimeoutAndCancellation() async throws {
        let handler = HoldingHandler()
        let server = NNGReplyServer(
            configuration: ServerConfiguration(listenURLs: ["inproc://" + uniqueName("async-hold")], contexts: 4),
            handler: handler)
        try server.start()
        defer { server.stop(drainTimeout: .zero) }
        let client = try NNGRequestClient(url: server.boundURLs[0])
        defer { client.close() }
        await #expect(throws: NNGError.timedOut) { try await client.asyncCall([1], timeout: .milliseconds(100)) }

        let task = Task { try await client.asyncCall([2], timeout: .seconds(30)) }
        try waitUntil("the server holds request 2") { handler.count == 2 }
        task.cancel()
        let start = ContinuousClock.now
        await #expect(throws: NNGError.canceled) { try await task.value }
        #expect(ContinuousClock.now - start < .seconds(5))

        let pending = Task { try await client.asyncCall([3], timeout: .seconds(30)) }
        try waitUntil("the server holds request 3") { handler.count == 3 }
        client.close()
        await #expect(throws: NNGError.closed) { try await pending.value }
        await #expect(throws: NNGError.closed) { try await client.asyncCall([4], timeout: .seconds(1)) }
    }
}
