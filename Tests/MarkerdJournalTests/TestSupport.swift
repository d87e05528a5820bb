import Foundation
import Synchronization
@testable import MarkerdJournal

/// A fresh directory under the system temp dir (not created: `Journal.open` creates it).
func makeTempDirectory(_ label: String = #function) -> String {
    let safe = label.filter { $0.isLetter || $0.isNumber }
    let dir = NSTemporaryDirectory() + "markerd-journal-\(safe)-\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}

func removeDirectory(_ dir: String) { try? FileManager.default.removeItem(atPath: dir) }


/// Deterministic payload for record `n`, `size` bytes (at least the label).
func payload(_ n: UInt64, size: Int = 24) -> [UInt8] {
    var p = Array("record-\(n)|".utf8)
    var x = n &* 0x9E37_79B9
    while p.count < size { x = x &* 6364136223846793005 &+ 1442695040888963407; p.append(UInt8(truncatingIfNeeded: x >> 33)) }
    return p
}

struct Recovered {
    var journal: Journal
    var report: RecoveryReport
    var sections: [[UInt8]] = []
    var records: [(UInt64, [UInt8])] = []
}

func recover(_ dir: String, policy: SyncPolicy = .always, validateSnapshotFirst: Bool = true,
             sectionsSeen: ((([UInt8]) -> Void))? = nil, log: (@Sendable (String) -> Void)? = nil) throws -> Recovered {
    var sections: [[UInt8]] = []
    var records: [(UInt64, [UInt8])] = []
    let (j, r) = try Journal.open(directory: dir, options: .init(policy: policy, validateSnapshotFirst: validateSnapshotFirst, log: log),
                                  snapshotSection: { sections.append($0); sectionsSeen?($0) },
                                  record: { records.append(($0, $1)) })
    return Recovered(journal: j, report: r, sections: sections, records: records)
}

/// Appends and waits for the completion.
@discardableResult
func appendAndWait(_ j: Journal, _ bytes: [UInt8]) throws -> UInt64 {
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<Result<UInt64, JournalError>?>(nil)
    try j.append(bytes) { r in result.withLock { $0 = r }; done.signal() }
    done.wait()
    return try result.withLock { $0! }.get()
}

func segmentFiles(_ dir: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasPrefix("journal-") }.sorted()
}

func fileSize(_ path: String) -> Int64 {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? -1
}

func readFile(_ path: String) -> [UInt8] { Array(FileManager.default.contents(atPath: path) ?? Data()) }
func writeFile(_ path: String, _ bytes: [UInt8]) { _ = FileManager.default.createFile(atPath: path, contents: Data(bytes)) }

func copyDirectory(_ from: String, _ to: String) {
    removeDirectory(to)
    try! FileManager.default.copyItem(atPath: from, toPath: to)
}

/// Writes a journal of `count` records (rotating every `rotateEvery`) and closes it.
func writeJournal(_ dir: String, count: UInt64, rotateEvery: UInt64 = 0, size: Int = 24) throws {
    let r = try recover(dir)
    for n in r.journal.nextSequenceNumber..<(r.journal.nextSequenceNumber + count) {
        try appendAndWait(r.journal, payload(n, size: size))
        if rotateEvery > 0 && n % rotateEvery == 0 { _ = try r.journal.rotate() }
    }
    try r.journal.close()
}
