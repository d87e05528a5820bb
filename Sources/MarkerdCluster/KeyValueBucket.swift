internal import CNats
import Foundation

/// One JetStream key-value bucket (libnats' `kvStore`): get, atomic create, put, delete, and a
/// watcher thread that sees every change. Thread-safe (libnats locks internally).
///
/// Keys are `[-/_=.A-Za-z0-9]+` (`.` separates subject tokens: no leading, trailing or doubled
/// dots); values are bytes. Calls wait up to the connection's JetStream timeout and throw
/// ``NatsError`` when the servers do not answer in time.
final class KeyValueBucket: @unchecked Sendable {
    let name: String
    private let store: OpaquePointer
    /// Kept open as long as the bucket is used.
    private let connection: NatsConnection

    /// Binds to bucket `name`, creating it (file storage, history 1) when it does not exist.
    ///
    /// - Parameters:
    ///   - maxAge: how long a value is kept after its last write (at least 100 ms; nil: forever).
    ///   - replicas: JetStream replicas of the bucket's stream (1-5; at most the servers in the cluster).
    /// - Throws: ``NatsError`` when JetStream does not answer or refuses the bucket (e.g. more
    ///   replicas than servers).
    init(connection: NatsConnection, name: String, maxAge: Duration?, replicas: Int) throws(NatsError) {
        self.name = name
        self.connection = connection
        var kv: OpaquePointer?
        if js_KeyValue(&kv, connection.jetStream, name) != NATS_OK {
            var cfg = kvConfig()
            kvConfig_Init(&cfg)
            cfg.History = 1
            cfg.TTL = maxAge?.nanoseconds ?? 0  // libnats 3.4 takes nanoseconds here
            cfg.StorageType = js_FileStorage
            cfg.Replicas = Int32(replicas)
            let created = name.withCString { n -> natsStatus in
                cfg.Bucket = n
                return js_CreateKeyValue(&kv, connection.jetStream, &cfg)
            }
            // Another replica may have created it in between: bind to that one.
            if created != NATS_OK {
                let bound = js_KeyValue(&kv, connection.jetStream, name)
                if bound != NATS_OK { throw NatsError(created, "create key-value bucket \(name)") }
            }
        }
        store = kv!
    }

    deinit { kvStore_Destroy(store) }

    /// The value of `key`, or nil when it has none (never set, deleted or aged out).
    func get(_ key: String) throws(NatsError) -> [UInt8]? {
        var entry: OpaquePointer?
        let s = kvStore_Get(&entry, store, key)
        if s == NATS_NOT_FOUND { return nil }
        try NatsError.check(s, "get \(key) from \(name)")
        defer { kvEntry_Destroy(entry) }
        return Self.value(entry)
    }

    /// Sets `key` to `value` only if it has no value (first writer wins).
    /// - Returns: true if this call set it, false if the key already had a value.
    func create(_ key: String, _ value: [UInt8]) throws(NatsError) -> Bool {
        let s = value.withUnsafeBytes { kvStore_Create(nil, store, key, $0.baseAddress, Int32($0.count)) }
        if s == NATS_OK { return true }
        // The library answers a taken key with a generic error: a value there tells them apart.
        if try get(key) != nil { return false }
        throw NatsError(s, "create \(key) in \(name)")
    }

    /// Sets `key` to `value`.
    func put(_ key: String, _ value: [UInt8]) throws(NatsError) {
        let s = value.withUnsafeBytes { kvStore_Put(nil, store, key, $0.baseAddress, Int32($0.count)) }
        try NatsError.check(s, "put \(key) in \(name)")
    }

    /// Removes `key`'s value (a delete marker that watchers see).
    func delete(_ key: String) throws(NatsError) {
        try NatsError.check(kvStore_Delete(store, key), "delete \(key) from \(name)")
    }

    /// One change seen by a watcher: `value` nil for a delete or purge. `ageNs`: how long ago
    /// the server stored it, by this host's clock (0 when that clock is behind the server's).
    struct Change {
        var key: String
        var value: [UInt8]?
        var ageNs: Int64
    }

    /// Watches every key from a thread of its own: `onChange` gets each key's current value
    /// first, then `onChange(nil)` once the initial values are all delivered, then every change
    /// as it happens, until ``Watch/stop()``. Reconnections are the library's (its watcher is
    /// an ordered consumer that resumes after a gap).
    func watch(_ onChange: @escaping @Sendable (Change?) -> Void) throws(NatsError) -> Watch {
        var watcher: OpaquePointer?
        try NatsError.check(kvStore_WatchAll(&watcher, store, nil), "watch \(name)")
        let watch = Watch(watcher: watcher!)
        let thread = Thread {
            while true {
                var entry: OpaquePointer?
                let s = kvWatcher_Next(&entry, watch.watcher, 1_000)
                if s == NATS_TIMEOUT { continue }
                guard s == NATS_OK else { break }  // NATS_ILLEGAL_STATE after stop()
                guard let e = entry else { onChange(nil); continue }
                let op = kvEntry_Operation(e)
                let created = kvEntry_Created(e)
                let now = Int64(Date().timeIntervalSince1970 * 1e9)
                onChange(Change(key: String(cString: kvEntry_Key(e)), value: op == kvOp_Put ? Self.value(e) : nil,
                                ageNs: max(0, now - created)))
                kvEntry_Destroy(e)
            }
            watch.finished.signal()
        }
        thread.name = "markerd-kv-\(name)"
        thread.start()
        return watch
    }

    /// A running watcher; ``stop()`` ends its thread (idempotent).
    final class Watch: @unchecked Sendable {
        fileprivate let watcher: OpaquePointer
        fileprivate let finished = DispatchSemaphore(value: 0)
        private let stopped = NSLock()
        private var isStopped = false

        fileprivate init(watcher: OpaquePointer) { self.watcher = watcher }

        /// Stops the watcher and waits for its thread to end.
        func stop() {
            stopped.lock()
            defer { stopped.unlock() }
            guard !isStopped else { return }
            isStopped = true
            kvWatcher_Stop(watcher)
            finished.wait()
            kvWatcher_Destroy(watcher)
        }

        deinit { stop() }
    }

    private static func value(_ entry: OpaquePointer?) -> [UInt8] {
        let n = Int(kvEntry_ValueLen(entry))
        guard n > 0, let p = kvEntry_Value(entry) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }
}
