/// A binary min-heap on an array: `pop` returns an element that no other element is "less"
/// than, under `<` (`Comparable` elements) or an ordering passed to each call (which must be a
/// strict weak ordering and the same on every call). Push, pop and `replaceFirst` cost
/// O(log n) comparisons; they move a hole instead of swapping and reach the storage through one
/// unsafe buffer per call (the tile sweep pushes and pops an event per part and drawn marker).
/// The project's one heap: best-first grid walks, label placement, the tile renderer's sweep,
/// animation ends, the bounded top-k of hit tests.
public struct BinaryHeap<Element> {
    @usableFromInline var items: [Element] = []

    /// The elements in heap order: no element is less than its parent (index `(i - 1) / 2`).
    @inlinable public var elements: [Element] { items }

    @inlinable public init() {}

    @inlinable public var isEmpty: Bool { items.isEmpty }
    @inlinable public var count: Int { items.count }
    /// The element `pop` would return, or nil when empty.
    @inlinable public var first: Element? { items.first }

    @inlinable public mutating func push(_ e: Element, by less: (Element, Element) -> Bool) {
        items.append(e)
        items.withUnsafeMutableBufferPointer { b in
            var i = b.count - 1
            while i > 0 {
                let parent = (i - 1) >> 1
                if !less(e, b[parent]) { break }
                b[i] = b[parent]
                i = parent
            }
            b[i] = e
        }
    }

    /// Removes and returns the least element, or nil when empty.
    @inlinable public mutating func pop(by less: (Element, Element) -> Bool) -> Element? {
        guard let top = items.first else { return nil }
        let last = items.removeLast()
        if !items.isEmpty { siftDown(last, by: less) }
        return top
    }

    /// Replaces the least element with `e` (a pop and a push in one pass). Requires a
    /// non-empty heap.
    @inlinable public mutating func replaceFirst(with e: Element, by less: (Element, Element) -> Bool) {
        precondition(!items.isEmpty, "replaceFirst on an empty heap")
        siftDown(e, by: less)
    }

    /// Puts `e` at the root and moves it down to its place.
    @inlinable mutating func siftDown(_ e: Element, by less: (Element, Element) -> Bool) {
        items.withUnsafeMutableBufferPointer { b in
            let n = b.count
            var i = 0
            while true {
                let l = 2 * i + 1
                if l >= n { break }
                let c = l + 1 < n && less(b[l + 1], b[l]) ? l + 1 : l
                if !less(b[c], e) { break }
                b[i] = b[c]
                i = c
            }
            b[i] = e
        }
    }

    @inlinable public mutating func removeAll() { items = [] }
}

extension BinaryHeap: Sendable where Element: Sendable {}

extension BinaryHeap where Element: Comparable {
    @inlinable public mutating func push(_ e: Element) { push(e, by: <) }

    /// Removes and returns the least element, or nil when empty.
    @inlinable @discardableResult public mutating func pop() -> Element? { pop(by: <) }
}
