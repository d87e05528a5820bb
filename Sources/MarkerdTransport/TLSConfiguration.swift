internal import CNNG
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TLS server's certificate files (PEM), for `tls+tcp://` listeners of ``NNGReplyServer`` and
/// HTTPS listeners of ``NNGHTTPServer``. TLS is nng's (libnng 1.5.2 over mbedTLS 2.28): TLS 1.2.
public struct TLSServerFiles: Sendable, Equatable {
    /// The server's certificate, optionally followed by its intermediate CAs (PEM).
    public var certificateFile: String
    /// The certificate's private key (PEM, unencrypted).
    public var keyFile: String
    /// CA certificates (PEM) that client certificates must chain to. nil: no client
    /// certificate is asked for. Set: mutual TLS, a client without a certificate signed by one
    /// of them fails the handshake.
    public var clientCAFile: String?

    public init(certificateFile: String, keyFile: String, clientCAFile: String? = nil) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.clientCAFile = clientCAFile
    }
}

/// A TLS client's settings for `tls+tcp://` URLs of ``NNGRequestClient``.
public struct TLSClientFiles: Sendable, Equatable {
    /// CA certificates (PEM) the server's certificate must chain to. The server is always
    /// verified; nil uses no CA at all, so every server is refused (there is no system store).
    public var caFile: String?
    /// The name the server's certificate must carry (a DNS subjectAltName, or its CN: mbedTLS
    /// 2.28 does not match IP addresses, so `tls+tcp://127.0.0.1:...` needs a name here), also
    /// sent as SNI. nil: the host of the URL.
    public var serverName: String?
    /// A client certificate (PEM) for servers that ask for one (mutual TLS); with ``keyFile``.
    public var certificateFile: String?
    /// The client certificate's private key (PEM, unencrypted).
    public var keyFile: String?

    public init(caFile: String? = nil, serverName: String? = nil, certificateFile: String? = nil, keyFile: String? = nil) {
        self.caFile = caFile
        self.serverName = serverName
        self.certificateFile = certificateFile
        self.keyFile = keyFile
    }
}

/// One `nng_tls_config`, owned (freed on deinit). nng holds its own reference on the config
/// while a listener, dialer or connection uses it, so freeing ours never pulls it from under
/// them. A config must not be changed once in use (mbedTLS shares it with live connections):
/// a reload builds a new one.
final class TLSConfig: @unchecked Sendable {
    let pointer: OpaquePointer

    private init(mode: nng_tls_mode) throws(NNGError) {
        var made: OpaquePointer?
        try nngCheck(nng_tls_config_alloc(&made, mode), "nng_tls_config_alloc")
        guard let made else { throw NNGError(code: NNGError.internalError.code, operation: "nng_tls_config_alloc") }
        pointer = made
    }

    deinit { nng_tls_config_free(pointer) }

    /// A server config: `files`' certificate and key, and with a client CA, client
    /// certificates required and verified. Throws (nothing allocated stays) when a file cannot
    /// be read (`NNG_ESYSERR` with errno) or mbedTLS refuses its contents (`NNG_ECRYPTO`,
    /// `NNG_EINVAL`); the operation names the file.
    convenience init(server files: TLSServerFiles) throws(NNGError) {
        try self.init(mode: NNG_TLS_MODE_SERVER)
        try setOwnCertificate(files.certificateFile, files.keyFile)
        if let ca = files.clientCAFile {
            try setCA(ca)
            try nngCheck(nng_tls_config_auth_mode(pointer, NNG_TLS_AUTH_MODE_REQUIRED), "nng_tls_config_auth_mode(required)")
        } else {
            try nngCheck(nng_tls_config_auth_mode(pointer, NNG_TLS_AUTH_MODE_NONE), "nng_tls_config_auth_mode(none)")
        }
    }

