import MarkerdAPI
import MarkerdCore

/// Plain marker batches (no animation: bulk loads and snapshot chunks) decoded by the
/// hand-written wire decoder straight into columns (`MarkerBatch`, attributes as their wire
/// bytes, copied as they are when sorted) and applied in one pass, without protobuf-c,
/// `V1.Marker` arrays, `MarkerRecord`s, dictionaries or a `Set<String>` of ids.
/// Anything else, and every error, goes the protobuf-c way, which gives the same result or the
/// same error message.
extension MarkerService {
    /// Markers of `source` visited by a plain decoder (`visit` calls it with `source`'s bytes
    /// and the decoder's `reserve` and `each`: `V1.UpsertMarkersRequest.visitPlain` or
    /// `V1.SnapshotSection.visitMarkersChunk`) converted marker by marker into columns,
    /// positions projected; nil when the decoder declines the bytes, the batch holds more than
    /// `MarkerConversion.maxBatch` markers, or a marker would not convert or validate
    /// (attributes included: an empty key, strings that are not UTF-8, more than
    /// `MarkerConversion.maxPayloadBytes` of attributes and extra, or anything
    /// `AttributeEncoding.appendCanonical` declines). The batch keeps canonical attributes as
    /// ranges of `source` (shared, not copied). A marker whose icon and anchor bytes repeat the
    /// previous marker's reuses its style without converting or validating it again.
    func plainBatch(_ source: [UInt8],
                    _ visit: (_ bytes: UnsafeRawBufferPointer, _ reserve: (Int) -> Void, _ each: (V1.Marker, Bool, UnsafeRawBufferPointer) -> Bool) -> String?) -> (String, MarkerBatch)? {
        var batch = MarkerBatch(attributeSource: source)
        var lastStyle: UInt32? = nil
        let layerID = source.withUnsafeBytes { bytes in
            visit(bytes, { batch = MarkerBatch(capacity: $0, attributeSource: source) }) { m, sameStyle, attributes in
                guard let p = m.position, m.animation == nil, m.label == nil else { return false }
                let style: UInt32
                if sameStyle, let l = lastStyle {
                    style = l
                } else {
                    guard let s = try? MarkerConversion.iconStyle(m.icon, anchor: m.anchor, label: "", icon: icons.geometry),
                          let i = batch.styleIndex(s, hint: lastStyle) else { return false }
                    style = i
                    lastStyle = i
                }
                // The decoder's attributes lie within `bytes`: where, as a range of `source`.
                let at = attributes.isEmpty ? 0 : attributes.baseAddress! - bytes.baseAddress!
                return batch.append(id: m.id, position: LatLng(latitude: p.latitude, longitude: p.longitude), style: style,
                                    zIndex: m.zIndex, visible: m.visible ?? true, clickable: m.clickable ?? true,
                                    draggable: m.draggable ?? false, extra: m.extra,
                                    attributesAt: at..<at + attributes.count, maxPayloadBytes: MarkerConversion.maxPayloadBytes)
            }
        }
        guard let layerID, batch.count <= MarkerConversion.maxBatch else { return nil }
        return (layerID, batch)
    }

    /// UpsertMarkers through the plain decoder: the response, or nil when the request is not
    /// plain, repeats an id, or anything else that the protobuf-c path reports as an error
    /// (then nothing was applied). The journal record holds the request's own bytes, as for
    /// every mutation. The batch's orders and id hashes (`MarkerBatch.prepareLayout`) are
    /// computed before the layer's write lock is taken, so that they overlap with another
    /// batch being applied under it.
    func upsertPlainMarkers(_ c: MutationCommit) throws(RPCError) -> V1.UpsertMarkersResponse? {
        guard let (layerID, decoded) = plainBatch(c.payload, { V1.UpsertMarkersRequest.visitPlain($0, reserve: $1, each: $2) }),
              decoded.firstRepeatedID() == nil else { return nil }
        var batch = decoded
        if batch.count > 1 { batch.prepareLayout(idHashSeed: try handle(layerID).idHashSeed) }
        return try write(layerID, c) { (h) throws(RPCError) in
            let before = h.footprintsBefore((0..<batch.count).lazy.map(batch.id), count: batch.count, c)
            let positions = h.positionsBefore((0..<batch.count).lazy.map(batch.id))
            let result = h.layer.upsert(batch, now: c.nowUnixMs, spatialSlots: !h.clustersInSlotOrder, alongside: writeHelper)
            h.raiseFenceEvents((0..<batch.count).lazy.map(batch.id), before: positions, c)
            h.markTiles(before: before, after: { LayerHandle.staticFootprints(batch) }, c, measurer: labelText)
            return try upserted(result, h, c, ids: (0..<batch.count).map(batch.id))
        }
    }

    /// The response to an applied upsert, journaled (unless nothing was upserted).
    /// `ids`: the ids upserted (for the change feed).
    func upserted(_ result: UpsertResult, _ h: LayerHandle, _ c: MutationCommit, ids: @autoclosure () -> [String]) throws(RPCError) -> V1.UpsertMarkersResponse {
        var response = V1.UpsertMarkersResponse()
        response.createdCount = UInt64(result.created)
        response.updatedCount = UInt64(result.updated)
        response.layerVersion = h.layer.version
        if result.created + result.updated > 0 {
            if !c.replaying {
                let ids = ids()
                noteChange(h, c, .upsert, ids: ids, markers: { Self.currentMarkers(h, ids) })
            }
            try journalAppend(c, response: response.serializedBytes())
        }
        return response
    }
}
