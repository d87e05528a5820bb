import MarkerdTestSupport
import Dispatch
import Foundation
import Testing
import MarkerdTransport
import Synchronization

/// Answers every request with "METHOD TARGET host=... inm=..." (after an optional delay).
private func echoHTTP(delay: (@Sendable () -> DispatchTimeInterval)? = nil) -> HTTPHandlerClosure {
    HTTPHandlerClosure { request, responder in
        let text = "\(request.method) \(request.target) host=\(request.header("Host") ?? "-") inm=\(request.header("if-none-match") ?? "-")"
        let response = HTTPResponse.text(200, text, headers: [HTTPHeader("X-Path", request.path)])
        if let delay {
            DispatchQueue.global().asyncAfter(deadline: .now() + delay()) { responder.respond(response) }
        } else {
            responder.respond(response)
        }
    }
}

/// Keeps every responder without answering.
private final class HoldingHTTPHandler: HTTPRequestHandler, @unchecked Sendable {
    let held = Mutex<[HTTPResponder]>([])
    func handle(_ request: HTTPRequest, responder: HTTPResponder) { held.withLock { $0.append(responder) } }
    var count: Int { held.withLock { $0.count } }
    func take() -> [HTTPResponder] { held.withLock { l in defer { l = [] }; return l } }
}

@Suite(.serialized) struct NNGHTTPServerTests {
    private func started(_ handler: any HTTPRequestHandler,
                         configure: (inout HTTPServerConfiguration) -> Void = { _ in }) throws -> NNGHTTPServer {
        var config = HTTPServerConfiguration(address: "127.0.0.1:0")
        configure(&config)
        let server = NNGHTTPServer(configuration: config, handler: handler)
        try server.start()
        return server
    }

    @Test func portZeroPicksAPortAndServes() throws {
        let server = try started(echoHTTP())
        defer { server.stop() }
        #expect(server.boundPort > 0)
        #expect(server.boundURL == "http://127.0.0.1:\(server.boundPort)")
        let r = try RawHTTP.request(port: server.boundPort, "GET", "/a/b.png?x=1", headers: [("If-None-Match", "\"7\"")])
        #expect(r.status == 200)
        #expect(r.text == "GET /a/b.png?x=1 host=127.0.0.1:\(server.boundPort) inm=\"7\"")
        #expect(r.header("X-Path") == "/a/b.png")
        #expect(r.header("Content-Type") == "text/plain; charset=utf-8")
        #expect(r.header("Content-Length") == String(r.body.count))
        #expect(server.statistics.received == 1)
        #expect(server.statistics.responded == 1)
    }

    @Test func twoPortZeroServersInOneProcessAreDistinct() throws {
        let a = try started(echoHTTP())
        defer { a.stop() }
        let b = try started(echoHTTP())
        defer { b.stop() }
        #expect(a.boundPort != b.boundPort)
        #expect(try RawHTTP.request(port: a.boundPort, "GET", "/").status == 200)
        #expect(try RawHTTP.request(port: b.boundPort, "GET", "/").status == 200)
    }

    @Test func addressInUseAndInvalidAndDoubleStart() throws {
        let a = try started(echoHTTP())
        defer { a.stop() }
        let same = NNGHTTPServer(configuration: HTTPServerConfiguration(address: "127.0.0.1:\(a.boundPort)"), handler: echoHTTP())
        #expect(throws: NNGError.addressInUse) { try same.start() }
        let bad = NNGHTTPServer(configuration: HTTPServerConfiguration(address: "127.0.0.1:notaport"), handler: echoHTTP())
        #expect(throws: NNGError.addressInvalid) { try bad.start() }
        #expect(throws: NNGError.invalidState) { try a.start() }
        // The first server still serves.
        #expect(try RawHTTP.request(port: a.boundPort, "GET", "/x").status == 200)
    }

