/// A marker of a query page (see `viewportPage`) with its position and z-index as the grid
/// lists them, so reading those needs no access to the marker table. Valid until the layer next
/// changes (a removed marker's slot is reused).
public struct MarkerSlot: Hashable, Sendable {
    let entry: GridEntry
    init(_ entry: GridEntry) { self.entry = entry }

    var raw: Int32 { entry.slot }

    public static func == (a: MarkerSlot, b: MarkerSlot) -> Bool {
        a.entry.slot == b.entry.slot && a.entry.x == b.entry.x && a.entry.y == b.entry.y && a.entry.z == b.entry.z
    }

    public func hash(into h: inout Hasher) { h.combine(entry.slot) }
}

/// The scalar fields of a stored marker and where its id is (see `MarkerLayer.gather(_:)`).
public struct MarkerBasics: Sendable, Equatable {
    public var zIndex: Int32
    public var visible: Bool
    public var clickable: Bool
    public var draggable: Bool
    /// Index of the marker's icon style in `MarkerLayer.styles` (`StyleTable.style(at:)`).
    public var styleIndex: UInt32
    /// The marker has an animation, extra bytes or its own label: read them from `record(_:)`.
    public var hasPayload: Bool
    /// The marker has attributes: read their encoding with `withEncodedAttributes(_:_:)`.
    public var hasAttributes: Bool
    /// The id's bytes in `GatheredMarkers.ids`.
    public var idRange: Range<Int>
}

/// The basics and ids of a page of markers (see `MarkerLayer.gather(_:)`).
public struct GatheredMarkers: Sendable {
    /// One per slot, in order.
    public var basics: [MarkerBasics]
    /// The ids' UTF-8 bytes, back to back (`MarkerBasics.idRange`), then 16 zero bytes (so
    /// that any id of up to 16 bytes can be read as two 8-byte words).
    public var ids: [UInt8]
}

/// Per-field reads of markers by slot, for encoders that would otherwise build a whole
/// `MarkerRecord` (an id `String`, a style copy, dictionaries) per marker. Each read returns
/// exactly what `record(_:)` holds in the same field.
///
/// A page's slots are scattered over the table's columns and id arena, so reading them costs
/// cache misses rather than instructions: `gather(_:)` reads a whole page in one short loop
/// whose iterations do not depend on each other, so the processor overlaps their misses
/// (an encoder reading the same fields between its own work waits for each miss in turn).
extension MarkerLayer {
    /// The full stored record (as `marker(id:)`).
    public func record(_ slot: MarkerSlot) -> MarkerRecord { record(slot.raw) }

    /// The position as `record(_:).position` (degrees, rounded to 7 decimals); reads no table column.
    public func position(_ slot: MarkerSlot) -> LatLng { world(slot).latLng }

    /// The stored world position (`position(_:)` is its `latLng`); reads no table column.
    public func world(_ slot: MarkerSlot) -> WorldPoint { WorldPoint(x: slot.entry.x, y: slot.entry.y) }

