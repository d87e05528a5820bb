/// Min-heap of animation ends (Unix ms) with lazy deletion: an entry is current only while
/// the slot's `AnimationState.seq` still equals the entry's `seq`.
struct AnimationHeap: Sendable {
    struct Entry: Sendable { var endsAt: Int64; var slot: Int32; var seq: UInt32 }
    private(set) var entries: [Entry] = []

    var count: Int { entries.count }
    var min: Entry? { entries.first }

    mutating func push(_ e: Entry) {
        entries.append(e)
        var i = entries.count - 1
        while i > 0 {
            let p = (i - 1) / 2
            if entries[p].endsAt <= entries[i].endsAt { break }
            entries.swapAt(p, i)
            i = p
        }
    }

    @discardableResult mutating func pop() -> Entry? {
        guard let top = entries.first else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            var i = 0
            let n = entries.count
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < n && entries[l].endsAt < entries[m].endsAt { m = l }
                if r < n && entries[r].endsAt < entries[m].endsAt { m = r }
                if m == i { break }
                entries.swapAt(i, m)
                i = m
            }
        }
        return top
    }

    /// Calls `body` for every entry with endsAt <= now, in O(those entries) (heap order).
    func forEachDue(_ now: Int64, _ body: (Entry) -> Void) {
        var stack: [Int] = entries.isEmpty ? [] : [0]
        while let i = stack.popLast() {
            let e = entries[i]
            if e.endsAt > now { continue }
            body(e)
            let l = 2 * i + 1
            if l < entries.count { stack.append(l) }
            if l + 1 < entries.count { stack.append(l + 1) }
        }
    }

    /// Rebuilds from the current entries only (drops stale ones).
    mutating func rebuild(keeping current: [Entry]) {
        entries = []
        entries.reserveCapacity(current.count)
        for e in current { push(e) }
    }

    mutating func removeAll() { entries = [] }
}

struct AnimationState: Sendable {
    var kind: AnimationKind
    var endsAt: Int64
    var seq: UInt32
}
