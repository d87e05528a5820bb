import MarkerdTestSupport
import Foundation
import Testing
@testable import MarkerdTransport

private let limits = HTTPRequestHead.Limits(requestLineBytes: 64, headerBytes: 128)

private func parse(_ text: String) -> HTTPRequestHead.ParseResult {
    HTTPRequestHead.parse(Array(text.utf8)[...], limits: limits)
}

private func status(_ result: HTTPRequestHead.ParseResult) -> Int? {
    if case .failed(let f) = result { return f.status }
    return nil
}

/// The request-head parser on its own: limits at their exact boundaries, malformed heads.
@Suite struct HTTPRequestHeadTests {
    @Test func completeHeadWithPipelinedRest() throws {
        let text = "\r\nGET /a?b=1 HTTP/1.1\r\nHost: h\r\nIf-None-Match:  W/\"3\" \r\nX-A: 1\nx-a: 2\r\n\r\nGET /next"
        guard case .complete(let head, let length) = parse(text) else { Issue.record("\(parse(text))"); return }
        #expect(head.method == "GET")
        #expect(head.target == "/a?b=1")
        #expect(head.minorVersion == 1)
        #expect(head.field("if-none-match") == "W/\"3\"")
        #expect(head.field("x-a") == "1, 2")
        #expect(length == text.utf8.count - "GET /next".utf8.count)
    }

    @Test func incompleteUntilTheEmptyLine() {
        #expect(parse("GET / HTTP/1.1\r\nHost: h\r\n") == .incomplete)
        #expect(parse("GET / HT") == .incomplete)
    }

    @Test func requestLineLimitIs414AtOneByteOver() {
        let fits = "GET /" + String(repeating: "a", count: 64 - 14) + " HTTP/1.1"
        #expect(fits.utf8.count == 64)
        if case .complete = parse(fits + "\r\n\r\n") {} else { Issue.record("a 64-byte line must fit") }
        let over = "GET /" + String(repeating: "a", count: 64 - 13) + " HTTP/1.1"
        #expect(status(parse(over + "\r\n\r\n")) == 414)
        // No line end yet, but already too long.
        #expect(status(parse(String(repeating: "a", count: 65))) == 414)
        // Empty lines before a request count too (else a client could send them for ever).
        #expect(status(parse(String(repeating: "\r\n", count: 40))) == 414)
    }

    @Test func headerSectionLimitIs431() {
        let field = "X: " + String(repeating: "v", count: 40) + "\r\n"  // 45 bytes
        #expect(status(parse("GET / HTTP/1.1\r\n" + String(repeating: field, count: 2) + "\r\n")) == nil)
        #expect(status(parse("GET / HTTP/1.1\r\n" + String(repeating: field, count: 3) + "\r\n")) == 431)
        // Incomplete but over the limit.
        #expect(status(parse("GET / HTTP/1.1\r\nX: " + String(repeating: "v", count: 200))) == 431)
    }

    @Test func malformedHeads() {
        #expect(status(parse("GET / HTTP/1.1 x\r\n\r\n")) == 400)
        #expect(status(parse("GET  / HTTP/1.1\r\n\r\n")) == 400)
        #expect(status(parse("G(T / HTTP/1.1\r\n\r\n")) == 400)
        #expect(status(parse("GET / HTTP/2.0\r\n\r\n")) == 505)
        #expect(status(parse("GET / HTTP/1.2\r\n\r\n")) == 505)
        #expect(status(parse("GET / FTP/1.1\r\n\r\n")) == 400)
        #expect(status(parse("GET /\u{7F} HTTP/1.1\r\n\r\n")) == 400)
        #expect(HTTPRequestHead.parse([0x47, 0x45, 0x54, 0x20, 0x2F, 0xC3, 0x28, 0x20] + Array("HTTP/1.1\r\n\r\n".utf8),
                                      limits: limits) == .failed(.init(status: 400, message: "request target must be visible ASCII (percent-encode other bytes)")))
        #expect(status(parse("GET / HTTP/1.1\r\nNoColon\r\n\r\n")) == 400)
        #expect(status(parse("GET / HTTP/1.1\r\n: v\r\n\r\n")) == 400)
        #expect(status(parse("GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n")) == 400)
        #expect(status(parse("GET / HTTP/1.1\r\nX: a\u{1}b\r\n\r\n")) == 400)
        #expect(status(parse("GET x HTTP/1.1\r\n\r\n")) == 400)
    }

    @Test func absoluteFormKeepsPathAndQuery() {
        for (target, expected) in [("http://h:1/a/b?c", "/a/b?c"), ("HTTP://h", "/"), ("http://h?q=1", "/?q=1")] {
            guard case .complete(let head, _) = parse("GET \(target) HTTP/1.1\r\nHost: h\r\n\r\n") else {
                Issue.record("\(target) is not parsed")
                continue
            }
            #expect(head.target == expected)
        }
    }
}

