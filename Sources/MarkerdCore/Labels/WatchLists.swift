/// Who a placed label blocks: for each placed label (by slot), the labels ranked after it that
/// found it in the way of one of their candidates when they were last decided (`LabelPlacement`
/// records one blocker per candidate it could not take). A decision stays the greedy one while
/// each of its blockers keeps its box and no label placed before it lands on the box it took;
/// so when a placed label leaves its box, only its watchers can gain a place
/// (`LabelPlacement.update`), instead of every label within reach (most of the world at low zoom).
///
/// Lists may hold stale entries (a watcher since re-decided against other blockers) and
/// duplicates: a spurious watcher only costs a re-decision. `compact` bounds them.
///
/// Memory: 4 B per slot with a list, plus 8 B per entry (about one to four per dropped label at
/// crowded zooms).
struct WatchLists: Sendable {
    /// Slot -> first entry of its list, or -1.
    private var head: [Int32] = []
    private var watcher: [Int32] = []
    private var next: [Int32] = []
    private var free: Int32 = -1
    /// Entries in lists (not on the free list).
    private(set) var count = 0
    /// Entries added so far (never decreases).
    private(set) var added = 0
    /// Entries added by re-decisions since the last compaction (`LabelPlacement.update` counts
    /// them): a bound on the stale ones.
    var staleBound = 0
    /// Stale entries allowed beyond as many as the others before `wantsCompaction` (tests lower it).
    var compactionSlack = 65536

    /// Records that `w` found `blocker` in its way. Skips `w` when it heads the list already.
    mutating func add(_ w: Int32, blockedBy blocker: Int32) {
        let b = Int(blocker)
        if b >= head.count { head.append(contentsOf: repeatElement(-1, count: Swift.max(b + 1, head.count * 5 / 4) - head.count)) }
        let h = head[b]
        if h >= 0 && watcher[Int(h)] == w { return }
        let e: Int32
        if free >= 0 {
            e = free; free = next[Int(e)]
            watcher[Int(e)] = w; next[Int(e)] = h
        } else {
            e = Int32(watcher.count)
            watcher.append(w); next.append(h)
        }
        head[b] = e
        count += 1
        added += 1
    }

    /// Calls `body` with each watcher of `blocker` (duplicates possible) and empties its list.
    mutating func take(_ blocker: Int32, _ body: (Int32) -> Void) {
        let b = Int(blocker)
        guard b < head.count else { return }
        var e = head[b]
        head[b] = -1
        while e >= 0 {
            body(watcher[Int(e)])
            let n = next[Int(e)]
            next[Int(e)] = free; free = e
            count -= 1
            e = n
        }
    }

    /// Whether the entries that may be stale outnumber the others by more than `compactionSlack`:
    /// time to `compact` (memory stays within about twice the live entries).
    var wantsCompaction: Bool { staleBound > count - staleBound + compactionSlack }

    /// Drops duplicates and the watchers `keep(watcher, blocker)` rejects from every list.
    /// O(entries log(longest list)).
    mutating func compact(keep: (Int32, Int32) -> Bool) {
        var scratch: [Int32] = []
        for b in head.indices where head[b] >= 0 {
            scratch.removeAll(keepingCapacity: true)
            take(Int32(b)) { scratch.append($0) }
            scratch.sort()
            var last: Int32 = -1
            for w in scratch.reversed() where w != last {
                last = w
                if keep(w, Int32(b)) { add(w, blockedBy: Int32(b)) }
            }
        }
        staleBound = 0
    }

    var approximateBytes: Int { head.capacity * 4 + watcher.capacity * 4 + next.capacity * 4 }
}