    /// z-index, flags, style index and id of each slot, in order. Three passes, so that the
    /// cache misses of a page's scattered rows overlap: first only the rows' loads (id cell,
    /// flags, style) into small buffers, in a loop of a few instructions per slot whose loads
    /// do not depend on each other (the processor keeps some ten of them in flight; a loop that
    /// also built each `MarkerBasics` held only a few iterations in its reorder window); then
    /// the basics from those buffers (no table access); then the ids' bytes into a buffer of the
    /// exact size (no per-id `append(contentsOf:)`, whose call and reference counting cost more
    /// than the copy).
    ///
    /// When the layer uses a single style (`soleStyleIndex`), the style column is not read (a
    /// cache miss per marker saved). An id of up to 15 bytes is in its cell (`IDCell`), read
    /// in the first pass: no arena access at all. Ids are copied as two 8-byte words (the
    /// cell's, or an arena id of up to 16 bytes) into a buffer with 16 bytes of slack (zeroed
    /// at the end), so the copy loop has no branch on the id's length.
    public func gather(_ slots: [MarkerSlot]) -> GatheredMarkers {
        let n = slots.count
        let sole = soleStyleIndex
        var cells = [IDCell](repeating: .zero, count: n)
        var rowFlags = [UInt8](repeating: 0, count: n)
        var rowStyles = [UInt32](repeating: sole ?? 0, count: sole == nil ? n : 0)
        slots.withUnsafeBufferPointer { slots in
            cells.withUnsafeMutableBufferPointer { cells in
                rowFlags.withUnsafeMutableBufferPointer { rowFlags in
                    table.ids.withUnsafeBufferPointer { ids in
                        table.flags.withUnsafeBufferPointer { flags in
                            for i in 0..<n {
                                let s = Int(slots[i].raw)
                                cells[i] = ids[s]
                                rowFlags[i] = flags[s]
                            }
                        }
                    }
                }
            }
            guard sole == nil else { return }
            rowStyles.withUnsafeMutableBufferPointer { rowStyles in
                table.style.withUnsafeBufferPointer { style in
                    for i in 0..<n { rowStyles[i] = style[Int(slots[i].raw)] }
                }
            }
        }
        let payload = MarkerFlags.animating | MarkerFlags.hasExtra
        let anyLabel = !labels.isEmpty   // own labels have no flag: look them up only when some exist
        var total = 0
        let basics = [MarkerBasics](unsafeUninitializedCapacity: n) { out, count in
            for i in 0..<n {
                let f = rowFlags[i], length = cells[i].length
                out.initializeElement(at: i, to: MarkerBasics(
                    zIndex: slots[i].entry.z, visible: f & MarkerFlags.visible != 0, clickable: f & MarkerFlags.clickable != 0,
                    draggable: f & MarkerFlags.draggable != 0, styleIndex: sole ?? rowStyles[i],
                    hasPayload: f & payload != 0 || anyLabel && labels[slots[i].raw] != nil,
                    hasAttributes: f & MarkerFlags.hasAttributes != 0,
                    idRange: total..<total + length))
                total += length
            }
            count = n
        }
        let ids = [UInt8](unsafeUninitializedCapacity: total + 16) { out, count in
            table.arena.withUnsafeBufferPointer { arena in
                var j = 0
                for cell in cells {
                    let length = cell.length
                    if cell.isInline {
                        let to = UnsafeMutableRawPointer(out.baseAddress! + j)
                        to.storeBytes(of: cell.lo, as: UInt64.self)
                        to.storeBytes(of: cell.hi, toByteOffset: 8, as: UInt64.self)
                        j += length
                        continue
                    }
                    let off = cell.arenaOffset
                    if length <= 16 && off + 16 <= arena.count {
                        let from = UnsafeRawPointer(arena.baseAddress! + off), to = UnsafeMutableRawPointer(out.baseAddress! + j)
                        to.storeBytes(of: from.loadUnaligned(as: UInt64.self), as: UInt64.self)
                        to.storeBytes(of: from.loadUnaligned(fromByteOffset: 8, as: UInt64.self), toByteOffset: 8, as: UInt64.self)
                    } else {
                        for k in 0..<length { out[j + k] = arena[off + k] }
                    }
                    j += length
                }
            }
            (out.baseAddress! + total).initialize(repeating: 0, count: 16)
            count = total + 16
        }
        return GatheredMarkers(basics: basics, ids: ids)
    }

    /// The index of the only style in use, or nil when the layer uses several (or none, or has
    /// handed out more than 64 style indices: not worth searching per call).
    var soleStyleIndex: UInt32? {
        guard styles.count == 1, styles.styleSlots <= 64 else { return nil }
        return (0..<UInt32(styles.styleSlots)).first(where: styles.isInUse)
    }
}