/// What a client sees at the server's limits, over real sockets: statuses instead of a silent
/// close (nng's HTTP server closed on any line over 8 KiB), and timeouts for idle and slow
/// clients (nng's never timed a connection out).
@Suite(.serialized) struct HTTPServerLimitsTests {
    private func started(_ configure: (inout HTTPServerConfiguration) -> Void = { _ in }) throws -> NNGHTTPServer {
        var config = HTTPServerConfiguration(address: "127.0.0.1:0")
        configure(&config)
        let server = NNGHTTPServer(configuration: config, handler: HTTPHandlerClosure { req, responder in
            responder.respond(.text(200, "\(req.method) \(req.target)"))
        })
        try server.start()
        return server
    }

    @Test func hundredKilobyteURLIs414() throws {
        let server = try started()
        defer { server.stop() }
        let r = try RawHTTP.request(port: server.boundPort, "GET", "/" + String(repeating: "a", count: 100_000))
        #expect(r.status == 414)
        #expect(r.header("Connection") == "close")
        let head = try RawConnection(port: server.boundPort)
        try head.send("HEAD /" + String(repeating: "a", count: 100_000) + " HTTP/1.1\r\nHost: h\r\n\r\n")
        let headReply = try RawHTTP.parse(head.readToEOF(), method: "HEAD")
        #expect(headReply.status == 414)
        #expect(headReply.body.isEmpty)
        // Just under the limit is served.
        let fits = "/" + String(repeating: "b", count: 8192 - "GET / HTTP/1.1".utf8.count)
        #expect(try RawHTTP.request(port: server.boundPort, "GET", fits).status == 200)
        #expect(server.statistics.refused == 2)
    }

    @Test func megabyteHeaderIs431() throws {
        let server = try started()
        defer { server.stop() }
        let one = try RawHTTP.request(port: server.boundPort, "GET", "/", headers: [("X-Big", String(repeating: "h", count: 1 << 20))])
        #expect(one.status == 431)
        // Many small fields adding up to 1 MB too.
        let many = (0..<1000).map { ("X-F\($0)", String(repeating: "m", count: 1000)) }
        #expect(try RawHTTP.request(port: server.boundPort, "GET", "/", headers: many).status == 431)
        // 30 fields of 1 KB (under the 32 KiB default) are fine.
        #expect(try RawHTTP.request(port: server.boundPort, "GET", "/", headers: Array(many.prefix(30))).status == 200)
    }

