import Foundation
import MarkerdAuth
import Testing

/// The primitives (against published test vectors), the auth file format, layer patterns, the
/// token table and signed tile URLs.
@Suite struct CryptoTests {
    @Test func sha256MatchesTheFIPSVectors() {
        #expect(Crypto.hex(Crypto.sha256(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Crypto.hex(Crypto.sha256([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func hmacMatchesRFC4231() {
        // RFC 4231 test case 2.
        let mac = Crypto.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(Crypto.hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func base64urlAndHex() {
        // RFC 4648 vectors, URL alphabet, no padding.
        let cases = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in cases { #expect(Crypto.base64url(Array(plain.utf8)) == encoded) }
        #expect(Crypto.base64url([0xFB, 0xFF]) == "-_8")
        #expect(Crypto.bytes(hex: "00ffA0") == [0, 255, 160])
        #expect(Crypto.bytes(hex: "0g") == nil && Crypto.bytes(hex: "abc") == nil)
    }

    @Test func randomBytesDiffer() throws {
        let a = try Crypto.randomBytes(32), b = try Crypto.randomBytes(32)
        #expect(a.count == 32 && a != b)
    }

    @Test func constantTimeEqual() {
        #expect(Crypto.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!Crypto.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!Crypto.constantTimeEqual([1, 2, 3], [1, 2]))
    }
}

@Suite struct AuthFileTests {
    static let digest = String(repeating: "ab", count: 32)

    @Test func patterns() throws {
        let fleet = try #require(LayerPattern("fleet-*"))
        #expect(fleet.matches("fleet-1") && fleet.matches("fleet-") && !fleet.matches("fleet") && !fleet.matches("xfleet-1"))
        let any = try #require(LayerPattern("*"))
        #expect(any.matches("") && any.matches("anything"))
        let middle = try #require(LayerPattern("a*b*c"))
        #expect(middle.matches("abc") && middle.matches("a-b-b-c") && middle.matches("abcbc") && !middle.matches("abcb"))
        let exact = try #require(LayerPattern("depots"))
        #expect(exact.matches("depots") && !exact.matches("depots2"))
        #expect(LayerPattern("bad/layer") == nil && LayerPattern("") == nil)
    }

    @Test func parsesTokensAndPublicLines() throws {
        let text = """
        # comment

        token backend \(Self.digest) read,write fleet-*,depots
        token\tops\t\(String(repeating: "cd", count: 32))\tadmin,read\t*
        public demo-*
        """
        let file = try AuthFile.parse(text)
        #expect(file.tokens.map(\.name) == ["backend", "ops"])
        #expect(file.tokens[0].scopes == [.read, .write] && file.tokens[1].scopes == [.admin, .read])
        #expect(file.tokens[0].layers.map(\.description) == ["fleet-*", "depots"])
        #expect(file.publicLayers.map(\.description) == ["demo-*"])
        #expect(try AuthFile.parse(file.tokens[0].line).tokens == [file.tokens[0]])
    }

    @Test func namesTheBadLine() {
        let bad: [(String, String)] = [
            ("token a \(Self.digest) read", "line 1: a token line is"),
            ("\ntoken a/b \(Self.digest) read *", "line 2: token name"),
            ("token a 1234 read *", "not a SHA-256"),
            ("token a \(Self.digest) read,root *", "scopes \"read,root\""),
            ("token a \(Self.digest) read fleet/*", "layer pattern \"fleet/*\""),
            ("token a \(Self.digest) read *\ntoken a \(String(repeating: "cd", count: 32)) read *", "line 2: token name \"a\" appears twice"),
            ("token a \(Self.digest) read *\ntoken b \(Self.digest) read *", "line 2: token b: the same token hash"),
            ("user a", "line 1: unknown keyword"),
        ]
        for (text, message) in bad {
            do {
                _ = try AuthFile.parse(text)
                Issue.record("parsed \(text)")
            } catch {
                #expect(error.description.contains(message), "\(error.description) lacks \(message)")
            }
        }
    }
}

@Suite struct AuthenticatorTests {
    static func file(_ tokens: [(String, String, Scopes, String)]) -> AuthFile {
        AuthFile(tokens: tokens.map { name, token, scopes, layers in
            TokenRecord(name: name, digest: Crypto.sha256(Array(token.utf8)), scopes: scopes,
                        layers: layers.split(separator: ",").compactMap { LayerPattern($0) })
        })
    }

    @Test func grantsByTokenAndForgetsOnReload() throws {
        let dir = NSTemporaryDirectory() + "markerd-auth-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/tokens"
        let line = { (name: String, token: String) in
            "token \(name) \(Crypto.hex(Crypto.sha256(Array(token.utf8)))) read fleet-*\n"
        }
        try (line("a", "secret-a") + line("b", "secret-b")).write(toFile: path, atomically: true, encoding: .utf8)
        let auth = try Authenticator(path: path)
        #expect(auth.grant(token: "secret-a")?.name == "a")
        #expect(auth.grant(token: "secret-a")?.name == "a")  // remembered
        #expect(auth.grant(token: "secret-b")?.allows(.read, layer: "fleet-9") == true)
        #expect(auth.grant(token: "secret-b")?.allows(.read, layer: "other") == false)
        #expect(auth.grant(token: "secret-b")?.allows(.write, layer: "fleet-9") == false)
        #expect(auth.grant(token: "secret-c") == nil && auth.grant(token: "") == nil && auth.grant(token: "secret-a ") == nil)

        // A broken file keeps the old tokens; a good one replaces them, remembered ones included.
        try "token broken".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: AuthError.self) { try auth.reload() }
        #expect(auth.grant(token: "secret-a")?.name == "a")
        try line("b", "secret-b").write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try auth.reload() == 1)
        #expect(auth.grant(token: "secret-a") == nil)
        #expect(auth.grant(token: "secret-b")?.name == "b")
    }

    @Test func manyTokensPastTheCacheLimit() {
        let n = Authenticator.cacheLimit + 10
        let auth = Authenticator(file: Self.file((0..<n).map { ("t\($0)", "token-\($0)", .read, "*") }))
        for round in 0..<2 {
            for i in stride(from: 0, to: n, by: 97) {
                #expect(auth.grant(token: "token-\(i)")?.name == "t\(i)", "round \(round)")
            }
        }
        #expect(auth.grant(token: "token-\(n)") == nil)
    }
}

@Suite struct TileSignerTests {
    @Test func signsAndChecks() throws {
        let signer = try TileSigner(key: Array(repeating: 7, count: 32))
        let sig = signer.signature(layer: "fleet", expiry: 2_000)
        #expect(sig.utf8.count == 43 && sig.utf8.allSatisfy { $0 == 45 || $0 == 95 || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) })
        #expect(signer.check(layer: "fleet", expiry: 2_000, signature: Substring(sig), now: 1_999) == nil)
        #expect(signer.check(layer: "fleet", expiry: 2_000, signature: Substring(sig), now: 2_000) == .expired)
        #expect(signer.check(layer: "fleet2", expiry: 2_000, signature: Substring(sig), now: 1_000) == .forged)
        #expect(signer.check(layer: "fleet", expiry: 2_001, signature: Substring(sig), now: 1_000) == .forged)
        let other = try TileSigner(key: Array(repeating: 8, count: 32))
        #expect(other.check(layer: "fleet", expiry: 2_000, signature: Substring(sig), now: 1_000) == .forged)
        #expect(signer.prefix(layer: "fleet", expiry: 2_000) == "/t/2000.\(sig)")
        #expect(throws: AuthError.self) { try TileSigner(key: [1, 2, 3]) }
    }

