extension V1.UpsertMarkersRequest {
    /// Decodes an UpsertMarkersRequest straight into Swift values, without protobuf-c (bulk
    /// loads decode millions of markers; this is several times cheaper). Understands the plain
    /// subset clients and snapshots write: each field at most once but `attributes`, whose
    /// entries come one after the other, no unknown fields, no `animation`, strings valid UTF-8
    /// without NUL bytes, varints of at most 10 bytes. Returns nil for anything else, including malformed bytes: then decode with
    /// `init(serializedBytes:)`, which gives the same result or the error. Whenever it returns
    /// a request, that request equals what `init(serializedBytes:)` decodes. Never crashes,
    /// whatever the bytes.
    public static func decodePlain(_ bytes: UnsafeRawBufferPointer) -> V1.UpsertMarkersRequest? {
        collect { visitPlain(bytes, reserve: $0, each: $1) }
    }

    /// The request a visitor (`visitPlain`, `SnapshotSection.visitMarkersChunk`) describes, or
    /// nil when it declines.
    /// The attributes are decoded by protobuf-c (this serves tests and tools, not loads).
    static func collect(_ visit: (_ reserve: (Int) -> Void, _ each: (V1.Marker, Bool, UnsafeRawBufferPointer) -> Bool) -> String?) -> V1.UpsertMarkersRequest? {
        var markers: [V1.Marker] = []
        guard let layerID = visit({ markers.reserveCapacity($0) }, { m, _, attributes in
            var m = m
            if !attributes.isEmpty {
                guard let a = try? V1.Marker(serializedBytes: attributes) else { return false }
                m.attributes = a.attributes
            }
            markers.append(m)
            return true
        }) else { return nil }
        return V1.UpsertMarkersRequest(layerID: layerID, markers: markers)
    }

    /// `decodePlain` without building the request: calls `reserve` with the number of markers,
    /// then `each` with every marker in order (stop early by returning false), and returns the
    /// layer id. Returns nil when it declines the bytes (as `decodePlain` does) or `each`
    /// stopped; `each` may have been called for some markers by then. `each`'s second argument
    /// is true when the marker's `icon` and `anchor` are encoded with the same bytes as the
    /// previous marker's (so they are equal: callers can reuse what they derived from them);
    /// false for the first marker. The marker comes without its `attributes`: `each`'s third
    /// argument holds their wire bytes instead (field 11's entries, tags and lengths included,
    /// as they came; empty: none), a part of `bytes` (so a caller may keep its offset in them)
    /// valid only during the call, for the caller to take as they
    /// are (`AttributeEncoding.appendCanonical`) or decode.
    public static func visitPlain(_ bytes: UnsafeRawBufferPointer, reserve: (Int) -> Void,
                                  each: (V1.Marker, _ sameStyle: Bool, _ attributes: UnsafeRawBufferPointer) -> Bool) -> String? {
        visitPlain(bytes, 0..<bytes.count, reserve: reserve, each: each)
    }

    /// `visitPlain` over the request encoded at `body` within `bytes`.
    static func visitPlain(_ bytes: UnsafeRawBufferPointer, _ body: Range<Int>, reserve: (Int) -> Void,
                           each: (V1.Marker, _ sameStyle: Bool, _ attributes: UnsafeRawBufferPointer) -> Bool) -> String? {
        var count = WireReader(bytes, body)
        reserve(count.countFields(key: 2 << 3 | 2))
        var layerID = ""
        var inner = WireReader(bytes, body)
        var sawLayer = false
        var lastPin: (bytes: Range<Int>, pin: V1.DefaultPin)? = nil  // markers mostly repeat one pin
        var lastStyle: StyleBytes? = nil
        var marker = V1.Marker()  // reused: decoded in place, not returned (it is large)
        while !inner.atEnd {
            guard let key = inner.key() else { return nil }
            switch key {
            case 1 << 3 | 2:
                guard !sawLayer, let s = inner.lengthDelimited(), let id = inner.string(s) else { return nil }
                layerID = id
                sawLayer = true
            case 2 << 3 | 2:
                var style = StyleBytes()
                var attributes = 0..<0
                guard let m = inner.lengthDelimited(),
                      decodeMarker(WireReader(bytes, m), into: &marker, lastPin: &lastPin, style: &style, attributes: &attributes) else { return nil }
                let same = lastStyle.map { style.same(as: $0, in: bytes) } ?? false
                lastStyle = style
                guard each(marker, same, UnsafeRawBufferPointer(rebasing: bytes[attributes])) else { return nil }
            default:
                return nil
            }
        }
        return layerID
    }

    /// Where a marker's icon (`pin` or `icon_id`) and `anchor` are encoded.
    private struct StyleBytes {
        var iconKey: UInt64 = 0  // 0: no icon
        var icon: Range<Int> = 0..<0
        var anchor: Range<Int>? = nil

        /// Whether both encode the same icon and anchor with the same bytes.
        func same(as o: StyleBytes, in bytes: UnsafeRawBufferPointer) -> Bool {
            guard iconKey == o.iconKey, bytes.same(icon, o.icon) else { return false }
            switch (anchor, o.anchor) {
            case (nil, nil): return true
            case let (a?, b?): return bytes.same(a, b)
            default: return false
            }
        }
    }

