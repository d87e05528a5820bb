import MarkerdAPI
import MarkerdCore
import MarkerdJournal

/// One mutation on its way through the pipeline: idempotency -> write lock -> apply -> journal
/// append (still under the lock, so the journal order is the apply order) -> fsync -> reply.
/// In cluster mode the order is idempotency -> publish to the replicated log -> every replica
/// applies the record in log order (`MarkerService.applyLogged`) -> the writer's reply.
final class MutationCommit: @unchecked Sendable {
    let kind: MutationKind
    let payload: [UInt8]
    let key: String
    let digest: UInt64
    let nowUnixMs: Int64
    /// nil while replaying the journal or loading a snapshot.
    let context: CallContext?
    /// Called once the journal record is durable (per the fsync policy), or failed.
    let onDurable: (@Sendable (Result<[UInt8], RPCError>) -> Void)?
    /// Set when a journal record was appended: the reply waits for `onDurable`.
    var appended = false
    /// Cluster mode: the sequence of this mutation's record in the replicated log, which every
    /// replica applies alike (no deadline, no journal, live semantics); nil otherwise.
    let logSequence: UInt64?
    /// The change for the feed (`MarkerService.noteChange`); nil while replaying.
    var pending: PendingChange?
    /// The fence events the mutation raised (`LayerHandle.raiseFenceEvents`), delivered to the
    /// service's `fenceSinks` once it is durable.
    var fenceNotices: [FenceNotice] = []

    init(kind: MutationKind, payload: [UInt8], key: String, digest: UInt64, nowUnixMs: Int64,
         context: CallContext?, onDurable: (@Sendable (Result<[UInt8], RPCError>) -> Void)?, logSequence: UInt64? = nil) {
        self.kind = kind
        self.payload = payload
        self.key = key
        self.digest = digest
        self.nowUnixMs = nowUnixMs
        self.context = context
        self.onDurable = onDurable
        self.logSequence = logSequence
    }

    /// Replaying the journal or loading a snapshot (not a live call, not a replicated record).
    var replaying: Bool { context == nil && logSequence == nil }

    /// Throws DEADLINE_EXCEEDED if the call's deadline passed (never while replaying).
    func checkDeadline() throws(RPCError) {
        try context?.checkDeadline()
    }
}

extension MarkerService {
    /// Longest idempotency key, bytes.
    static let maxKeyBytes = 128
    /// Largest request payload a durable service applies, bytes: the journal record (payload,
    /// key, method, reply, digest, times) must fit `JournalFormat.maxPayloadSize`, and it is
    /// appended only after the change is applied, so a too large one is refused up front.
    /// 1 MiB below the record limit (a record's other fields are small).
    static let maxJournaledPayload = JournalFormat.maxPayloadSize - (1 << 20)

