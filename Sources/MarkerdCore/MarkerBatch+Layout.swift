/// The orders and id hashes a bulk upsert of a batch needs (`MarkerLayer.upsert(_:now:)` with
/// spatial slots), computed from the batch alone, so that a caller can compute them before
/// taking the layer's write lock (`MarkerBatch.prepareLayout(idHashSeed:)`) while another
/// batch is being applied under it: the sorts and the hashing then take no time under the lock.
extension MarkerBatch {
    /// See the extension's comment. Marker `i` of the batch is the `k`-th in spatial order when
    /// `spatial[k] == i`.
    public struct Layout: Sendable {
        /// The seed `hashes` were computed with (`MarkerLayer.idHashSeed`); a layer with another
        /// seed computes its own layout.
        public let idHashSeed: UInt64
        /// Marker indices in the spatial order of new slots: the Morton order of their level-16
        /// cells (about 600 m at the equator), ties in batch order. Also the order in which
        /// `GridIndex.insert(_:sorted:)` takes new entries (`GridIndex.insertOrderKey`).
        let spatial: [Int32]
        /// The id hash (`MarkerTable.hash`) of each marker, in spatial order.
        let hashes: [UInt32]
        /// The ids' bytes in spatial order, back to back, and where each ends.
        let ids: [UInt8]
        let idEnds: [UInt32]

        init(_ batch: MarkerBatch, idHashSeed seed: UInt64) {
            idHashSeed = seed
            let n = batch.count
            let spatial = RadixSort.order(batch.entries.map { e in SpatialKey.morton(x: e.world.x >> 16, y: e.world.y >> 16) })
            var hashes = [UInt32](repeating: 0, count: n)
            var ids = [UInt8]()
            ids.reserveCapacity(batch.idBytes.count)
            var idEnds = [UInt32](repeating: 0, count: n)
            batch.idBytes.withUnsafeBufferPointer { bytes in
                for (k, i) in spatial.enumerated() {
                    let id = UnsafeBufferPointer(rebasing: bytes[batch.idStart(Int(i))..<Int(batch.entries[Int(i)].idEnd)])
                    hashes[k] = MarkerTable.hash(id, seed: seed)
                    ids.append(contentsOf: id)
                    idEnds[k] = UInt32(ids.count)
                }
            }
            self.spatial = spatial
            self.hashes = hashes
            self.ids = ids
            self.idEnds = idEnds
        }
    }

    /// Computes the batch's `Layout` for a layer whose `MarkerLayer.idHashSeed` is `seed`, to be
    /// used by that layer's `upsert(_:now:)` (which computes it under its lock otherwise).
    /// Changes no marker of the batch.
    public mutating func prepareLayout(idHashSeed seed: UInt64) {
        layout = Layout(self, idHashSeed: seed)
    }
}
