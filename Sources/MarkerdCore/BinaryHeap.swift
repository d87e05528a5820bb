/// A binary min-heap on an array: `pop` returns an element that no other element is `<`.
/// Push and pop cost O(log n) comparisons. Used for best-first walks (grid searches in draw
/// order, the tile renderer's reverse-draw-order sweep).
public struct BinaryHeap<Element: Comparable> {
    @usableFromInline var items: [Element] = []

    @inlinable public init() {}

    @inlinable public var isEmpty: Bool { items.isEmpty }
    @inlinable public var count: Int { items.count }
    /// The element `pop` would return, or nil when empty.
    @inlinable public var first: Element? { items.first }

    @inlinable public mutating func push(_ e: Element) {
        items.append(e)
        var i = items.count - 1
        while i > 0 {
            let p = (i - 1) / 2
            if !(items[i] < items[p]) { break }
            items.swapAt(p, i)
            i = p
        }
    }

    /// Removes and returns the least element, or nil when empty.
    @inlinable public mutating func pop() -> Element? {
        guard let top = items.first else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var i = 0
            let n = items.count
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < n && items[l] < items[m] { m = l }
                if r < n && items[r] < items[m] { m = r }
                if m == i { break }
                items.swapAt(i, m)
                i = m
            }
        }
        return top
    }
}