    /// Applies a mutation exactly once per idempotency key and calls `completion` with the
    /// serialized response message (after the journal record is durable), or the error.
    ///
    /// - A repeated key returns the first reply and applies nothing; a key still in flight
    ///   waits for the first call's reply; a key reused for another request is INVALID_ARGUMENT.
    /// - A failed mutation changes nothing and forgets the key (a retry applies afresh).
    /// - Cluster mode: instead of applying here and journaling, the mutation is published to the
    ///   replicated log and answered once this replica applied its record (the same `apply`);
    ///   UNAVAILABLE when the log does not acknowledge it in time (`Replication.submit`).
    public func mutate(
        _ kind: MutationKind, payload: [UInt8], context: CallContext,
        completion: @escaping @Sendable (Result<[UInt8], RPCError>) -> Void
    ) {
        let key = context.idempotencyKey
        guard !key.isEmpty else {
            completion(.failure(.invalidArgument("idempotency_key is required for \(kind.rawValue)")))
            return
        }
        guard key.utf8.count <= Self.maxKeyBytes else {
            completion(.failure(.invalidArgument("idempotency_key is longer than \(Self.maxKeyBytes) bytes")))
            return
        }
        let digest = RequestDigest.digest(method: kind.methodName, payload: payload)
        switch idempotency.begin(key: key, digest: digest, waiter: completion) {
        case .replay(let reply):
            completion(.success(reply))
            return
        case .attached:
            return
        case .conflict:
            completion(.failure(.invalidArgument("idempotency_key \"\(key)\" was already used for a different request")))
            return
        case .proceed:
            break
        }
        let now = nowUnixMs()
        let pending = PendingChange()
        let finish: @Sendable (Result<[UInt8], RPCError>) -> Void = { [idempotency, changeFeed] result in
            let waiters = switch result {
                case .success(let payload): idempotency.complete(key: key, payload: payload, atUnixMs: now)
                case .failure: idempotency.abandon(key: key)
            }
            completion(result)
            for w in waiters { w(result) }
            // The feed's one hook: the change is applied and durable (or failed: then no event).
            // After the reply, so that publishing does not delay it.
            if let ticket = pending.ticket {
                if case .success = result { changeFeed.release(ticket, pending.event) } else { changeFeed.release(ticket, nil) }
            }
        }
        if let replication {
            // Cluster mode: the record goes to the replicated log first; this replica's apply of
            // it (`applyLogged`, the same `apply` as everywhere) answers through `finish`.
            do throws(RPCError) {
                try context.checkDeadline()
                try replication.submit(Self.logRecord(kind: kind, payload: payload, key: key, digest: digest, nowUnixMs: now),
                                       key: key, digest: digest, deadline: context.deadline, finish: finish)
            } catch {
                finish(.failure(error))
            }
            return
        }
        let commit = MutationCommit(kind: kind, payload: payload, key: key, digest: digest, nowUnixMs: now,
                                    context: context, onDurable: finish)
        commit.pending = pending
        do throws(RPCError) {
            try context.checkDeadline()
            // Refused before anything is applied: a write the journal cannot take must not show
            // in memory. A write that got past this check is journaled: its reply waits while
            // the journal retries, and it is acknowledged once durable.
            if let failure = journal?.retryingAfter {
                throw RPCError.unavailable("writes are refused while the journal cannot write (it retries on its own, and writes are accepted again once it succeeds): \(failure)")
            }
            if journal != nil, payload.count > Self.maxJournaledPayload {
                throw RPCError.resourceExhausted("\(kind.rawValue) payload of \(payload.count) bytes exceeds the \(Self.maxJournaledPayload) bytes a journal record can hold")
            }
            let response = try apply(commit)
            if !commit.appended { finish(.success(response)) }
        } catch {
            finish(.failure(error))
        }
        maybeSnapshotInBackground()
    }

    /// Applies one mutation: decode, validate, change state, journal. Also used for replay.
    func apply(_ c: MutationCommit) throws(RPCError) -> [UInt8] {
        switch c.kind {
        case .createLayer:
            var r = try decode(V1.CreateLayerRequest.self, c)
            try Self.adoptLegacyAlgorithm(V1.CreateLayerRequest.legacyAlgorithmName(inRequest: c.payload), into: &r, c)
            return try createLayer(r, c).serializedBytes()
        case .deleteLayer: return try deleteLayer(decode(V1.DeleteLayerRequest.self, c), c).serializedBytes()
        case .registerIcon: return try registerIcon(decode(V1.RegisterIconRequest.self, c), c).serializedBytes()
        case .upsertMarkers:
            if let r = try upsertPlainMarkers(c) { return r.serializedBytes() }
            return try upsertMarkers(decode(V1.UpsertMarkersRequest.self, c), c).serializedBytes()
        case .updateMarkers: return try updateMarkers(decode(V1.UpdateMarkersRequest.self, c), c).serializedBytes()
        case .removeMarkers: return try removeMarkers(decode(V1.RemoveMarkersRequest.self, c), c).serializedBytes()
        case .clearLayer: return try clearLayer(decode(V1.ClearLayerRequest.self, c), c).serializedBytes()
        case .moveMarkers: return try moveMarkers(decode(V1.MoveMarkersRequest.self, c), c).serializedBytes()
        case .beginDrag: return try beginDrag(decode(V1.BeginDragRequest.self, c), c).serializedBytes()
        case .endDrag: return try endDrag(decode(V1.EndDragRequest.self, c), c).serializedBytes()
        case .cancelDrag: return try cancelDrag(decode(V1.CancelDragRequest.self, c), c).serializedBytes()
        case .createFence: return try createFence(decode(V1.CreateFenceRequest.self, c), c).serializedBytes()
        case .deleteFence: return try deleteFence(decode(V1.DeleteFenceRequest.self, c), c).serializedBytes()
        }
    }

    func decode<T: ProtoMessage>(_ type: T.Type, _ c: MutationCommit) throws(RPCError) -> T {
        do {
            return try T(serializedBytes: c.payload)
        } catch {
            throw .invalidArgument("undecodable \(c.kind.rawValue) payload (\(c.payload.count) bytes): \(error)")
        }
    }

