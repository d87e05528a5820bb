import Foundation

/// Thrown by `waitUntil` when the condition did not hold within the timeout.
public struct WaitTimedOut: Error, CustomStringConvertible {
    public var what: String
    public var description: String { "timed out waiting until \(what)" }
}

/// Polls `condition` every 5 ms until it holds; throws `WaitTimedOut` naming `what` after
/// `timeout` (default 30 s: a bound for a loaded machine, not an expected duration). For states
/// that another thread or process reaches with no event to wait on.
public func waitUntil(_ what: String, timeout: Duration = .seconds(30), _ condition: () throws -> Bool) throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimedOut(what: what) }
        Thread.sleep(forTimeInterval: 0.005)
    }
}
