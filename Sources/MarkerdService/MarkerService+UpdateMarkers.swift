import MarkerdAPI
import MarkerdCore

/// UpdateMarkers: partial updates of existing markers. Each `MarkerUpdate` names the fields it
/// sets (`paths`); the service merges them into the marker as it is (under the layer's write
/// lock, so the batch is atomic) and applies the merged markers as an upsert would. The journal
/// holds the request, as for every mutation: replay merges into the state the journal has
/// rebuilt by then, which is the state the update met, so it gives the same markers.
extension MarkerService {
    /// The `MarkerUpdate.paths` UpdateMarkers accepts: Marker field names, and the label's fields.
    public static let updatablePaths: [String] = [
        "position", "icon", "anchor", "z_index", "clickable", "draggable", "animation", "visible", "attributes", "extra",
        "label", "label.text", "label.priority", "label.color",
    ]

    func updateMarkers(_ r: V1.UpdateMarkersRequest, _ c: MutationCommit) throws(RPCError) -> V1.UpdateMarkersResponse {
        try Self.checkUpdates(r)
        return try write(r.layerID, c) { (h) throws(RPCError) in
            var records: [MarkerRecord] = []
            records.reserveCapacity(r.updates.count)
            for (i, u) in r.updates.enumerated() {
                guard let current = h.layer.marker(id: u.id) else {
                    // Replay after a fuzzy snapshot may meet a marker that a later record removed:
                    // the batch's other markers still take their update, as they did live.
                    if c.replaying { continue }
                    throw .notFound("updates[\(i)]: marker \"\(u.id.prefix(64))\" not found in layer \"\(r.layerID)\"")
                }
                let merged = Self.merged(MarkerConversion.apiMarker(current), u)
                // Restoring: a kept animation keeps its end; an updated one has none, so it starts now.
                records.append(try Self.renamingViolations { () throws(RPCError) in
                    try MarkerConversion.record(merged, index: i, nowUnixMs: c.nowUnixMs, restoring: true, icon: icons.geometry)
                })
            }
            let before = h.footprintsBefore(records.lazy.map(\.id), count: records.count, c)
            let positions = h.positionsBefore(records.lazy.map(\.id))
            let result = try Self.renamingViolations { () throws(RPCError) in
                try mapCoreError { () throws(MarkerdCoreError) in try h.layer.upsert(records, now: c.nowUnixMs) }
            }
            h.raiseFenceEvents(records.lazy.map(\.id), before: positions, c)
            h.markTiles(before: before, after: { LayerHandle.staticFootprints(records, now: c.nowUnixMs) }, c, measurer: labelText)
            var response = V1.UpdateMarkersResponse()
            response.updatedCount = UInt64(result.updated)
            response.layerVersion = h.layer.version
            if result.updated > 0 {
                let ids = records.map(\.id)
                noteChange(h, c, .update, ids: ids, markers: { Self.currentMarkers(h, ids) })
                try journalAppend(c, response: response.serializedBytes())
            }
            return response
        }
    }

    /// The request's shape: at most `MarkerConversion.maxBatch` updates with distinct ids, each
    /// naming known paths, each at most once, and not a label field beside the whole label.
    static func checkUpdates(_ r: V1.UpdateMarkersRequest) throws(RPCError) {
        try MarkerConversion.checkBatch(r.updates, id: \.id, count: r.updates.count, what: "updates")
        for (i, u) in r.updates.enumerated() {
            guard !u.paths.isEmpty else {
                throw .invalidArgument("updates[\(i)] (id \"\(u.id.prefix(64))\"): paths is empty", field: "updates[\(i)].paths")
            }
            for (j, p) in u.paths.enumerated() {
                let field = "updates[\(i)].paths[\(j)]"
                guard updatablePaths.contains(p) else {
                    throw .invalidArgument("\(field) \"\(p.prefix(64))\" is not one of \(updatablePaths.joined(separator: ", "))", field: field)
                }
                guard !u.paths[..<j].contains(p) else { throw .invalidArgument("\(field) \"\(p)\" is named twice", field: field) }
                guard !(p.hasPrefix("label.") && u.paths.contains("label")) else {
                    throw .invalidArgument("\(field) \"\(p)\" is part of \"label\", which is named too", field: field)
                }
            }
        }
    }

    /// `current` with the fields `u.paths` names taken from `u.marker` (a field unset there is
    /// reset). A new icon without "anchor" takes the icon's default anchor.
    static func merged(_ current: V1.Marker, _ u: V1.MarkerUpdate) -> V1.Marker {
        var m = current
        let new = u.marker ?? V1.Marker()
        for path in u.paths {
            switch path {
            case "position": m.position = new.position
            case "icon":
                m.icon = new.icon
                if !u.paths.contains("anchor") { m.anchor = nil }
            case "anchor": m.anchor = new.anchor
            case "z_index": m.zIndex = new.zIndex
            case "clickable": m.clickable = new.clickable
            case "draggable": m.draggable = new.draggable
            case "animation":
                m.animation = new.animation
                m.animation?.endsAtUnixMs = 0
            case "visible": m.visible = new.visible
            case "attributes": m.attributes = new.attributes
            case "extra": m.extra = new.extra
            case "label": m.label = new.label
            case "label.text", "label.priority", "label.color":
                var label = m.label ?? V1.MarkerLabel()
                switch path {
                case "label.text": label.text = new.label?.text
                case "label.priority": label.priority = new.label?.priority
                default: label.color = new.label?.color
                }
                m.label = label
            default: preconditionFailure("unchecked path \(path)")  // checkUpdates refused it
            }
        }
        return m
    }

    /// Runs `body`, naming the fields of its INVALID_ARGUMENT errors as UpdateMarkers' request
    /// does: `markers[i].…` (the merged marker's) becomes `updates[i].marker.…` in the field
    /// paths, and `updates[i]` in the message.
    static func renamingViolations<T>(_ body: () throws(RPCError) -> T) throws(RPCError) -> T {
        do {
            return try body()
        } catch {
            var e = error
            e.message = e.message.replacing("markers[", with: "updates[", maxReplacements: 1)
            for k in e.fieldViolations.indices {
                let f = e.fieldViolations[k].field
                e.fieldViolations[k].description = e.message
                guard f.hasPrefix("markers["), let close = f.firstIndex(of: "]") else { continue }
                e.fieldViolations[k].field = "updates" + f[f.index(f.startIndex, offsetBy: 7)...close] + ".marker" + f[f.index(after: close)...]
            }
            throw e
        }
    }
}
