import Dispatch
import Foundation
import MarkerdTestSupport
import MarkerdTransport

/// The latency floor: a bare NNG REQ/REP round trip over loopback TCP between two processes,
/// like a markerd call but with no protobuf, no dispatch and no work.
///
/// The server is marker-bench itself, started as `marker-bench --echo-server`: an
/// ``NNGReplyServer`` that answers inline on the nng callback thread with as many bytes as the
/// request's first 4 bytes ask for (little-endian UInt32). So one floor can have the request and
/// reply sizes of the RPC it is compared with (a QueryViewport request is ~100 B, its NATIVE
/// reply tens of KB).
///
/// The echo server listens on `tls+tcp://` too (a certificate made with openssl at start), for
/// the TLS rows: the same round trip over TLS, and a new client's connect + handshake + first call.
enum Floor {
    /// Request/reply sizes of one floor measurement, in bytes.
    struct Sizes: Hashable, Sendable, CustomStringConvertible {
        var request: Int
        var reply: Int
        var description: String { request == reply ? "\(Table.bytes(request))" : "\(Table.bytes(request)) -> \(Table.bytes(reply))" }
    }

    /// Runs the echo server (the `--echo-server [CERT KEY]` mode): prints "listening
    /// tcp://...[,tls+tcp://...]" on standard output and serves until killed. With a certificate
    /// and key (PEM files) it listens on tls+tcp:// too. Never returns.
    static func runEchoServer(tls: TLSServerFiles?) -> Never {
        struct SizedEcho: RequestHandler {
            func handle(_ request: IncomingRequest) {
                let body = request.body
                var size = body.count
                if body.count >= 4 { size = Int(body.loadUnaligned(as: UInt32.self).littleEndian) }
                request.respond(size: size) { out in
                    let copied = min(size, body.count)
                    out.copyMemory(from: UnsafeRawBufferPointer(rebasing: body.prefix(copied)))
                    if size > copied {
                        UnsafeMutableRawBufferPointer(rebasing: out[copied...]).initializeMemory(as: UInt8.self, repeating: 0x5A)
                    }
                }
            }
        }
        let server = NNGReplyServer(
            configuration: ServerConfiguration(listenURLs: ["tcp://127.0.0.1:0"] + (tls == nil ? [] : ["tls+tcp://127.0.0.1:0"]),
                                               contexts: 8, maxMessageBytes: 256 << 20, tls: tls),
            handler: SizedEcho())
        do {
            try server.start()
        } catch {
            FileHandle.standardError.write("echo server: \(error)\n".data(using: .utf8)!)
            exit(1)
        }
        FileHandle.standardOutput.write("listening \(server.boundURLs.joined(separator: ","))\n".data(using: .utf8)!)
        // Ends with its parent: a marker-bench killed without stopping its children (SIGKILL, or
        // SIGPIPE when its output went to a pipe that closed early) would otherwise leave this
        // server running, as orphans of such runs were found here.
        let parent = getppid()
        let watch = DispatchSource.makeTimerSource(queue: .global())
        watch.schedule(deadline: .now() + 1, repeating: 1)
        watch.setEventHandler { if getppid() != parent { exit(0) } }
        watch.resume()
        withExtendedLifetime((server, watch)) { dispatchMain() }
    }

    /// A client of a running echo server process.
    final class Client {
        let child: ChildProcess
        let requester: NNGRequestClient
        /// The echo server's tls+tcp:// URL, the client settings that trust it, and a client on it.
        let tlsURL: String
        let tls: TLSClientFiles
        let tlsRequester: NNGRequestClient
        private let certificates: TestCertificates

