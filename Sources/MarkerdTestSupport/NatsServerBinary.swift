import Foundation

/// Where `nats-server` is, for the cluster tests and marker-bench's cluster section:
/// `$NATS_SERVER_BIN`, else the first on PATH or in /usr/sbin, /usr/bin, /usr/local/bin (Debian's
/// package installs /usr/sbin/nats-server); nil when it is not installed.
public func natsServerBinary() -> String? {
    let environment = ProcessInfo.processInfo.environment
    if let path = environment["NATS_SERVER_BIN"] { return path }
    let path = (environment["PATH"] ?? "") + ":/usr/sbin:/usr/bin:/usr/local/bin"
    return path.split(separator: ":").map { "\($0)/nats-server" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// What a test says when `nats-server` is missing.
public let natsServerMissing = "nats-server is not installed: the cluster tests need it "
    + "(apt-get install nats-server, or scripts/install-deps.sh --test)"
