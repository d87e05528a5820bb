import MarkerdAPI

/// The recent changes of one layer, for GetChanges: each applied mutation's version, kind and
/// the ids it touched (not their state: GetChanges reads the markers' current state), bounded
/// by count and bytes (`ServiceConfiguration.changeHistoryCount` / `changeHistoryBytes`); the
/// oldest go first. In memory only: a restart starts every layer's history empty, above every
/// version from before it. Guarded by the layer's lock (`LayerHandle.changes`).
struct ChangeHistory {
    struct Entry {
        /// The layer's version after the change.
        var version: UInt64
        var kind: V1.ChangeKind
        /// Ids changed (UPSERT, UPDATE, MOVE, DRAG) or removed (REMOVE); empty for CLEAR.
        var ids: [String]
        /// What the entry counts against the byte limit: its ids' bytes, 24 per id and 64.
        var bytes: Int
    }

    /// Every change with a version above `floor` is in `entries` (GetChanges answers
    /// FAILED_PRECONDITION for a `since_version` below it).
    private(set) var floor: UInt64
    /// The version of the newest change (`floor` while there is none): the next event's
    /// `previous_version`.
    private(set) var last: UInt64
    /// Oldest first; `entries[head...]` are live (the dead prefix is dropped in bulk).
    private var entries: [Entry] = []
    private var head = 0
    private var bytes = 0
    let maxCount: Int
    let maxBytes: Int

    /// - Parameters:
    ///   - floor: the layer's version now (changes after it will be recorded).
    ///   - maxCount: changes kept; at least 1.
    ///   - maxBytes: bytes kept (see `Entry.bytes`); the newest change is kept even if larger.
    init(floor: UInt64, maxCount: Int, maxBytes: Int) {
        self.floor = floor
        self.last = floor
        self.maxCount = max(1, maxCount)
        self.maxBytes = maxBytes
    }

    /// Starts over above `version`, forgetting every change (a restart, `startAboveRecoveredVersions`).
    mutating func restart(at version: UInt64) {
        self = ChangeHistory(floor: version, maxCount: maxCount, maxBytes: maxBytes)
    }

    mutating func append(version: UInt64, kind: V1.ChangeKind, ids: [String]) {
        let size = 64 + ids.reduce(0) { $0 + $1.utf8.count + 24 }
        entries.append(Entry(version: version, kind: kind, ids: ids, bytes: size))
        bytes += size
        last = version
        while entries.count - head > maxCount || (bytes > maxBytes && entries.count - head > 1) {
            floor = entries[head].version
            bytes -= entries[head].bytes
            entries[head].ids = []
            head += 1
        }
        if head >= 1024 && head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }

    /// The live entries with a version above `version`, oldest first.
    func after(_ version: UInt64) -> ArraySlice<Entry> {
        var lo = head, hi = entries.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if entries[mid].version <= version { lo = mid + 1 } else { hi = mid }
        }
        return entries[lo...]
    }
}