        /// Makes a CA and a server certificate (openssl), starts `executable --echo-server CERT
        /// KEY` and connects to it over tcp:// and tls+tcp://.
        init(executable: String, echo: Bool) throws {
            certificates = try TestCertificates()
            try certificates.makeCA("ca")
            try certificates.makeCertificate("server", signedBy: "ca")
            child = ChildProcess(name: "echo", executable: executable,
                                 arguments: ["--echo-server", certificates.certificate("server"), certificates.key("server")], echo: echo)
            let urls = try child.start(timeout: .seconds(30)).split(separator: ",").map(String.init)
            guard urls.count == 2 else { throw BenchError("echo server announced \(urls), expected tcp:// and tls+tcp://") }
            requester = try NNGRequestClient(configuration: ClientConfiguration(url: urls[0], maxMessageBytes: 256 << 20))
            tlsURL = urls[1]
            tls = TLSClientFiles(caFile: certificates.certificate("ca"), serverName: "localhost")
            tlsRequester = try NNGRequestClient(configuration: ClientConfiguration(url: tlsURL, maxMessageBytes: 256 << 20, tls: tls))
        }

        /// Times `iterations` sequential round trips of `sizes` (after `warmup` untimed ones).
        func measure(_ sizes: Sizes, iterations: Int, warmup: Int = 500) throws -> LatencySummary {
            for _ in 0..<warmup { _ = try roundTrip(sizes) }
            return LatencySummary(samplesMicros: try (0..<iterations).map { _ in try roundTrip(sizes).micros })
        }

        /// Times `iterations` round trips of `sizes` over tls+tcp:// and as many over tcp://,
        /// alternating (after `warmup` of each), so that both see the same machine load.
        func measureTLSAndTCP(_ sizes: Sizes, iterations: Int, warmup: Int = 500) throws -> (tls: LatencySummary, tcp: LatencySummary) {
            for _ in 0..<warmup {
                _ = try roundTrip(sizes, on: tlsRequester)
                _ = try roundTrip(sizes)
            }
            var tls: [Double] = [], tcp: [Double] = []
            for _ in 0..<iterations {
                tls.append(try roundTrip(sizes, on: tlsRequester).micros)
                tcp.append(try roundTrip(sizes).micros)
            }
            return (LatencySummary(samplesMicros: tls), LatencySummary(samplesMicros: tcp))
        }

        /// Times `iterations` new tls+tcp:// clients from creation to their first 100 B reply:
        /// TCP connect, TLS handshake, SP header exchange and one round trip (after 3 untimed).
        func measureTLSConnect(iterations: Int) throws -> LatencySummary {
            func once() throws -> Double {
                let start = ContinuousClock.now
                let client = try NNGRequestClient(configuration: ClientConfiguration(url: tlsURL, tls: tls))
                defer { client.close() }
                _ = try roundTrip(Sizes(request: 100, reply: 100), on: client)
                return (ContinuousClock.now - start).micros
            }
            for _ in 0..<3 { _ = try once() }
            return LatencySummary(samplesMicros: try (0..<iterations).map { _ in try once() })
        }

        /// One round trip of `sizes` on `on` (default the tcp:// client): the request is
        /// `sizes.request` bytes (at least 4), the reply `sizes.reply` bytes. Returns its
        /// duration, until the reply is in the client's nng message (where `RPCTiming` stops
        /// the clock of an RPC too).
        func roundTrip(_ sizes: Sizes, on: NNGRequestClient? = nil) throws -> Duration {
            let request = max(4, sizes.request)
            let reply = UInt32(sizes.reply).littleEndian
            let start = ContinuousClock.now
            var arrived = start
            let got = try (on ?? requester).call(requestSize: request, timeout: .seconds(10),
                                         write: { out in
                                             out.initializeMemory(as: UInt8.self, repeating: 0x5A)
                                             out.storeBytes(of: reply, as: UInt32.self)
                                         },
                                         read: { arrived = ContinuousClock.now; return $0.count })
            let elapsed = arrived - start
            guard got == sizes.reply else { throw BenchError("echo replied \(got) bytes, expected \(sizes.reply)") }
            return elapsed
        }

        func stop() {
            requester.close()
            tlsRequester.close()
            child.stop(timeout: .seconds(5), expectSIGTERM: true)
            certificates.remove()
        }
    }
}