    /// Appends the journal record of an applied mutation. Call while still holding the lock
    /// that ordered the change. `method`/`payload` override what is journaled (EndDrag is
    /// journaled as the MoveMarkers it amounts to). The mutation's fence events go to
    /// `fenceSinks` once the record is durable (right away, still under the lock, when ephemeral),
    /// before the reply: so in apply order, and never for a write that failed.
    func journalAppend(_ c: MutationCommit, response: [UInt8], as kind: MutationKind? = nil, payload: [UInt8]? = nil) throws(RPCError) {
        guard !c.replaying else { return }
        guard let journal, let onDurable = c.onDurable else {
            fenceSinks.deliver(c.fenceNotices)
            return
        }
        let notices = c.fenceNotices
        var record = V1.JournalRecord()
        record.method = (kind ?? c.kind).methodName
        record.idempotencyKey = c.key
        record.payload = payload ?? c.payload
        record.appliedAtUnixMs = c.nowUnixMs
        var stored = V1.Response()
        stored.code = .ok
        stored.payload = response
        record.response = stored.serializedBytes()
        record.requestDigest = c.digest
        do {
            _ = try journal.append(building: { sequence in
                record.sequence = sequence
                return record.serializedBytes()
            }, completion: { [fenceSinks] result in
                switch result {
                case .success:
                    fenceSinks.deliver(notices)
                    onDurable(.success(response))
                case .failure(let e): onDurable(.failure(.unavailable("the journal could not make the write durable: \(e)")))
                }
            })
            c.appended = true
        } catch {
            throw .unavailable("the journal refused the write: \(error)")
        }
    }

    // MARK: Layers

    /// Layers created before `ClusteringOptions.algorithm` became an enum name it in the string
    /// field 6 (now reserved; `legacyName`): recovery restores them with that algorithm. A request
    /// that still sets field 6 is INVALID_ARGUMENT, so that no journal record written since holds
    /// one (it would be ignored live and honoured on replay).
    static func adoptLegacyAlgorithm(_ legacyName: String?, into r: inout V1.CreateLayerRequest, _ c: MutationCommit) throws(RPCError) {
        guard let legacyName else { return }
        guard c.replaying else {
            throw .invalidArgument("options.clustering field 6 (the algorithm's name as a string) is no longer read: set the enum algorithm (field 8)", field: "options.clustering.algorithm")
        }
        if var options = r.options, var clustering = options.clustering, clustering.algorithm == nil {
            clustering.algorithm = legacyName == "supercluster" ? .supercluster : .grid
            options.clustering = clustering
            r.options = options
        }
    }

    func createLayer(_ r: V1.CreateLayerRequest, _ c: MutationCommit) throws(RPCError) -> V1.CreateLayerResponse {
        try MarkerConversion.checkName(r.layerID, what: "layer_id")
        let (api, tiling, labels) = try LayerOptionsResolution.resolve(r.options)
        var layer: MarkerLayer
        layer = try mapCoreError { () throws(MarkerdCoreError) in
            var l = try MarkerLayer(options: tiling)
            try l.setLabelStyle(labels)
            return l
        }
        // Above every version and drag id any layer had, this id's earlier lives included
        // (replay leaves that to the end of recovery: `startAboveRecoveredVersions`). A replicated
        // record starts it at its log sequence instead: the same on every replica, and above the
        // versions of the id's earlier lives (each mutation raises a version by 1 and takes a
        // sequence of its own).
        if let sequence = c.logSequence {
            layer.start(at: sequence)
        } else if !c.replaying {
            layer.start(at: try versions.fresh())
        }
        if let grid = LayerClustering.eagerGridOptions(api.clustering) { layer.enableGridClusters(grid) }
        let h = LayerHandle(id: r.layerID, layer: layer, options: api,
                            history: (configuration.changeHistoryCount, configuration.changeHistoryBytes))
        var response = V1.CreateLayerResponse()
        response.layer = h.apiLayer(nowUnixMs: c.nowUnixMs)
        try layers.withLock { (all) throws(RPCError) in
            if let old = all[r.layerID] {
                // Replay converges by replacing: the journal's later records rebuild the layer.
                guard c.replaying else { throw .alreadyExists("layer \"\(r.layerID)\" already exists") }
                old.lock.withWriteLock { old.deleted = true }
            }
            try c.checkDeadline()
            all[r.layerID] = h
            noteChange(h, c, .layerCreated)
            try journalAppend(c, response: response.serializedBytes())
        }
        return response
    }