    @Test func createsAndReadsAKeyFile() throws {
        let path = NSTemporaryDirectory() + "markerd-key-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let a = try TileSigner.loadOrCreate(path: path)
        let b = try TileSigner.loadOrCreate(path: path)
        #expect(a == b)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try String(contentsOfFile: path, encoding: .utf8).count == 65)
    }
}

@Suite struct QuotaBookTests {
    /// A clock the test moves.
    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var t = ContinuousClock.now
        var now: ContinuousClock.Instant { lock.lock(); defer { lock.unlock() }; return t }
        func advance(_ d: Duration) { lock.lock(); t = t + d; lock.unlock() }
    }

    func grant(_ limits: Limits, name: String = "t") -> Grant { Grant(name: name, scopes: .read, layers: [], limits: limits) }

    @Test func requestRate() throws {
        let clock = Clock()
        let book = QuotaBook(now: { clock.now })
        let g = grant(Limits(requestsPerSecond: 2))
        #expect(book.admit(g, bytes: 0, expensive: false) == nil)
        #expect(book.admit(g, bytes: 0, expensive: false) == nil)
        let refusal = try #require(book.admit(g, bytes: 0, expensive: false))
        #expect(refusal.retryAfterMilliseconds == 500 && refusal.reason.contains("rps=2"))
        clock.advance(.milliseconds(499))
        #expect(book.admit(g, bytes: 0, expensive: false) != nil)
        clock.advance(.milliseconds(1))
        #expect(book.admit(g, bytes: 0, expensive: false) == nil)
        // Another token has its own bucket; a token without limits is never refused.
        #expect(book.admit(grant(Limits(requestsPerSecond: 2), name: "u"), bytes: 0, expensive: false) == nil)
        for _ in 0..<100 { #expect(book.admit(grant(Limits()), bytes: 1 << 30, expensive: true) == nil) }
        // A refund gives the request back.
        clock.advance(.seconds(10))
        #expect(book.admit(g, bytes: 0, expensive: false) == nil)
        book.refund(g, bytes: 0, expensive: false)
        #expect(book.admit(g, bytes: 0, expensive: false) == nil)
        #expect(book.admit(g, bytes: 0, expensive: false) == nil)
        #expect(book.admit(g, bytes: 0, expensive: false) != nil)
    }

    @Test func byteRateTakesRepliesIntoDebt() throws {
        let clock = Clock()
        let book = QuotaBook(now: { clock.now })
        let g = grant(Limits(bytesPerSecond: 100))
        #expect(book.admit(g, bytes: 30, expensive: false) == nil)   // 70 left
        book.finish(g, replyBytes: 120, expensive: false)              // -50
        let refusal = try #require(book.admit(g, bytes: 1, expensive: false))
        #expect(refusal.retryAfterMilliseconds == 510)
        clock.advance(.milliseconds(510))
        #expect(book.admit(g, bytes: 1, expensive: false) == nil)
    }

    @Test func expensiveInFlight() {
        let book = QuotaBook()
        let g = grant(Limits(concurrentExpensive: 1))
        #expect(book.admit(g, bytes: 0, expensive: true) == nil)
        #expect(book.admit(g, bytes: 0, expensive: true)?.retryAfter == QuotaBook.expensiveRetry)
        #expect(book.admit(g, bytes: 0, expensive: false) == nil, "cheap requests are not counted")
        book.finish(g, replyBytes: 0, expensive: true)
        #expect(book.admit(g, bytes: 0, expensive: true) == nil)
    }

    @Test func limitsInTheAuthFile() throws {
        let digest = String(repeating: "ab", count: 32)
        let file = try AuthFile.parse("token a \(digest) read * rps=2.5 bps=1048576 expensive=3")
        let limits = file.tokens[0].limits
        #expect(limits == Limits(requestsPerSecond: 2.5, bytesPerSecond: 1_048_576, concurrentExpensive: 3))
        #expect(file.tokens[0].line.hasSuffix(" * rps=2.5 bps=1048576 expensive=3"))
        #expect(try AuthFile.parse(file.tokens[0].line).tokens == file.tokens)
        for bad in ["rps=0", "rps=x", "expensive=0", "bps=-1", "burst=3", "rps"] {
            #expect(throws: AuthError.self, "\(bad)") { try AuthFile.parse("token a \(digest) read * \(bad)") }
        }
    }
}