    /// A client config for a server at `host` (the URL's host): the server certificate is
    /// always verified against `files.caFile` and `files.serverName ?? host`.
    convenience init(client files: TLSClientFiles, host: String) throws(NNGError) {
        try self.init(mode: NNG_TLS_MODE_CLIENT)
        try nngCheck(nng_tls_config_auth_mode(pointer, NNG_TLS_AUTH_MODE_REQUIRED), "nng_tls_config_auth_mode(required)")
        if let ca = files.caFile { try setCA(ca) }
        let name = files.serverName ?? host
        try nngCheck(nng_tls_config_server_name(pointer, name), "nng_tls_config_server_name(\(name))")
        switch (files.certificateFile, files.keyFile) {
        case (nil, nil): break
        case let (cert?, key?): try setOwnCertificate(cert, key)
        default:
            throw NNGError(code: NNGError.invalidArgument.code, operation: "TLS client certificate: give both a certificate and its key")
        }
    }

    private func setOwnCertificate(_ certificateFile: String, _ keyFile: String) throws(NNGError) {
        let cert = try Self.readPEM(certificateFile)
        let key = try Self.readPEM(keyFile)
        try nngCheck(nng_tls_config_own_cert(pointer, cert, key, nil),
                     "nng_tls_config_own_cert(\(certificateFile), \(keyFile))")
    }

    private func setCA(_ file: String) throws(NNGError) {
        let pem = try Self.readPEM(file)
        try nngCheck(nng_tls_config_ca_chain(pointer, pem, nil), "nng_tls_config_ca_chain(\(file))")
    }

    /// The whole file as text. Throws `NNG_ESYSERR | errno` naming the file.
    static func readPEM(_ path: String) throws(NNGError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw NNGError(code: Int32(cnng_errno(NNG_ESYSERR)) | errno, operation: "open(\(path))") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw NNGError(code: Int32(cnng_errno(NNG_ESYSERR)) | errno, operation: "read(\(path))")
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[..<n])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// nng 1.5.2 allocates a TLS listener's next connection (with the listener's TLS config of that
/// moment) when it arms the accept, i.e. before a client arrives. So after the listener's
/// config is replaced, the one accept already armed would still hand out the old certificate.
/// Opening and closing one plain TCP connection to the listener consumes that accept (its TLS
/// handshake simply fails), so every client connecting after a reload gets the new certificate.
/// `host` is the listener's host (a wildcard becomes loopback), `port` its bound port.
func consumeArmedAccept(host: String, port: Int) {
    let target: String
    switch host {
    case "", "*", "0.0.0.0": target = "127.0.0.1"
    case "::": target = "[::1]"
    default: target = host.contains(":") ? "[\(host)]" : host
    }
    var dialer: OpaquePointer?
    guard nng_stream_dialer_alloc(&dialer, "tcp://\(target):\(port)") == 0, let dialer else { return }
    defer { nng_stream_dialer_free(dialer) }
    var aio: OpaquePointer?
    guard nng_aio_alloc(&aio, nil, nil) == 0, let aio else { return }
    defer { nng_aio_free(aio) }
    nng_aio_set_timeout(aio, 2000)
    nng_stream_dialer_dial(dialer, aio)
    nng_aio_wait(aio)
    if nng_aio_result(aio) == 0, let stream = nng_aio_get_output(aio, 0) {
        nng_stream_free(OpaquePointer(stream))
    }
}

/// The host of `scheme://host:port[/path]` (an IPv6 address without its brackets), or "" if
/// there is none.
func urlHost(_ url: String) -> String {
    let parts = url.split(separator: "://", maxSplits: 1, omittingEmptySubsequences: false)
    guard parts.count == 2 else { return "" }
    var rest = parts[1]
    if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
    if rest.hasPrefix("[") {
        guard let close = rest.firstIndex(of: "]") else { return String(rest) }
        return String(rest[rest.index(after: rest.startIndex)..<close])
    }
    if let colon = rest.lastIndex(of: ":") { rest = rest[..<colon] }
    return String(rest)
}
