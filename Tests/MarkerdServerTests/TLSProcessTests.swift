import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdServer
import MarkerdTestSupport
import MarkerdTransport
import Testing

/// A real markerd with a `tls+tcp://` listener and the HTTPS gateway (`--tls-cert`, `--tls-key`),
/// certificates made by openssl: calls and tiles over TLS, and SIGHUP giving new connections a new
/// certificate while an open connection goes on, or keeping the old one when the new files are
/// broken.
@Suite struct TLSProcessTests {
    @Test func tlsRPCAndHTTPSTilesReloadOnSIGHUP() throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        try pki.makeCA("ca")
        try pki.makeCA("other-ca")
        try pki.makeCertificate("server", signedBy: "ca")
        let tlsPort = MarkerdProcess.freePort()
        let httpsPort = MarkerdProcess.freePort()
        let p = try MarkerdProcess(arguments: [
            "--ephemeral", "--listen", "tls+tcp://127.0.0.1:\(tlsPort)", "--https", "127.0.0.1:\(httpsPort)",
            "--tls-cert", pki.certificate("server"), "--tls-key", pki.key("server"),
        ])
        defer {
            p.kill(SIGKILL)
            _ = p.waitForExit(timeout: 10)
        }
        let plain = try p.waitUntilReady()
        _ = try createLayer(plain, "city")
        var m = V1.Marker()
        m.id = "a"
        m.position = V1.LatLng(latitude: 35.68, longitude: 139.76)
        _ = try plain.upsertMarkers("city", [m])

        func tlsClient(_ ca: String) throws(ClientError) -> MarkerdClient {
            try MarkerdClient(url: "tls+tcp://127.0.0.1:\(tlsPort)", timeout: .seconds(20),
                              tls: TLSClientFiles(caFile: pki.certificate(ca), serverName: "localhost"))
        }
        /// The transport error a TLS client fails with, or nil when it connects.
        func tlsFailure(_ ca: String) -> NNGError? {
            guard case .transport(let e)? = clientError({ _ = try tlsClient(ca) }) else { return nil }
            return e
        }
        let tile = "https://localhost:\(httpsPort)/tiles/city/256/0/0/0.png"

        let before = try tlsClient("ca")
        #expect(try before.listLayers().map(\.id) == ["city"])
        #expect(tlsFailure("other-ca") == .cryptographic)
        let png = try httpsGet(tile, caFile: pki.certificate("ca"))
        #expect(png.status == 200 && png.contentType == "image/png")
        #expect(png.body.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        #expect(throws: CurlFailed.self) { try httpsGet(tile, caFile: pki.certificate("other-ca")) }

        try pki.makeCertificate("server", signedBy: "other-ca")  // the same paths, another CA
        p.kill(SIGHUP)
        _ = try p.waitForLog("TLS certificates reloaded")
        #expect(try tlsClient("other-ca").listLayers().count == 1)
        #expect(tlsFailure("ca") == .cryptographic)
        #expect(try httpsGet(tile, caFile: pki.certificate("other-ca")).status == 200)
        #expect(throws: CurlFailed.self) { try httpsGet(tile, caFile: pki.certificate("ca")) }
        #expect(try before.listLayers().count == 1, "the connection made before the reload is still served")

        try "not a key\n".write(toFile: pki.key("server"), atomically: true, encoding: .utf8)
        p.kill(SIGHUP)
        let log = try p.waitForLog("TLS certificates not reloaded")
        #expect(log.contains("nng_tls_config_own_cert"), "\(log)")
        #expect(try tlsClient("other-ca").listLayers().count == 1, "the old certificate stays")
        #expect(try httpsGet(tile, caFile: pki.certificate("other-ca")).status == 200)
        #expect(p.process.isRunning)
    }

    @Test func tlsFlagsAreChecked() throws {
        func parseError(_ args: [String]) -> String? {
            do {
                _ = try MarkerdConfiguration.parse(args)
                return nil
            } catch {
                return error.description
            }
        }
        #expect(parseError(["--listen", "tls+tcp://127.0.0.1:7451"])?.contains("--tls-cert") == true)
        #expect(parseError(["--https", "127.0.0.1:8443", "--tls-cert", "c.pem"])?.contains("--tls-key") == true)
        #expect(parseError(["--tls-cert", "c.pem", "--tls-key", "k.pem"])?.contains("tls+tcp://") == true)
        let config = try MarkerdConfiguration.parse(["--listen", "tls+tcp://0.0.0.0:7451", "--https", "https://0.0.0.0:8443",
                                                     "--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-client-ca", "ca.pem"])
        #expect(config.listenURLs == ["tls+tcp://0.0.0.0:7451"] && config.httpsAddress == "0.0.0.0:8443")
        #expect(config.tlsCertificateFile == "c.pem" && config.tlsKeyFile == "k.pem" && config.tlsClientCAFile == "ca.pem")
    }
}