    /// One marker into `m` (false: declined); `lastPin` is the previous pin decoded (reused
    /// when the bytes are the same); `style` is set to where its icon and anchor are, and
    /// `attributes` to where its attributes' entries are (declined unless they come together).
    private static func decodeMarker(_ reader: WireReader, into m: inout V1.Marker,
                                     lastPin: inout (bytes: Range<Int>, pin: V1.DefaultPin)?, style: inout StyleBytes,
                                     attributes: inout Range<Int>) -> Bool {
        var r = reader
        m = V1.Marker()
        var seen: UInt32 = 0
        while !r.atEnd {
            let start = r.position
            guard let key = r.key() else { return false }
            if key == 11 << 3 | 2 {
                guard attributes.isEmpty || attributes.upperBound == start, r.lengthDelimited() != nil else { return false }
                attributes = (attributes.isEmpty ? start : attributes.lowerBound)..<r.position
                continue
            }
            let field = key >> 3
            guard field < 32, seen & (1 << UInt32(field)) == 0 else { return false }
            seen |= 1 << UInt32(field)
            switch key {
            case 1 << 3 | 2:
                guard let s = r.lengthDelimited(), let id = r.string(s) else { return false }
                m.id = id
            case 2 << 3 | 2:
                guard let s = r.lengthDelimited(), let p = decodeLatLng(WireReader(r.bytes, s)) else { return false }
                m.position = p
            case 3 << 3 | 2:
                guard seen & (1 << 4) == 0, let s = r.lengthDelimited() else { return false }
                style.iconKey = key
                style.icon = s
                if let last = lastPin, r.bytes.same(last.bytes, s) {
                    m.icon = .pin(last.pin)
                } else {
                    guard let pin = decodePin(WireReader(r.bytes, s)) else { return false }
                    lastPin = (s, pin)
                    m.icon = .pin(pin)
                }
            case 4 << 3 | 2:
                guard seen & (1 << 3) == 0, let s = r.lengthDelimited(), let id = r.string(s) else { return false }
                style.iconKey = key
                style.icon = s
                m.icon = .iconID(id)
            case 5 << 3 | 2:
                guard let s = r.lengthDelimited(), let a = decodeAnchor(WireReader(r.bytes, s)) else { return false }
                style.anchor = s
                m.anchor = a
            case 6 << 3 | 0:
                guard let v = r.varint() else { return false }
                m.zIndex = Int32(truncatingIfNeeded: v)
            case 7 << 3 | 0:
                guard let v = r.varint() else { return false }
                m.clickable = v != 0
            case 8 << 3 | 0:
                guard let v = r.varint() else { return false }
                m.draggable = v != 0
            case 10 << 3 | 0:
                guard let v = r.varint() else { return false }
                m.visible = v != 0
            case 12 << 3 | 2:
                guard let s = r.lengthDelimited() else { return false }
                m.extra = Array(UnsafeRawBufferPointer(rebasing: r.bytes[s]))
            default:
                return false  // animation, unknown fields, unexpected wire types
            }
        }
        return true
    }

    private static func decodeLatLng(_ reader: WireReader) -> V1.LatLng? {
        var r = reader
        var p = V1.LatLng()
        var seen: UInt8 = 0
        while !r.atEnd {
            guard let key = r.key() else { return nil }
            switch key {
            case 1 << 3 | 1:
                guard seen & 1 == 0, let v = r.fixed64() else { return nil }
                p.latitude = Double(bitPattern: v)
                seen |= 1
            case 2 << 3 | 1:
                guard seen & 2 == 0, let v = r.fixed64() else { return nil }
                p.longitude = Double(bitPattern: v)
                seen |= 2
            default:
                return nil
            }
        }
        return p
    }

    private static func decodeAnchor(_ reader: WireReader) -> V1.Anchor? {
        var r = reader
        var a = V1.Anchor()
        var seen: UInt8 = 0
        while !r.atEnd {
            guard let key = r.key() else { return nil }
            switch key {
            case 1 << 3 | 5:
                guard seen & 1 == 0, let v = r.fixed32() else { return nil }
                a.x = Float(bitPattern: v)
                seen |= 1
            case 2 << 3 | 5:
                guard seen & 2 == 0, let v = r.fixed32() else { return nil }
                a.y = Float(bitPattern: v)
                seen |= 2
            default:
                return nil
            }
        }
        return a
    }

    private static func decodePin(_ reader: WireReader) -> V1.DefaultPin? {
        var r = reader
        var pin = V1.DefaultPin()
        var seen: UInt8 = 0
        while !r.atEnd {
            guard let key = r.key() else { return nil }
            let field = key >> 3
            guard field >= 1, field <= 7, seen & (1 << UInt8(field)) == 0 else { return nil }
            seen |= 1 << UInt8(field)
            switch key {
            case 1 << 3 | 0:
                guard let v = r.varint() else { return nil }
                pin.fillColor = UInt32(truncatingIfNeeded: v)
            case 2 << 3 | 0:
                guard let v = r.varint() else { return nil }
                pin.strokeColor = UInt32(truncatingIfNeeded: v)
            case 3 << 3 | 5:
                guard let v = r.fixed32() else { return nil }
                pin.strokeWidth = Float(bitPattern: v)
            case 4 << 3 | 5:
                guard let v = r.fixed32() else { return nil }
                pin.scale = Float(bitPattern: v)
            case 5 << 3 | 2:
                guard let s = r.lengthDelimited(), let label = r.string(s) else { return nil }
                pin.label = label
            case 6 << 3 | 0:
                guard let v = r.varint() else { return nil }
                pin.labelColor = UInt32(truncatingIfNeeded: v)
            case 7 << 3 | 5:
                guard let v = r.fixed32() else { return nil }
                pin.labelSize = Float(bitPattern: v)
            default:
                return nil
            }
        }
        return pin
    }
}