    func deleteLayer(_ r: V1.DeleteLayerRequest, _ c: MutationCommit) throws(RPCError) -> V1.DeleteLayerResponse {
        var response = V1.DeleteLayerResponse()
        try layers.withLock { (all) throws(RPCError) in
            guard let h = all[r.layerID] else { throw .notFound("layer \"\(r.layerID)\" not found") }
            try c.checkDeadline()
            all[r.layerID] = nil
            try h.lock.withWriteLock { () throws(RPCError) in
                h.deleted = true
                response.removedCount = UInt64(h.layer.count)
                noteChange(h, c, .layerDeleted)
                try journalAppend(c, response: response.serializedBytes())
            }
        }
        return response
    }

    func registerIcon(_ r: V1.RegisterIconRequest, _ c: MutationCommit) throws(RPCError) -> V1.RegisterIconResponse {
        let icon = try IconRegistry.validate(r)
        var response = V1.RegisterIconResponse()
        response.iconID = icon.id
        response.width = UInt32(icon.width)
        response.height = UInt32(icon.height)
        try c.checkDeadline()
        // Journaled inside the registry's lock: an upsert that sees the icon is journaled after it.
        try icons.register(icon) { () throws(RPCError) in
            try journalAppend(c, response: response.serializedBytes())
        }
        return response
    }

    // MARK: Markers

    /// Runs `body` under the layer's write lock after the deadline and deletion checks, and
    /// after covering the version `body` may raise the layer to (`VersionCeiling.cover`; a
    /// mutation raises it by at most 1).
    func write<T>(_ layerID: String, _ c: MutationCommit, _ body: (LayerHandle) throws(RPCError) -> T) throws(RPCError) -> T {
        let h = try handle(layerID)
        return try h.lock.withWriteLock { () throws(RPCError) -> T in
            guard !h.deleted else { throw .notFound("layer \"\(layerID)\" not found") }
            try c.checkDeadline()
            if !c.replaying { try versions.cover(h.layer.version + 1) }
            let result = try body(h)
            clustersMayHaveChanged(h)
            return result
        }
    }

    func upsertMarkers(_ r: V1.UpsertMarkersRequest, _ c: MutationCommit, restoring: Bool = false) throws(RPCError) -> V1.UpsertMarkersResponse {
        // Convert outside the lock: it is most of the CPU work of a load.
        let records = try records(r, nowUnixMs: c.nowUnixMs, restoring: restoring)
        return try upsertRecords(records, into: r.layerID, c)
    }

    /// Checks a batch and converts it to core records (no lock needed).
    /// Restoring a snapshot skips the check for ids repeated in the batch (a snapshot section
    /// comes from one table scan, so it has none; and a repeat would just apply in order).
    func records(_ r: V1.UpsertMarkersRequest, nowUnixMs: Int64, restoring: Bool) throws(RPCError) -> [MarkerRecord] {
        if restoring {
            try MarkerConversion.checkBatch(EmptyCollection<V1.Marker>(), id: \.id, count: r.markers.count, what: "markers")
        } else {
            try MarkerConversion.checkBatch(r.markers, id: \.id, count: r.markers.count, what: "markers")
        }
        var records: [MarkerRecord] = []
        records.reserveCapacity(r.markers.count)
        for i in r.markers.indices {
            records.append(try MarkerConversion.record(r.markers[i], index: i, nowUnixMs: nowUnixMs, restoring: restoring,
                                                       icon: icons.geometry))
        }
        return records
    }

    /// Applies converted records under the layer's write lock and journals the request.
    func upsertRecords(_ records: [MarkerRecord], into layerID: String, _ c: MutationCommit) throws(RPCError) -> V1.UpsertMarkersResponse {
        try write(layerID, c) { (h) throws(RPCError) in
            let before = h.footprintsBefore(records.lazy.map(\.id), count: records.count, c)
            let positions = h.positionsBefore(records.lazy.map(\.id))
            let result: UpsertResult
            result = try mapCoreError { () throws(MarkerdCoreError) in try h.layer.upsert(records, now: c.nowUnixMs) }
            h.raiseFenceEvents(records.lazy.map(\.id), before: positions, c)
            h.markTiles(before: before, after: { LayerHandle.staticFootprints(records, now: c.nowUnixMs) }, c, measurer: labelText)
            return try upserted(result, h, c, ids: records.map(\.id))
        }
    }

