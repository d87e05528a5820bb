import Foundation
import MarkerdTestSupport
import MarkerdTransport
import Testing

/// TLS on `tls+tcp://` (NNGReplyServer + NNGRequestClient) and HTTPS (NNGHTTPServer), with
/// certificates made by openssl for each test: one CA signs the server and client
/// certificates, a second CA stands for "someone else".
@Suite(.serialized) struct TLSTests {
    let pki: TestCertificates

    init() throws {
        pki = try TestCertificates()
        try pki.makeCA("ca")
        try pki.makeCA("other-ca")
        try pki.makeCertificate("server", signedBy: "ca")
        try pki.makeCertificate("client", signedBy: "ca")
    }

    func server(_ files: TLSServerFiles) throws -> NNGReplyServer {
        let server = NNGReplyServer(configuration: ServerConfiguration(listenURLs: ["tls+tcp://127.0.0.1:0"], contexts: 4,
                                                                      tls: files),
                                    handler: EchoHandler())
        try server.start()
        return server
    }

    func serverFiles(_ name: String = "server", clientCA: String? = nil) -> TLSServerFiles {
        TLSServerFiles(certificateFile: pki.certificate(name), keyFile: pki.key(name), clientCAFile: clientCA.map(pki.certificate))
    }

    func client(_ url: String, ca: String = "ca", certificate: String? = nil) throws(NNGError) -> NNGRequestClient {
        try NNGRequestClient(configuration: ClientConfiguration(
            url: url, tls: TLSClientFiles(caFile: pki.certificate(ca), serverName: "localhost",
                                          certificateFile: certificate.map(pki.certificate), keyFile: certificate.map(pki.key))))
    }

    /// The error a client's TLS dial fails with, or nil if it connects and an echo comes back.
    func failure(_ url: String, ca: String = "ca", certificate: String? = nil) -> NNGError? {
        do throws(NNGError) {
            let c = try client(url, ca: ca, certificate: certificate)
            defer { c.close() }
            let reply = try c.call([1, 2, 3], timeout: .seconds(10))
            return reply == [1, 2, 3] ? nil : NNGError(code: NNGError.internalError.code, operation: "wrong echo \(reply)")
        } catch {
            return error
        }
    }

    @Test func validChainIsServed() throws {
        defer { pki.remove() }
        let s = try server(serverFiles())
        defer { s.stop(drainTimeout: .zero) }
        let url = try #require(s.boundURLs.first)
        #expect(url.hasPrefix("tls+tcp://127.0.0.1:") && !url.hasSuffix(":0"))
        #expect(failure(url) == nil)
    }

    @Test func serverSignedByAnotherCAIsRefusedByTheClient() throws {
        defer { pki.remove() }
        let s = try server(serverFiles())
        defer { s.stop(drainTimeout: .zero) }
        #expect(failure(s.boundURLs[0], ca: "other-ca") == .cryptographic)
        // And a plain tcp:// client cannot talk to a TLS listener either.
        let plain = try NNGRequestClient(url: s.boundURLs[0].replacingOccurrences(of: "tls+tcp://", with: "tcp://"))
        defer { plain.close() }
        #expect(throws: NNGError.timedOut) { try plain.call([1], timeout: .milliseconds(500)) }
    }

    @Test func expiredServerCertificateIsRefused() throws {
        defer { pki.remove() }
        try pki.makeCertificate("expired", signedBy: "ca", expired: true)
        let s = try server(serverFiles("expired"))
        defer { s.stop(drainTimeout: .zero) }
        #expect(failure(s.boundURLs[0]) == .cryptographic)
    }

    @Test func wrongServerNameIsRefused() throws {
        defer { pki.remove() }
        let s = try server(serverFiles())
        defer { s.stop(drainTimeout: .zero) }
        let error = throwsNNG {
            _ = try NNGRequestClient(configuration: ClientConfiguration(
                url: s.boundURLs[0], tls: TLSClientFiles(caFile: pki.certificate("ca"), serverName: "markerd.example.com")))
        }
        #expect(error == .cryptographic)
    }

    @Test func mutualTLSRequiresAClientCertificateFromTheClientCA() throws {
        defer { pki.remove() }
        try pki.makeCertificate("stranger", signedBy: "other-ca")
        let s = try server(serverFiles(clientCA: "ca"))
        defer { s.stop(drainTimeout: .zero) }
        let url = s.boundURLs[0]
        #expect(failure(url) == .connectionShutdown, "the server closes the handshake of a client without a certificate")
        #expect(failure(url, certificate: "stranger") == .cryptographic)
        #expect(failure(url, certificate: "client") == nil)
    }

