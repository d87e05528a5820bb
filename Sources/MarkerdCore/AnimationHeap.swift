/// Min-heap of animation ends (Unix ms) with lazy deletion: an entry is current only while
/// the slot's `AnimationState.seq` still equals the entry's `seq`.
struct AnimationHeap: Sendable {
    struct Entry: Sendable { var endsAt: Int64; var slot: Int32; var seq: UInt32 }
    private var heap = BinaryHeap<Entry>()
    @inline(__always) private static func earlier(_ a: Entry, _ b: Entry) -> Bool { a.endsAt < b.endsAt }

    var count: Int { heap.count }
    var min: Entry? { heap.first }

    mutating func push(_ e: Entry) { heap.push(e, by: Self.earlier) }

    @discardableResult mutating func pop() -> Entry? { heap.pop(by: Self.earlier) }

    /// Calls `body` for every entry with endsAt <= now, in O(those entries) (heap order).
    func forEachDue(_ now: Int64, _ body: (Entry) -> Void) {
        let entries = heap.elements
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
        heap.removeAll()
        for e in current { push(e) }
    }

    mutating func removeAll() { heap.removeAll() }
}

struct AnimationState: Sendable {
    var kind: AnimationKind
    var endsAt: Int64
    var seq: UInt32
}