    @Test func headAndMethodFilteringAndDefaultHeaders() throws {
        let server = try started(echoHTTP()) { $0.defaultHeaders = [HTTPHeader("Access-Control-Allow-Origin", "*")] }
        defer { server.stop() }
        let get = try RawHTTP.request(port: server.boundPort, "GET", "/h")
        let head = try RawHTTP.request(port: server.boundPort, "HEAD", "/h")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        // HEAD is handed over as HEAD; the text differs by the method name only.
        #expect(Int(head.header("Content-Length") ?? "") == get.body.count + 1)
        #expect(head.header("Access-Control-Allow-Origin") == "*")
        let post = try RawHTTP.request(port: server.boundPort, "POST", "/h")
        #expect(post.status == 405)
        #expect(post.header("Allow") == "GET, HEAD")
        #expect(post.header("Access-Control-Allow-Origin") == "*")
        let delete = try RawHTTP.request(port: server.boundPort, "DELETE", "/")
        #expect(delete.status == 405)
        #expect(server.statistics.methodNotAllowed == 2)
    }

    @Test func emptyBodies() throws {
        let server = try started(HTTPHandlerClosure { req, responder in
            let status = req.path == "/nm" ? 304 : req.path == "/empty" ? 200 : 204
            responder.respond(HTTPResponse(status: status, headers: [HTTPHeader("ETag", "\"1\"")]))
        })
        defer { server.stop() }
        let r = try RawHTTP.request(port: server.boundPort, "GET", "/x")
        #expect(r.status == 204)
        #expect(r.header("ETag") == "\"1\"")
        let nm = try RawHTTP.request(port: server.boundPort, "GET", "/nm")
        #expect(nm.status == 304)
        #expect(nm.body.isEmpty)
        let empty = try RawHTTP.request(port: server.boundPort, "GET", "/empty")
        #expect(empty.status == 200)
        #expect(empty.header("Content-Length") == "0")
    }

    @Test func droppedResponderAnswers500() throws {
        let server = try started(HTTPHandlerClosure { _, _ in })
        defer { server.stop() }
        let r = try RawHTTP.request(port: server.boundPort, "GET", "/drop")
        #expect(r.status == 500)
        #expect(server.statistics.dropped == 1)
    }

    @Test func respondTwiceIsRefused() throws {
        let second = Mutex<Bool?>(nil)
        let server = try started(HTTPHandlerClosure { _, responder in
            responder.respond(.text(200, "one"))
            second.withLock { $0 = responder.respond(.text(200, "two")) }
        })
        defer { server.stop() }
        #expect(try RawHTTP.request(port: server.boundPort, "GET", "/").text == "one")
        try waitUntil("the handler answered a second time") { second.withLock { $0 } != nil }
        #expect(second.withLock { $0 } == false)
    }