    @Test func clientStartedBeforeItsServerConnectsLater() throws {
        defer { pki.remove() }
        let port = try freeTCPPort()
        let url = "tls+tcp://127.0.0.1:\(port)"
        let c = try client(url)  // connection refused: dials on in the background
        defer { c.close() }
        let s = NNGReplyServer(configuration: ServerConfiguration(listenURLs: [url], contexts: 2, tls: serverFiles()),
                               handler: EchoHandler())
        try s.start()
        defer { s.stop(drainTimeout: .zero) }
        #expect(try c.call([7], timeout: .seconds(20)) == [7])
    }

    @Test func badCertificateFilesFailStart() throws {
        defer { pki.remove() }
        let missing = NNGReplyServer(configuration: ServerConfiguration(
            listenURLs: ["tls+tcp://127.0.0.1:0"], tls: TLSServerFiles(certificateFile: pki.directory + "/none.pem", keyFile: pki.key("server"))),
            handler: EchoHandler())
        let error = try #require(throwsNNG { try missing.start() })
        #expect(error.systemErrno == ENOENT && error.operation.contains("none.pem"), "\(error)")
        let noFiles = NNGReplyServer(configuration: ServerConfiguration(listenURLs: ["tls+tcp://127.0.0.1:0"]), handler: EchoHandler())
        #expect(throwsNNG { try noFiles.start() } == .invalidArgument)
        let garbage = pki.directory + "/garbage.pem"
        try "not a certificate\n".write(toFile: garbage, atomically: true, encoding: .utf8)
        let bad = NNGReplyServer(configuration: ServerConfiguration(
            listenURLs: ["tls+tcp://127.0.0.1:0"], tls: TLSServerFiles(certificateFile: garbage, keyFile: pki.key("server"))),
            handler: EchoHandler())
        #expect(throwsNNG { try bad.start() } != nil)
    }

    /// SIGHUP's work: files replaced on disk, then `reloadTLS`. New connections get the new
    /// certificate, the connection already open keeps working, a broken file keeps the old one.
    @Test func reloadGivesNewConnectionsTheNewCertificate() throws {
        defer { pki.remove() }
        let s = try server(serverFiles())
        defer { s.stop(drainTimeout: .zero) }
        let url = s.boundURLs[0]
        let before = try client(url)
        defer { before.close() }
        #expect(try before.call([1], timeout: .seconds(10)) == [1])

        try pki.makeCertificate("server", signedBy: "other-ca")  // same paths, another CA
        try s.reloadTLS()
        #expect(failure(url, ca: "other-ca") == nil)
        #expect(failure(url, ca: "ca") == .cryptographic)
        #expect(try before.call([2], timeout: .seconds(10)) == [2])

        try "broken\n".write(toFile: pki.key("server"), atomically: true, encoding: .utf8)
        #expect(throwsNNG { try s.reloadTLS() } != nil)
        #expect(failure(url, ca: "other-ca") == nil)
    }

    @Test func httpsServesAndReloads() throws {
        defer { pki.remove() }
        let server = NNGHTTPServer(
            configuration: HTTPServerConfiguration(address: "127.0.0.1:0", tls: serverFiles()),
            handler: HTTPHandlerClosure { _, responder in responder.respond(.text(200, "over tls\n")) })
        try server.start()
        defer { server.stop(drainTimeout: .zero) }
        #expect(server.boundURL.hasPrefix("https://127.0.0.1:"))
        let url = "https://localhost:\(server.boundPort)/x"
        let reply = try httpsGet(url, caFile: pki.certificate("ca"))
        #expect(reply.status == 200 && String(decoding: reply.body, as: UTF8.self) == "over tls\n")
        #expect(throws: CurlFailed.self) { try httpsGet(url, caFile: pki.certificate("other-ca")) }

        try pki.makeCertificate("server", signedBy: "other-ca")
        try server.reloadTLS()
        #expect(try httpsGet(url, caFile: pki.certificate("other-ca")).status == 200)
        #expect(throws: CurlFailed.self) { try httpsGet(url, caFile: pki.certificate("ca")) }
    }
}

/// The NNGError `body` throws (another error as `.internalError` naming it), or nil.
func throwsNNG(_ body: () throws -> Void) -> NNGError? {
    do {
        try body()
        return nil
    } catch let error as NNGError {
        return error
    } catch {
        return NNGError(code: NNGError.internalError.code, operation: "\(error)")
    }
}

/// A loopback TCP port free right now (bound, read back, closed).
func freeTCPPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
    }
    guard ok else { throw NNGError.addressInUse }
    return Int(UInt16(bigEndian: addr.sin_port))
}
