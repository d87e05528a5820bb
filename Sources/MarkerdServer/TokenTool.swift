import Foundation
import MarkerdAuth

/// `markerd token add|list|revoke`: edits an auth file (``AuthFile``) in place, keeping its other
/// lines and comments; the file is replaced atomically (a temporary file renamed over it) with
/// mode 0600. A running markerd picks the change up on SIGHUP.
public enum TokenTool {
    public static let defaultAuthFile = "/etc/markerd/tokens"

    public static let usage = """
    usage: markerd token add NAME --scopes read,write,admin --layers PATTERNS [--auth-file PATH]
                             [--rps N] [--bps N] [--expensive N]
               print a new random token once (store it now: only its SHA-256 is kept)
           markerd token list [--auth-file PATH]
           markerd token revoke NAME [--auth-file PATH]
    SCOPES: read (queries, tiles), write (markers, drags, icons), admin (layers, snapshots), comma-separated.
    PATTERNS: layer ids with * for any run of characters, comma-separated, e.g. 'fleet-*,depots' or '*'.
    Quotas (default none): --rps requests/s, --bps request+reply bytes/s, --expensive renders, tiles,
    clusters, viewport pages and snapshots in flight at once. Over them: RESOURCE_EXHAUSTED / HTTP 429
    with a retry hint.
    The auth file also takes `public PATTERNS` lines (edit by hand): layers whose tiles need no token.
    Default auth file \(defaultAuthFile). Reload a running markerd with SIGHUP (systemctl reload markerd).
    """

    /// Runs `arguments` (after `token`); returns the exit status (0 ok, 1 failure, 2 usage).
    /// `output` gets what goes to standard output (the new token; the list).
    public static func run(_ arguments: [String], output: (String) -> Void = { print($0) },
                           error report: (String) -> Void = { FileHandle.standardError.write(Data(("markerd: " + $0 + "\n").utf8)) }) -> Int32 {
        var positional: [String] = []
        var path = defaultAuthFile, scopesText: String?, layersText: String?
        var limitFields: [String] = []
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            if ["--auth-file", "--scopes", "--layers", "--rps", "--bps", "--expensive"].contains(arg) {
                guard i + 1 < arguments.count else { report("\(arg) needs a value\n\n\(usage)"); return 2 }
                switch arg {
                case "--auth-file": path = arguments[i + 1]
                case "--scopes": scopesText = arguments[i + 1]
                case "--layers": layersText = arguments[i + 1]
                default: limitFields.append(arg.dropFirst(2) + "=" + arguments[i + 1])
                }
                i += 2
            } else if arg == "-h" || arg == "--help" {
                output(usage)
                return 0
            } else {
                positional.append(arg)
                i += 1
            }
        }
        do throws(AuthError) {
            switch positional.first {
            case "add":
                guard positional.count == 2, let scopesText, let layersText else { report(usage); return 2 }
                var limits = Limits()
                for field in limitFields { try limits.set(field) }
                let token = try add(name: positional[1], scopes: scopesText, layers: layersText, limits: limits, path: path)
                output(token)
                report("token \(positional[1]) added to \(path); it is shown only now. Reload markerd (SIGHUP) to use it.")
            case "list":
                guard positional.count == 1 else { report(usage); return 2 }
                let file = try AuthFile.load(path: path)
                for t in file.tokens {
                    output("\(t.name)\t\(t.scopes)\t\(t.layers.map(\.description).joined(separator: ","))\(t.limits.fields.replacingOccurrences(of: " ", with: "\t"))")
                }
                if !file.publicLayers.isEmpty {
                    output("(public)\t-\t\(file.publicLayers.map(\.description).joined(separator: ","))")
                }
            case "revoke":
                guard positional.count == 2 else { report(usage); return 2 }
                try revoke(name: positional[1], path: path)
                report("token \(positional[1]) revoked in \(path). Reload markerd (SIGHUP) to refuse it.")
            default:
                report(usage)
                return 2
            }
        } catch {
            report(error.description)
            return 1
        }
        return 0
    }

    /// Adds a token called `name` and returns it: `mkd_` and 43 base64url characters (256 bits
    /// from getrandom). Creates the file when missing.
    public static func add(name: String, scopes scopesText: String, layers layersText: String, limits: Limits = Limits(),
                           path: String) throws(AuthError) -> String {
        guard TokenRecord.isValidName(name) else { throw AuthError("token name \"\(name)\" is not 1-64 bytes of A-Z a-z 0-9 . _ - @") }
        guard let scopes = Scopes(list: scopesText) else {
            throw AuthError("--scopes \"\(scopesText)\" is not a comma-separated list of read, write, admin")
        }
        var layers: [LayerPattern] = []
        for piece in layersText.split(separator: ",", omittingEmptySubsequences: false) {
            guard let p = LayerPattern(piece) else { throw AuthError("--layers: \"\(piece)\" is not a layer pattern (A-Z a-z 0-9 . _ - and *)") }
            layers.append(p)
        }
        let text = FileManager.default.fileExists(atPath: path) ? try read(path) : header
        let file = try parse(text, path)
        guard !file.tokens.contains(where: { $0.name == name }) else { throw AuthError("\(path) already has a token called \(name)") }
        let token = "mkd_" + Crypto.base64url(try Crypto.randomBytes(32))
        let record = TokenRecord(name: name, digest: Crypto.sha256(Array(token.utf8)), scopes: scopes, layers: layers, limits: limits)
        try write((text.hasSuffix("\n") || text.isEmpty ? text : text + "\n") + record.line + "\n", to: path)
        return token
    }

    /// Removes the token called `name`; throws when there is none.
    public static func revoke(name: String, path: String) throws(AuthError) {
        let text = try read(path)
        _ = try parse(text, path)
        var removed = 0
        let kept = text.split(separator: "\n", omittingEmptySubsequences: false).filter { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            let match = fields.count >= 2 && fields[0] == "token" && fields[1] == name
            if match { removed += 1 }
            return !match
        }
        guard removed > 0 else { throw AuthError("\(path) has no token called \(name)") }
        try write(kept.joined(separator: "\n"), to: path)
    }

    static let header = """
    # markerd auth file (markerd --auth-file). Lines:
    #   token NAME SHA256-OF-TOKEN SCOPES LAYERS [rps=N] [bps=N] [expensive=N]
    #                                               scopes: read,write,admin; layers: patterns with *
    #   public LAYERS                               layers whose HTTP tiles need no token
    # Edit with `markerd token add|list|revoke`; reload markerd with SIGHUP.

    """

    private static func read(_ path: String) throws(AuthError) -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw AuthError("cannot read auth file \(path): \(error.localizedDescription)")
        }
    }

    private static func parse(_ text: String, _ path: String) throws(AuthError) -> AuthFile {
        do {
            return try AuthFile.parse(text)
        } catch {
            throw AuthError("auth file \(path), \(error.description); fix it first")
        }
    }

    /// Writes `text` to a temporary file beside `path` (mode 0600), fsyncs it and renames it over `path`.
    private static func write(_ text: String, to path: String) throws(AuthError) {
        let tmp = path + ".tmp-\(getpid())"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw AuthError("cannot write \(tmp): \(String(cString: strerror(errno)))") }
        var bytes = Array(text.utf8)
        let ok = bytes.withUnsafeMutableBytes { b in Glibc.write(fd, b.baseAddress, b.count) == b.count } && fsync(fd) == 0
        close(fd)
        guard ok, rename(tmp, path) == 0 else {
            let message = String(cString: strerror(errno))
            unlink(tmp)
            throw AuthError("cannot write \(path): \(message)")
        }
    }
}
