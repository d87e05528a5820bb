import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdServer
import MarkerdService
import MarkerdTransport

/// A markerd server running in-process for a test, on its own URL and (optionally) data dir.
final class TestServer {
    let server: MarkerdNode
    let url: String
    let dataDirectory: String?

    enum Transport { case inproc, ipc, tcp }

    /// `clock`: the service's wall clock (Unix ms), e.g. a `ManualClock`'s `read`; default the system's.
    init(_ transport: Transport = .inproc, dataDirectory: String? = nil,
         configure: (inout MarkerdConfiguration) -> Void = { _ in }, clock: (@Sendable () -> Int64)? = nil) throws {
        var config = MarkerdConfiguration()
        let name = "markerd-test-\(UInt64.random(in: 0...UInt64.max))"
        switch transport {
        case .inproc: config.listenURLs = ["inproc://\(name)"]
        case .ipc: config.listenURLs = ["ipc://\(NSTemporaryDirectory())\(name).sock"]
        case .tcp: config.listenURLs = ["tcp://127.0.0.1:0"]
        }
        config.contexts = 8
        config.drainSeconds = 2
        if let dataDirectory {
            config.dataDirectory = dataDirectory
        } else {
            config.ephemeral = true
        }
        configure(&config)
        self.dataDirectory = dataDirectory
        server = try MarkerdNode(configuration: config, clock: clock ?? MarkerService.systemUnixMs)
        try server.start()
        url = server.boundURLs[0]
    }

    func client(timeout: Duration = .seconds(20)) throws -> MarkerdClient {
        try MarkerdClient(url: url, timeout: timeout)
    }

    func stop() { server.stop() }

    static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "markerd-test-\(UInt64.random(in: 0...UInt64.max))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}


func createLayer(_ client: MarkerdClient, _ id: String, minMarkerCount: UInt32? = nil) throws -> V1.Layer {
    var req = V1.CreateLayerRequest()
    req.layerID = id
    if let minMarkerCount {
        var t = V1.TilingOptions()
        t.minMarkerCount = minMarkerCount
        var o = V1.LayerOptions()
        o.tiling = t
        req.options = o
    }
    return try client.createLayer(req)
}

/// The client error a call failed with, or nil if it succeeded.
func clientError(_ body: () throws -> Void) -> ClientError? {
    do {
        try body()
        return nil
    } catch let e as ClientError {
        return e
    } catch {
        return .malformedReply("\(error)")
    }
}

/// The status code a throwing call failed with, or nil if it succeeded.
func statusCode(_ body: () throws -> Void) -> V1.Code? {
    do {
        try body()
        return nil
    } catch let e as ClientError {
        return e.code
    } catch {
        return .unknown
    }
}

/// A 1x1 opaque red PNG, made with Python: IHDR(1, 1, 8-bit RGB) + IDAT(zlib.compress(b"\x00\xff\x00\x00")) + IEND.
let onePixelPNG: [UInt8] = [
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xDE, 0x00, 0x00, 0x00, 0x0C, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0xC9, 0xFE, 0x92, 0xEF, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E,
    0x44, 0xAE, 0x42, 0x60, 0x82,
]