    @Test func bodiesVersionsAndMalformedRequests() throws {
        let server = try started { $0.maxRequestBodyBytes = 10 }
        defer { server.stop() }
        let port = server.boundPort
        func send(_ text: String) throws -> RawHTTPResponse {
            let c = try RawConnection(port: port)
            try c.send(text)
            return try RawHTTP.parse(c.readToEOF(), method: "GET")
        }
        #expect(try send("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n01234567890").status == 413)
        #expect(try send("GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").status == 501)
        #expect(try send("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n").status == 400)
        #expect(try send("GET / HTTP/3.0\r\nHost: h\r\n\r\n").status == 505)
        #expect(try send("GET / HTTP/1.1\r\n\r\n").status == 400)
        // A refused HEAD request gets no body either (found by HTTPFuzzTests: the 400 for a
        // missing Host had one, which a client reads as the start of the next response).
        let c = try RawConnection(port: port)
        try c.send("HEAD / HTTP/1.1\r\n\r\n")
        let head = try RawHTTP.parse(c.readToEOF(), method: "HEAD")
        #expect(head.status == 400)
        #expect(head.body.isEmpty)
        #expect(Int(head.header("Content-Length") ?? "") ?? 0 > 0)
        #expect(try send("\u{16}\u{3}\u{1}\u{2}\u{0}\u{1}\r\n\r\n").status == 400)
        let withBody = try send("GET /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
        #expect(withBody.status == 200)
        #expect(withBody.text == "GET /b")
    }

    /// A handler's header value cannot end the header line early, and framing headers are the server's.
    @Test func handlerHeadersCannotSplitTheResponse() throws {
        let server = NNGHTTPServer(configuration: HTTPServerConfiguration(address: "127.0.0.1:0"),
                                   handler: HTTPHandlerClosure { _, responder in
            responder.respond(.text(200, "body", headers: [HTTPHeader("Location", "/a\r\nX-Injected: 1\r\n\r\nevil"),
                                                           HTTPHeader("Content-Length", "999"),
                                                           HTTPHeader("Bad Name", "x")]))
        })
        try server.start()
        defer { server.stop() }
        let r = try RawHTTP.request(port: server.boundPort, "GET", "/")
        #expect(r.status == 200)
        #expect(r.header("X-Injected") == nil)
        #expect(r.header("Location") == "/a  X-Injected: 1    evil")
        #expect(r.header("Content-Length") == "4")
        #expect(r.text == "body")
        #expect(!r.headerLines.contains { $0.hasPrefix("Bad Name") })
    }

    @Test func keepAliveAndPipelinedRequestsAreAnsweredInOrder() throws {
        let server = try started()
        defer { server.stop() }
        let c = try RawConnection(port: server.boundPort)
        try c.send("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nHEAD /2 HTTP/1.1\r\nHost: h\r\n\r\nGET /3 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        let text = String(decoding: try c.readToEOF(), as: UTF8.self)
        let bodies = ["GET /1", "GET /3"]
        #expect(text.components(separatedBy: "HTTP/1.1 200 OK").count == 4, "\(text)")
        #expect(text.hasSuffix(bodies[1]))
        #expect(text.contains("Content-Length: 7\r\n"))  // the HEAD's length, "HEAD /2"
        #expect(!text.contains("HEAD /2\r\n") && !text.contains("\r\n\r\nHEAD /2"))
        let first = try #require(text.range(of: bodies[0])), last = try #require(text.range(of: bodies[1]))
        #expect(first.lowerBound < last.lowerBound)
    }

    @Test func idleConnectionIsClosed() throws {
        let server = try started { $0.idleTimeout = .milliseconds(300) }
        defer { server.stop() }
        // Never sends: closed without a response.
        let silent = try RawConnection(port: server.boundPort)
        #expect(try silent.readToEOF().isEmpty)
        // After a response on a kept-alive connection too.
        let kept = try RawConnection(port: server.boundPort)
        try kept.send("GET /k HTTP/1.1\r\nHost: h\r\n\r\n")
        let data = try kept.readToEOF()
        #expect(try RawHTTP.parse(data, method: "GET").text == "GET /k")
        #expect(server.statistics.idleTimeouts == 2)
    }

    @Test func slowlorisGets408() throws {
        let server = try started { $0.headerTimeout = .milliseconds(500) }
        defer { server.stop() }
        let c = try RawConnection(port: server.boundPort)
        try c.send("GET / HTTP/1.1\r\nHost: h\r\n")
        // One header byte at a time, never the end of the head, until the server answers.
        let deadline = ContinuousClock.now + .seconds(20)
        var sentBytes = 0
        while !c.readable(withinMilliseconds: 50), ContinuousClock.now < deadline {
            try? c.send("X")
            sentBytes += 1
        }
        let r = try RawHTTP.parse(c.readToEOF(), method: "GET")
        #expect(r.status == 408)
        #expect(r.header("Connection") == "close")
        #expect(server.statistics.headerTimeouts == 1, "after \(sentBytes) bytes")
        #expect(server.statistics.received == 0)
    }

    @Test func connectionsOverTheLimitGet503() throws {
        let server = try started { $0.maxConnections = 2 }
        defer { server.stop() }
        let a = try RawConnection(port: server.boundPort)
        let b = try RawConnection(port: server.boundPort)
        try waitUntil("2 connections are open") { server.statistics.connections >= 2 }
        let third = try RawHTTP.request(port: server.boundPort, "GET", "/")
        #expect(third.status == 503)
        withExtendedLifetime((a, b)) {}
    }
}
