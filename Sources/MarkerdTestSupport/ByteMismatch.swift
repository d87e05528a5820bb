/// nil when `a` and `b` hold the same bytes, else a short account of how they differ: the two
/// lengths, the first differing offset with both bytes there, and how many of the common offsets
/// differ.
///
/// For expectations on big buffers (PNGs, pixel arrays, encoded replies): write
/// `#expect(byteMismatch(a, b) == nil)`, not `#expect(a == b)`. When `==` on two collections fails,
/// Swift Testing works out their difference element by element, which takes time quadratic in
/// their length when they differ throughout: 1.5 s for two different 5 KB arrays and 190 s for
/// 60 KB (measured 2026-12-02), so a failed comparison of two rendered tiles' pixels would run
/// for hours and time CI out instead of failing. `mismatch` does the same for other elements.
public func byteMismatch<A: Collection<UInt8>, B: Collection<UInt8>>(_ a: A, _ b: B) -> String? {
    describeMismatch(a, b, unit: "bytes") { "0x" + String($0, radix: 16, uppercase: true) }
}

/// `byteMismatch` for any collections of equal elements (a sort's permutation, a table's
/// column): nil when they are equal, else their lengths, the first differing offset with both
/// elements there (`String(describing:)`), and how many of the common offsets differ.
public func mismatch<A: Collection, B: Collection>(_ a: A, _ b: B) -> String? where A.Element == B.Element, A.Element: Equatable {
    describeMismatch(a, b, unit: "elements") { String(describing: $0) }
}

private func describeMismatch<A: Collection, B: Collection>(_ a: A, _ b: B, unit: String, _ show: (A.Element) -> String) -> String?
    where A.Element == B.Element, A.Element: Equatable {
    var first: (offset: Int, a: A.Element, b: A.Element)? = nil
    var differing = 0, offset = 0
    for (x, y) in zip(a, b) {
        if x != y {
            if first == nil { first = (offset, x, y) }
            differing += 1
        }
        offset += 1
    }
    let (na, nb) = (a.count, b.count)
    if first == nil && na == nb { return nil }
    var text = "lengths \(na) and \(nb)"
    if let f = first {
        text += "; first difference at offset \(f.offset): \(show(f.a)) against \(show(f.b)); \(differing) of the first \(min(na, nb)) \(unit) differ"
    } else {
        text += "; the first \(min(na, nb)) \(unit) are the same"
    }
    return text
}