    /// 48 client threads x 25 requests; responses come from other threads after a seeded random
    /// delay. Every response must be the one for its own request.
    @Test func concurrentRequestsDeferredResponses() throws {
        let seed = testSeed("concurrentRequestsDeferredResponses")
        let delays = Mutex(SplitMix64(seed: seed ^ 0xFEED))
        let server = try started(echoHTTP(delay: { .microseconds(delays.withLock { Int.random(in: 0...2000, using: &$0) }) }))
        defer { server.stop() }
        let port = server.boundPort
        let ok = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        onThreads(48) { t in
            var rng = SplitMix64(seed: seed &+ UInt64(t))
            for seq in 0..<25 {
                let target = "/t\(t)/s\(seq)/\(rng.next() % 1_000_000).png"
                let method = rng.next() % 4 == 0 ? "HEAD" : "GET"
                do {
                    let r = try RawHTTP.request(port: port, method, target)
                    let expected = "\(method) \(target) host=127.0.0.1:\(port) inm=-"
                    if r.status == 200, r.header("X-Path") == target,
                       method == "HEAD" ? r.body.isEmpty && r.header("Content-Length") == String(expected.utf8.count) : r.text == expected {
                        ok.add(1, ordering: .relaxed)
                    } else {
                        failures.withLock { $0.append("\(method) \(target): \(r.status) \(r.text)") }
                    }
                } catch {
                    failures.withLock { $0.append("\(method) \(target): \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "seed \(seed)")
        #expect(ok.load(ordering: .relaxed) == 48 * 25)
        #expect(server.statistics.inFlight == 0)
    }

    /// Stop while handlers hold requests: stop returns after the drain bound, the held clients
    /// get 503, later responds are refused, and nothing leaks or crashes.
    @Test func stopWhileBusy() throws {
        let holder = HoldingHTTPHandler()
        let server = try started(holder)
        let port = server.boundPort
        let results = Mutex<[Int]>([])
        let group = DispatchGroup()
        for i in 0..<16 {
            group.enter()
            Thread {
                let status = (try? RawHTTP.request(port: port, "GET", "/busy/\(i)").status) ?? -1
                results.withLock { $0.append(status) }
                group.leave()
            }.start()
        }
        try waitUntil("the handler holds 16 requests") { holder.count == 16 }
        #expect(server.statistics.inFlight == 16)
        // Answer two before stopping; they must arrive as 200.
        let held = holder.take()
        held[0].respond(.text(200, "early"))
        held[1].respond(.text(200, "early"))
        let start = ContinuousClock.now
        server.stop(drainTimeout: .milliseconds(300))
        let took = ContinuousClock.now - start
        #expect(took >= .milliseconds(250))
        #expect(took < .seconds(5))
        #expect(group.wait(timeout: .now() + 10) == .success)
        let statuses = results.withLock { $0 }.sorted()
        #expect(statuses.filter { $0 == 200 }.count == 2)
        #expect(statuses.filter { $0 == 503 }.count == 14, "\(statuses)")
        // Late responses are refused; the server is closed.
        for responder in held.dropFirst(2) { #expect(responder.respond(.text(200, "late")) == false) }
        #expect(server.statistics.answeredByStop == 14)
        #expect(throws: (any Error).self) { try RawHTTP.request(port: port, "GET", "/after", timeoutSeconds: 2) }
        server.stop()  // idempotent
    }

    /// Responders answering concurrently with stop(): every client gets exactly one response
    /// (200 or 503), never a hang, and responded counts add up.
    @Test func stopRacingResponses() throws {
        let seed = testSeed("stopRacingResponses")
        let delays = Mutex(SplitMix64(seed: seed))
        for _ in 0..<5 {
            let server = try started(echoHTTP(delay: { .microseconds(delays.withLock { Int.random(in: 0...20_000, using: &$0) }) }))
            let port = server.boundPort
            let statuses = Mutex<[Int]>([])
            let group = DispatchGroup()
            for i in 0..<12 {
                group.enter()
                Thread {
                    let s = (try? RawHTTP.request(port: port, "GET", "/r/\(i)", timeoutSeconds: 10).status) ?? -1
                    statuses.withLock { $0.append(s) }
                    group.leave()
                }.start()
            }
            // Stops once about half the requests are in, or after 2 s whatever arrived (the race is the test).
            try? waitUntil("6 requests were received", timeout: .seconds(2)) { server.statistics.received >= 6 }
            server.stop(drainTimeout: .milliseconds(Int64(delays.withLock { Int.random(in: 0...10, using: &$0) })))
            #expect(group.wait(timeout: .now() + 15) == .success)
            let all = statuses.withLock { $0 }
            // A request not yet read by nng when the listener closed fails to connect/read (-1).
            #expect(all.allSatisfy { [200, 503, -1].contains($0) }, "seed \(seed): \(all)")
            let stats = server.statistics
            #expect(stats.inFlight == 0)
            #expect(stats.responded == stats.received, "seed \(seed): \(stats)")
        }
    }
}
