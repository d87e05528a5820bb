import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdServer
import MarkerdTestSupport
import Testing

/// Reads Server-Sent Events from a raw socket: the head, then `(event, id, data)` messages.
final class SSEReader {
    let connection: RawConnection
    private var buffer: [UInt8] = []
    private(set) var head = ""

    init(port: Int, target: String, headers: [(String, String)] = []) throws {
        connection = try RawConnection(port: port)
        let extra = headers.map { "\($0.0): \($0.1)\r\n" }.joined()
        try connection.send("GET \(target) HTTP/1.1\r\nHost: test\r\n\(extra)\r\n")
        let sep = Array("\r\n\r\n".utf8)
        while buffer.firstRange(of: sep) == nil { try fill() }
        let end = buffer.firstRange(of: sep)!
        head = String(decoding: buffer[..<end.upperBound], as: UTF8.self)
        buffer.removeSubrange(..<end.upperBound)
    }

    struct Closed: Error { var readSoFar: String }

    private func fill() throws {
        let bytes = try connection.readSome()
        guard !bytes.isEmpty else { throw Closed(readSoFar: String(decoding: buffer, as: UTF8.self)) }
        buffer += bytes
    }

    /// The next message with data (comments and `retry:` skipped).
    func next() throws -> (event: String, id: String, data: [String: Any]) {
        let sep = Array("\n\n".utf8)
        while true {
            while buffer.firstRange(of: sep) == nil { try fill() }
            let end = buffer.firstRange(of: sep)!
            let text = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
            buffer.removeSubrange(..<end.upperBound)
            var event = "message", id = "", data = ""
            for line in text.split(separator: "\n") {
                if line.hasPrefix("event: ") { event = String(line.dropFirst(7)) }
                if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
            }
            if data.isEmpty { continue }
            let json = try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any]
            return (event, id, try #require(json))
        }
    }
}

@Suite struct LayerEventsTests {
    /// `/layers/{layer}/events` over a real socket: live events filtered by `bbox` (a marker that
    /// moves out is listed as removed), `Last-Event-ID` catch-up, and `reload` once the history
    /// no longer reaches back.
    @Test func serverSentEventsFollowTheLayer() throws {
        let server = try TestServer(.tcp) {
            $0.httpAddress = "127.0.0.1:0"
            $0.changeHistoryCount = 3
        }
        defer { server.stop() }
        let port = try #require(server.server.gateway?.boundPort)
        let client = try server.client()
        let created = try createLayer(client, "e").version
        _ = try client.upsertMarkers("e", [marker("m0", 0, 0), marker("m1", 0, 5)])

        #expect(try RawHTTP.request(port: port, "GET", "/layers/nope/events").status == 404)
        #expect(try RawHTTP.request(port: port, "GET", "/layers/e/events?bbox=1,2,3").status == 400)

        let sse = try SSEReader(port: port, target: "/layers/e/events?bbox=-10,-10,10,10")
        #expect(sse.head.hasPrefix("HTTP/1.1 200"))
        #expect(sse.head.contains("Content-Type: text/event-stream"))
        #expect(!sse.head.contains("Content-Length"))
        let v1 = try client.moveMarkers("e", [V1.MarkerMove(id: "m0", position: V1.LatLng(latitude: 1, longitude: 1))]).layerVersion
        let v2 = try client.moveMarkers("e", [V1.MarkerMove(id: "m0", position: V1.LatLng(latitude: 50, longitude: 50)),
                                              V1.MarkerMove(id: "m1", position: V1.LatLng(latitude: 2, longitude: 2))]).layerVersion
        let first = try sse.next()
        #expect(first.id == "\(v1)" && first.data["kind"] as? String == "move")
        let moved = try #require(first.data["markers"] as? [[String: Any]])
        #expect(moved.count == 1 && moved[0]["id"] as? String == "m0" && moved[0]["lat"] as? Double == 1)
        let second = try sse.next()
        #expect(second.id == "\(v2)")
        #expect((second.data["markers"] as? [[String: Any]])?.map { $0["id"] as? String } == ["m1"])
        #expect(second.data["removed"] as? [String] == ["m0"])

        // Coming back with the last id seen: the changes after it first, then live events.
        let back = try SSEReader(port: port, target: "/layers/e/events", headers: [("Last-Event-ID", "\(v1)")])
        let caughtUp = try back.next()
        #expect(caughtUp.data["kind"] as? String == "changes" && caughtUp.id == "\(v2)")
        #expect(Set((caughtUp.data["markers"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }) == ["m0", "m1"])
        let v3 = try client.removeMarkers("e", ids: ["m1"]).layerVersion
        let removed = try back.next()
        #expect(removed.id == "\(v3)" && removed.data["removed"] as? [String] == ["m1"])

        // A version older than the history (3 changes): reload.
        let stale = try SSEReader(port: port, target: "/layers/e/events?since=\(created)")
        let reload = try stale.next()
        #expect(reload.event == "reload")
    }

    /// A client that does not read is dropped once 1 MiB waits for it (the connection closes
    /// after what the socket buffers held), while writes go on unhindered.
    @Test func aStalledEventStreamIsDropped() throws {
        let server = try TestServer(.tcp) { $0.httpAddress = "127.0.0.1:0" }
        defer { server.stop() }
        let port = try #require(server.server.gateway?.boundPort)
        let client = try server.client()
        _ = try createLayer(client, "big")
        let stalled = try SSEReader(port: port, target: "/layers/big/events")
        let markers = (0..<2000).map { marker("marker-with-a-long-id-\($0)", Double($0 % 80), Double($0 % 170)) }
        for _ in 0..<60 {  // ~130 KB of JSON per event, 8 MB in all: more than the socket buffers and the 1 MiB queue
            _ = try client.upsertMarkers("big", markers)
        }
        // The server closes the stream: reading what was buffered ends (a live stream would not).
        let rest = try stalled.connection.readToEOF()
        #expect(rest.count < 60 * 100_000, "\(rest.count) bytes read")
    }
}
