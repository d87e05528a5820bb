import Foundation
import MarkerdAPI

/// Loads many markers into a layer in batches, several batches in flight at once.
public struct BulkLoader: Sendable {
    public struct Progress: Sendable {
        public var sent: Int
        public var total: Int
        public var seconds: Double
        public var markersPerSecond: Double { seconds > 0 ? Double(sent) / seconds : 0 }
    }

    public struct Summary: Sendable {
        public var markers: Int
        public var created: Int
        public var updated: Int
        public var seconds: Double
        public var markersPerSecond: Double { seconds > 0 ? Double(markers) / seconds : 0 }
    }

    public let client: MarkerdClient
    /// Markers per UpsertMarkers call (at most 100,000). Default 50,000.
    public var batchSize: Int
    /// Calls in flight at once. Default 4.
    public var concurrency: Int

    public init(client: MarkerdClient, batchSize: Int = 50_000, concurrency: Int = 4) {
        self.client = client
        self.batchSize = min(100_000, max(1, batchSize))
        self.concurrency = max(1, concurrency)
    }

    /// Upserts `markers` into `layerID`. Calls `progress` after every batch (from worker threads).
    /// Stops at the first failed batch and throws its error; earlier batches stay applied.
    /// With `attributes`, row `i` of the columns is `markers[i]`'s attributes (it needs a row
    /// per marker), encoded straight from the columns: the fast way to load attributes (no
    /// dictionary per marker is built or read).
    public func load(_ markers: [V1.Marker], attributes: AttributeColumns? = nil, into layerID: String,
                     progress: @escaping @Sendable (Progress) -> Void = { _ in }) throws(ClientError) -> Summary {
        precondition(attributes.map { $0.keys.isEmpty || $0.rowCount == markers.count } ?? true,
                     "attribute columns have \(attributes?.rowCount ?? 0) rows for \(markers.count) markers")
        let columns = attributes?.keys.isEmpty == false ? attributes : nil
        let start = ContinuousClock.now
        let batches = stride(from: 0, to: markers.count, by: batchSize).map { $0..<min($0 + batchSize, markers.count) }
        final class State: @unchecked Sendable {
            let lock = NSLock()
            var next = 0, sent = 0, created = 0, updated = 0
            var error: ClientError?
        }
        let state = State()
        let total = markers.count
        let client = self.client
        let work: @Sendable () -> Void = {
            while true {
                state.lock.lock()
                if state.error != nil || state.next >= batches.count { state.lock.unlock(); return }
                let range = batches[state.next]
                state.next += 1
                state.lock.unlock()
                do {
                    let r = try client.upsertMarkers(layerID, markers[range], attributes: columns)
                    state.lock.lock()
                    state.sent += range.count
                    state.created += Int(r.createdCount)
                    state.updated += Int(r.updatedCount)
                    let p = Progress(sent: state.sent, total: total, seconds: Self.seconds(since: start))
                    state.lock.unlock()
                    progress(p)
                } catch {
                    state.lock.lock()
                    if state.error == nil { state.error = (error as? ClientError) ?? .malformedReply("\(error)") }
                    state.lock.unlock()
                    return
                }
            }
        }
        // One thread per call in flight: each blocks in its call while the others encode and
        // send (`DispatchQueue.concurrentPerform` would run only as many as there are cores).
        let workers = DispatchGroup()
        for _ in 0..<min(concurrency, max(1, batches.count)) {
            workers.enter()
            Thread.detachNewThread {
                work()
                workers.leave()
            }
        }
        workers.wait()
        if let error = state.error { throw error }
        return Summary(markers: state.sent, created: state.created, updated: state.updated, seconds: Self.seconds(since: start))
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
