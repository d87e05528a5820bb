import Foundation

/// Certificates for TLS tests and benchmarks, made with the `openssl` command line tool
/// (Debian's `openssl` package) in a temporary directory: CAs, and server or client
/// certificates they sign. Keys are EC P-256 (fast to make). Every certificate carries
/// `CN=<name>` and the subjectAltNames `DNS:localhost, IP:127.0.0.1`.
public struct TestCertificates: Sendable {
    public let directory: String

    public struct OpenSSLFailed: Error, CustomStringConvertible {
        public var description: String
    }

    /// Makes a fresh temporary directory.
    public init() throws {
        directory = NSTemporaryDirectory() + "markerd-tls-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// `name.pem` (the certificate) in the directory.
    public func certificate(_ name: String) -> String { "\(directory)/\(name).pem" }
    /// `name.key` (its private key) in the directory.
    public func key(_ name: String) -> String { "\(directory)/\(name).key" }

    /// A self-signed CA certificate `name`, valid for 2 days.
    public func makeCA(_ name: String) throws {
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", key(name), "-out", certificate(name), "-days", "2", "-subj", "/CN=\(name)"])
    }

    /// A certificate `name` signed by the CA `ca`, valid for 2 days from now, or, when
    /// `expired`, one whose validity ended a day ago.
    public func makeCertificate(_ name: String, signedBy ca: String, expired: Bool = false) throws {
        let request = "\(directory)/\(name).csr"
        let extensions = "\(directory)/\(name).ext"
        try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", key(name), "-out", request, "-subj", "/CN=\(name)"])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: extensions, atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", request, "-CA", certificate(ca), "-CAkey", key(ca), "-CAcreateserial",
                     "-out", certificate(name), "-days", expired ? "-1" : "2", "-extfile", extensions])
    }

    /// Removes the directory.
    public func remove() { try? FileManager.default.removeItem(atPath: directory) }

    private func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw OpenSSLFailed(description: "openssl \(arguments.joined(separator: " ")): \(String(decoding: message, as: UTF8.self))")
        }
    }
}

/// What `httpsGet` fetched.
public struct HTTPSReply: Sendable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]
}

/// `curl` failed (its exit status: 35 a TLS handshake failure, 60 a certificate not trusted).
public struct CurlFailed: Error, CustomStringConvertible {
    public var exitStatus: Int32
    public var description: String { "curl exited with \(exitStatus)" }
}

/// GETs `url` (`https://localhost:PORT/...`, resolved to 127.0.0.1) with the `curl` command line
/// tool, trusting only the CA certificates in `caFile`. Throws ``CurlFailed`` when curl cannot
/// connect or the TLS handshake fails.
public func httpsGet(_ url: String, caFile: String) throws -> HTTPSReply {
    guard let parsed = URL(string: url), let port = parsed.port else { throw CurlFailed(exitStatus: 3) }
    let bodyFile = NSTemporaryDirectory() + "markerd-curl-\(UInt64.random(in: 0...UInt64.max))"
    defer { try? FileManager.default.removeItem(atPath: bodyFile) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-sS", "--max-time", "20", "--resolve", "localhost:\(port):127.0.0.1", "--cacert", caFile,
                         "-o", bodyFile, "-w", "%{http_code} %{content_type}", url]
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    let written = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw CurlFailed(exitStatus: process.terminationStatus) }
    let parts = written.split(separator: " ", maxSplits: 1)
    let body = FileManager.default.contents(atPath: bodyFile).map { [UInt8]($0) } ?? []
    return HTTPSReply(status: parts.first.flatMap { Int($0) } ?? 0, contentType: parts.count > 1 ? String(parts[1]) : "", body: body)
}
