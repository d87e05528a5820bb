import Testing
import MarkerdTransport
import Synchronization

@Suite(.serialized) struct NNGRequestClientTests {
    @Test func timesOutWithoutServer() throws {
        let client = try NNGRequestClient(url: "tcp://127.0.0.1:1")
        defer { client.close() }
        let start = ContinuousClock.now
        #expect(throws: NNGError.timedOut) { try client.call([1], timeout: .milliseconds(200)) }
        #expect(ContinuousClock.now - start < .seconds(2))
    }

    @Test func timesOutWhenServerDoesNotReply() throws {
        let handler = HoldingHandler()
        let server = NNGReplyServer(
            configuration: ServerConfiguration(listenURLs: ["inproc://" + uniqueName("slow")], contexts: 1),
            handler: handler)
        try server.start()
        defer { server.stop(drainTimeout: .zero) }
        let client = try NNGRequestClient(url: server.boundURLs[0])
        defer { client.close() }
        do {
            _ = try client.call([1], timeout: .milliseconds(150))
            Issue.record("expected a timeout")
        } catch {
            #expect(error == .timedOut)
            #expect(error.description.contains("nng_ctx_recv"))
        }
    }

    @Test func callAfterCloseThrowsClosed() throws {
        let client = try NNGRequestClient(url: "inproc://" + uniqueName("closed"))
        client.close()
        client.close()
        #expect(throws: NNGError.closed) { try client.call([1], timeout: .seconds(1)) }
    }

    @Test func badURLThrows() {
        #expect(throws: NNGError.self) { try NNGRequestClient(url: "nonsense") }
    }

    @Test func writeAndReadClosuresAvoidCopies() throws {
        let server = NNGReplyServer(
            configuration: ServerConfiguration(listenURLs: ["inproc://" + uniqueName("closure")], contexts: 1),
            handler: EchoHandler())
        try server.start()
        defer { server.stop() }
        let client = try NNGRequestClient(url: server.boundURLs[0])
        defer { client.close() }
        let sum = try client.call(requestSize: 1000, timeout: .seconds(5),
                                  write: { out in for i in 0..<out.count { out[i] = UInt8(i % 251) } },
                                  read: { reply in reply.reduce(0) { $0 + Int($1) } })
        #expect(sum == (0..<1000).reduce(0) { $0 + $1 % 251 })
    }

    @Test func replyAboveClientLimitTimesOut() throws {
        let server = NNGReplyServer(
            configuration: ServerConfiguration(listenURLs: ["tcp://127.0.0.1:0"], contexts: 1),
            handler: EchoHandler())
        try server.start()
        defer { server.stop() }
        let client = try NNGRequestClient(configuration: ClientConfiguration(url: server.boundURLs[0], maxMessageBytes: 512))
        defer { client.close() }
        #expect(try client.call([1], timeout: .seconds(5)) == [1])
        #expect(throws: NNGError.timedOut) {
            try client.call([UInt8](repeating: 0, count: 2048), timeout: .milliseconds(300))
        }
    }

    @Test func resendTimeResendsAfterADroppedRequest() throws {
        // The first copy of each request is dropped unanswered; nng's resend delivers it again.
        let handler = DropFirstHandler()
        let server = NNGReplyServer(
            configuration: ServerConfiguration(listenURLs: ["inproc://" + uniqueName("resend")], contexts: 2),
            handler: handler)
        try server.start()
        defer { server.stop() }
        let client = try NNGRequestClient(configuration: ClientConfiguration(
            url: server.boundURLs[0], resendTime: .milliseconds(100)))
        defer { client.close() }
        #expect(try client.call([4, 2], timeout: .seconds(3)) == [4, 2])
    }
}

final class DropFirstHandler: RequestHandler, @unchecked Sendable {
    let seen = Mutex(Set<[UInt8]>())
    func handle(_ request: IncomingRequest) {
        let bytes = Array(request.body)
        if seen.withLock({ $0.insert(bytes).inserted }) { return }  // drop: never respond
        request.respond(bytes)
    }
}