    func removeMarkers(_ r: V1.RemoveMarkersRequest, _ c: MutationCommit) throws(RPCError) -> V1.RemoveMarkersResponse {
        guard r.ids.count <= MarkerConversion.maxBatch else {
            throw .invalidArgument("ids holds \(r.ids.count) entries, more than \(MarkerConversion.maxBatch) per call", field: "ids")
        }
        return try write(r.layerID, c) { (h) throws(RPCError) in
            let before = h.footprintsBefore(r.ids, count: r.ids.count, c)
            let positions = h.positionsBefore(r.ids)
            let result = h.layer.remove(ids: r.ids)
            h.raiseFenceEvents(r.ids, before: positions, c)
            h.markTiles(before: before, after: { [] }, c, measurer: labelText)
            var response = V1.RemoveMarkersResponse()
            response.removedCount = UInt64(result.removed)
            response.notFoundCount = UInt64(result.notFound)
            response.layerVersion = h.layer.version
            if result.removed > 0 {
                let notFound = Set(result.notFoundIDs)
                noteChange(h, c, .remove, ids: notFound.isEmpty ? r.ids : r.ids.filter { !notFound.contains($0) })
                try journalAppend(c, response: response.serializedBytes())
            }
            return response
        }
    }

    func clearLayer(_ r: V1.ClearLayerRequest, _ c: MutationCommit) throws(RPCError) -> V1.ClearLayerResponse {
        try write(r.layerID, c) { (h) throws(RPCError) in
            var response = V1.ClearLayerResponse()
            h.raiseClearEvents(c)
            response.removedCount = UInt64(h.layer.clear())
            h.tileVersions.reset(seq: h.layer.version)
            h.labels.removeAll()
            response.layerVersion = h.layer.version
            noteChange(h, c, .clear)
            try journalAppend(c, response: response.serializedBytes())
            return response
        }
    }

    func moveMarkers(_ r: V1.MoveMarkersRequest, _ c: MutationCommit) throws(RPCError) -> V1.MoveMarkersResponse {
        try MarkerConversion.checkBatch(r.moves, id: \.id, count: r.moves.count, what: "moves")
        var moves: [(id: String, position: LatLng)] = []
        moves.reserveCapacity(r.moves.count)
        for (i, m) in r.moves.enumerated() {
            guard let p = MarkerConversion.latLng(m.position) else {
                throw .invalidArgument("moves[\(i)] (id \"\(m.id.prefix(64))\"): position is missing", field: "moves[\(i)].position")
            }
            moves.append((m.id, p))
        }
        return try write(r.layerID, c) { (h) throws(RPCError) in
            let before = h.footprintsBefore(moves.lazy.map(\.id), count: moves.count, c)
            let positions = h.positionsBefore(moves.lazy.map(\.id))
            let result: MoveResult
            result = try mapCoreError { () throws(MarkerdCoreError) in try h.layer.move(moves) }
            h.raiseFenceEvents(moves.lazy.map(\.id), before: positions, c)
            h.markTiles(before: before, after: { h.staticFootprints(moves.lazy.map(\.id), now: c.nowUnixMs) }, c, measurer: labelText)
            var response = V1.MoveMarkersResponse()
            response.movedCount = UInt64(result.moved)
            response.notFoundIDs = result.notFoundIDs
            response.layerVersion = h.layer.version
            if result.moved > 0 {
                if !c.replaying {
                    let notFound = Set(result.notFoundIDs)
                    let moved = notFound.isEmpty ? moves : moves.filter { !notFound.contains($0.id) }
                    noteChange(h, c, .move, ids: moved.map(\.id), markers: { moved.map { Self.movedMarker($0.id, WorldPoint($0.position).fastLatLng) } })
                }
                try journalAppend(c, response: response.serializedBytes())
            }
            return response
        }
    }

    // MARK: Drags

    static func dragID(_ text: String) throws(RPCError) -> DragID {
        guard let id = DragID(text) else { throw .invalidArgument("drag_id \"\(text.prefix(64))\" is not a drag id", field: "drag_id") }
        return id
    }

