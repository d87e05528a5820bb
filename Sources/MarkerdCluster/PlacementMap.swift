internal import CNats
import Foundation
import Synchronization

/// Which replica group holds each layer, kept in the JetStream key-value bucket
/// `markerd-placement` (key: the layer id encoded by ``key(for:)``, value: the group's name).
///
/// Every replica watches the bucket into a local table, so ``group(of:)`` (asked on every
/// request that names a layer) is a local lookup: a lock and a dictionary, never a NATS round
/// trip. ``claim(_:for:)`` places a layer with an atomic create (the first writer wins, on
/// every replica at once); ``release(_:)`` removes a placement after DeleteLayer. The local
/// table follows the bucket within the watcher's delivery time (milliseconds on a LAN); the
/// atomic create is what decides a race, never the local table.
public final class PlacementMap: Sendable {
    /// The bucket's name.
    public static let bucketName = "markerd-placement"

    private let bucket: KeyValueBucket
    /// layer id -> group.
    private let table = Mutex<[String: String]>([:])
    private let watch: Mutex<KeyValueBucket.Watch?> = Mutex(nil)

    /// Opens (or creates) the bucket and loads it: returns once the watcher delivered every
    /// current placement, so lookups are complete from the start.
    /// - Parameters:
    ///   - replicas: JetStream replicas of the bucket (at most the NATS servers). Default 1.
    ///   - loadTimeout: how long to wait for the initial placements. Default 10 s.
    /// - Throws: ``NatsError`` when JetStream does not answer, or the load takes longer.
    public init(connection: NatsConnection, replicas: Int = 1, loadTimeout: Duration = .seconds(10)) throws(NatsError) {
        bucket = try KeyValueBucket(connection: connection, name: Self.bucketName, maxAge: nil, replicas: replicas)
        let loaded = DispatchSemaphore(value: 0)
        let w = try bucket.watch { [weak self] change in
            guard let change else { loaded.signal(); return }
            guard let self, let layer = Self.layer(forKey: change.key) else { return }
            let group = change.value.map { String(decoding: $0, as: UTF8.self) }
            self.table.withLock { $0[layer] = group }
        }
        watch.withLock { $0 = w }
        if loaded.wait(timeout: .now() + .nanoseconds(Int(loadTimeout.nanoseconds))) == .timedOut {
            w.stop()
            throw NatsError(NATS_TIMEOUT, "load the placements of \(Self.bucketName) within \(loadTimeout)")
        }
    }

    /// The group `layer` is placed on, or nil when it has none. Local (see the type's notes).
    public func group(of layer: String) -> String? {
        table.withLock { $0[layer] }
    }

    /// Places `layer` on `group` unless it is placed already (an atomic create in the bucket).
    /// - Returns: the group the layer is placed on after the call: `group` if this call placed
    ///   it, else the group that placed it first.
    /// - Throws: ``NatsError`` when JetStream does not answer.
    public func claim(_ layer: String, for group: String) throws(NatsError) -> String {
        let key = Self.key(for: layer)
        if try bucket.create(key, Array(group.utf8)) {
            table.withLock { $0[layer] = group }
            return group
        }
        // Taken: read the winner (the bucket, not the local table, which may lag).
        if let owner = try bucket.get(key) {
            let owner = String(decoding: owner, as: UTF8.self)
            table.withLock { $0[layer] = owner }
            return owner
        }
        // Deleted in between: try once more.
        return try claim(layer, for: group)
    }

    /// Removes `layer`'s placement (after the layer is deleted); a later CreateLayer places it anew.
    public func release(_ layer: String) throws(NatsError) {
        try bucket.delete(Self.key(for: layer))
        table.withLock { $0[layer] = nil }
    }

    /// Stops watching the bucket. Idempotent.
    public func stop() {
        watch.withLock { $0?.stop(); $0 = nil }
    }

    deinit { stop() }

    /// The bucket key of a layer id. Layer ids are 1-128 bytes of `[A-Za-z0-9._-]`; keys may not
    /// start or end with `.` nor hold `..` (a `.` separates subject tokens), so every `.` becomes
    /// `=`, which layer ids never contain: one key per id and back (``layer(forKey:)``).
    public static func key(for layer: String) -> String {
        String(decoding: layer.utf8.map { $0 == UInt8(ascii: ".") ? UInt8(ascii: "=") : $0 }, as: UTF8.self)
    }

    /// The layer id of a bucket key (``key(for:)`` reversed); nil for a key no layer id makes.
    public static func layer(forKey key: String) -> String? {
        guard !key.contains(".") else { return nil }
        return String(decoding: key.utf8.map { $0 == UInt8(ascii: "=") ? UInt8(ascii: ".") : $0 }, as: UTF8.self)
    }
}
