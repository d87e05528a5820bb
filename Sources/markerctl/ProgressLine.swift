import Foundation

/// A long command's progress on standard error. On a terminal (isatty(2)): one line redrawn in
/// place with \r (a bar, done/total, rate, ETA), at most 10 times a second. Otherwise (a pipe,
/// a log file): a plain line each time another 10 % is done or 5 s have passed since the last
/// line, e.g. `loading places: 50000/100000 markers (50%), 81234 markers/s, ETA 1 s`.
/// Safe to call from many threads.
final class ProgressLine: @unchecked Sendable {
    private let what: String
    private let unit: String
    private let total: Int
    private let terminal: Bool
    private let start = Date()
    private let lock = NSLock()
    private var lastLine = Date.distantPast
    private var lastDecile = 0
    private var drawn = false

    /// - what: the first words of the line ("loading places"). unit: what is counted ("markers").
    ///   total: how many there are in all (0: the line shows counts without a percentage).
    init(_ what: String, unit: String, total: Int, terminal: Bool = isatty(2) != 0) {
        (self.what, self.unit, self.total, self.terminal) = (what, unit, total, terminal)
    }

    /// Reports that `done` of the total are done (callers pass a rising count).
    func update(_ done: Int) {
        lock.lock()
        defer { lock.unlock() }
        let now = Date()
        let seconds = now.timeIntervalSince(start)
        let rate = seconds > 0 ? Double(done) / seconds : 0
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
        let eta = rate > 0 ? Double(max(0, total - done)) / rate : 0
        if terminal {
            guard now.timeIntervalSince(lastLine) >= 0.1 || done >= total else { return }
            let width = 24, filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
            write(String(format: "\r%@ [%@] %d/%d %@ %3.0f%% %.0f/s ETA %@   ", what, bar, done, total, unit,
                         100 * fraction, rate, Self.duration(eta)))
            drawn = true
        } else {
            let decile = Int(fraction * 10)
            guard decile > lastDecile || now.timeIntervalSince(lastLine) >= 5 else { return }
            lastDecile = decile
            write(String(format: "%@: %d/%d %@ (%.0f%%), %.0f %@/s, ETA %@\n", what, done, total, unit,
                         100 * fraction, rate, unit, Self.duration(eta)))
        }
        lastLine = now
    }

    /// Ends the redrawn line (on a terminal) so that what follows starts on its own line.
    func finish() {
        lock.lock()
        defer { lock.unlock() }
        if terminal && drawn { write("\n") }
        drawn = false
    }

    private func write(_ s: String) { FileHandle.standardError.write(Data(s.utf8)) }

    /// "42 s", "3 min 5 s", "2 h 10 min".
    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        if s < 60 { return "\(s) s" }
        if s < 3600 { return "\(s / 60) min \(s % 60) s" }
        return "\(s / 3600) h \((s % 3600) / 60) min"
    }
}