    func beginDrag(_ r: V1.BeginDragRequest, _ c: MutationCommit) throws(RPCError) -> V1.BeginDragResponse {
        try write(r.layerID, c) { (h) throws(RPCError) in
            // Drag ids are covered like versions, so none handed out is used again after a restart.
            try versions.cover(h.layer.nextDragID.rawValue)
            let (drag, marker) = try mapCoreError { () throws(MarkerdCoreError) in try h.layer.beginDrag(id: r.markerID) }
            var response = V1.BeginDragResponse()
            response.dragID = drag.description
            response.marker = MarkerConversion.apiMarker(marker)
            return response
        }
    }

    func endDrag(_ r: V1.EndDragRequest, _ c: MutationCommit) throws(RPCError) -> V1.EndDragResponse {
        let drag = try Self.dragID(r.dragID)
        return try write(r.layerID, c) { (h) throws(RPCError) in
            // The drag's start is the marker's last journaled position (`fencePoint`): replay sees this as a move from there.
            let draggedID = h.layer.draggedMarkerID(drag)
            let positions = draggedID.flatMap { h.positionsBefore([$0]) }
            let marker: MarkerRecord
            marker = try mapCoreError { () throws(MarkerdCoreError) in try h.layer.endDrag(drag, at: MarkerConversion.latLng(r.position)) }
            h.raiseFenceEvents([marker.id], before: positions, c)
            var response = V1.EndDragResponse()
            response.marker = MarkerConversion.apiMarker(marker)
            response.layerVersion = h.layer.version
            // Journaled as the move it amounts to: drag sessions do not outlive the process.
            var move = V1.MarkerMove()
            move.id = marker.id
            move.position = MarkerConversion.apiLatLng(marker.position)
            var asMove = V1.MoveMarkersRequest()
            asMove.layerID = r.layerID
            asMove.moves = [move]
            noteChange(h, c, .drag, ids: [marker.id], markers: { [Self.movedMarker(marker.id, marker.position)] })
            try journalAppend(c, response: response.serializedBytes(), as: .moveMarkers, payload: asMove.serializedBytes())
            return response
        }
    }

    func cancelDrag(_ r: V1.CancelDragRequest, _ c: MutationCommit) throws(RPCError) -> V1.CancelDragResponse {
        let drag = try Self.dragID(r.dragID)
        return try write(r.layerID, c) { (h) throws(RPCError) in
            var response = V1.CancelDragResponse()
            response.marker = MarkerConversion.apiMarker(try mapCoreError { () throws(MarkerdCoreError) in try h.layer.cancelDrag(drag) })
            return response
        }
    }

    /// DragTo: cheap (O(1)), for 60 Hz updates; not journaled and needs no idempotency key
    /// (it sets a position, so a resend is harmless). EndDrag makes the final position durable.
    /// The version it raises the layer to is covered by a durable reservation first
    /// (`VersionCeiling`), which now and then waits for a journal write: UNAVAILABLE if that fails.
    ///
    /// Cluster mode: appended to the replicated log (one quorum write each) and answered once
    /// the log acknowledged it, without waiting for this replica's apply; every replica moves
    /// the marker when it applies the record (a drag that ended meanwhile: a no-op everywhere).
    /// NOT_FOUND when this replica knows no such drag; UNAVAILABLE when the log does not
    /// acknowledge it.
    public func dragTo(_ r: V1.DragToRequest) throws(RPCError) -> V1.DragToResponse {
        let drag = try Self.dragID(r.dragID)
        guard let p = MarkerConversion.latLng(r.position) else { throw .invalidArgument("position is missing", field: "position") }
        let h = try handle(r.layerID)
        if let replication {
            try mapCoreError { () throws(MarkerdCoreError) in try p.validate(field: "position") }
            guard h.lock.withReadLock({ !h.deleted && h.layer.draggedMarkerID(drag) != nil }) else {
                throw .notFound("drag \(r.dragID) not found in layer \"\(r.layerID)\"")
            }
            var record = V1.JournalRecord()
            record.method = Self.dragToMethod
            record.payload = r.serializedBytes()
            try replication.appendAndWait(record.serializedBytes())
            return V1.DragToResponse()
        }
        try h.lock.withWriteLock { () throws(RPCError) in
            guard !h.deleted else { throw .notFound("layer \"\(r.layerID)\" not found") }
            try versions.cover(h.layer.version + 1)
            try mapCoreError { () throws(MarkerdCoreError) in try h.layer.dragTo(drag, p) }
        }
        return V1.DragToResponse()
    }
}
