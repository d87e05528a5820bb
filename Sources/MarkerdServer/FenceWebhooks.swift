import Foundation
import MarkerdAPI
import MarkerdAuth
import MarkerdService
import MarkerdTransport
import Synchronization

/// Counters of webhook deliveries, shown on /metrics.
public final class WebhookCounters: Sendable {
    /// POSTs answered 2xx.
    public let delivered = Atomic<UInt64>(0)
    /// Failed attempts that were retried (connection error, timeout, non-2xx).
    public let retried = Atomic<UInt64>(0)
    /// Events given up after the last attempt, or for a secret name the secrets file lacks.
    public let failed = Atomic<UInt64>(0)
    /// Events dropped because the queue was full.
    public let dropped = Atomic<UInt64>(0)

    func prometheusText() -> String {
        "# HELP markerd_fence_webhooks_total Fence events POSTed to webhooks: delivered (2xx), retried (a failed attempt that is tried again), failed (given up), dropped (queue full).\n"
            + "# TYPE markerd_fence_webhooks_total counter\n"
            + "markerd_fence_webhooks_total{outcome=\"delivered\"} \(delivered.load(ordering: .relaxed))\n"
            + "markerd_fence_webhooks_total{outcome=\"retried\"} \(retried.load(ordering: .relaxed))\n"
            + "markerd_fence_webhooks_total{outcome=\"failed\"} \(failed.load(ordering: .relaxed))\n"
            + "markerd_fence_webhooks_total{outcome=\"dropped\"} \(dropped.load(ordering: .relaxed))\n"
    }
}

/// POSTs fence events to their fences' webhooks (`Fence.webhook`) from one background thread:
/// the body is the event as JSON (`json(_:)`), signed with header
/// `X-Markerd-Signature: sha256=<hex HMAC-SHA256(secret, body)>` when the fence names a secret.
/// A failed attempt (no connection, no answer within `timeout`, a status other than 2xx) is
/// tried again after 0.25 s, 0.5 s, 1 s, ... (doubling, at most 30 s), up to `attempts` times
/// in all; later events are not held up meanwhile, so events may arrive out of order after a
/// failure. `deliver` never blocks and does no more than queue (the JSON and the signature are
/// made on the sink's thread): an event that finds `capacity` events queued is dropped and
/// counted (`markerd_fence_webhooks_total{outcome="dropped"}`).
public final class FenceWebhooks: FenceEventSink, @unchecked Sendable {
    struct Delivery {
        var event: V1.FenceEvent
        var webhook: V1.FenceWebhook
        var attempt: Int
        var due: ContinuousClock.Instant
    }

    /// Events waiting, at most `capacity`. Guarded by `condition`.
    private var queue: [Delivery] = []
    private var stopped = false  // guarded by condition
    private let condition = NSCondition()
    private let secrets: [String: [UInt8]]
    let capacity: Int
    let attempts: Int
    let timeout: Duration
    public let counters: WebhookCounters
    private let done = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - secrets: secret name -> key (the `--webhook-secrets` file).
    ///   - capacity: events queued at most. Default 10,000.
    ///   - attempts: tries per event. Default 5.
    ///   - timeout: per attempt, connection to complete response. Default 5 s.
    public init(secrets: [String: [UInt8]], counters: WebhookCounters, capacity: Int = 10_000, attempts: Int = 5,
                timeout: Duration = .seconds(5)) {
        self.secrets = secrets
        self.counters = counters
        self.capacity = capacity
        self.attempts = max(1, attempts)
        self.timeout = timeout
        Thread.detachNewThread { [self] in run() }
    }

    /// Reads a secrets file: one `NAME SECRET` per line (NAME as fence ids, SECRET the rest of
    /// the line, at least 16 bytes); blank lines and lines starting with `#` are skipped.
    /// - Throws: a message naming the file and line.
    public static func readSecrets(path: String) throws -> [String: [UInt8]] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw MarkerdNode.StartupError(description: "cannot read the webhook secrets file \(path)")
        }
        var out: [String: [UInt8]] = [:]
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, (try? MarkerConversion.checkName(String(parts[0]), what: "name")) != nil,
                  parts[1].utf8.count >= 16 else {
                throw MarkerdNode.StartupError(description: "\(path):\(n + 1): expected NAME SECRET (NAME of [A-Za-z0-9._-], SECRET at least 16 bytes)")
            }
            out[String(parts[0])] = Array(parts[1].utf8)
        }
        return out
    }

    /// The JSON body of an event: its proto field names, the kind's short name (ENTER, EXIT,
    /// INSIDE, CROSS), numbers as JSON numbers.
    public static func json(_ e: V1.FenceEvent) -> [UInt8] {
        struct Position: Encodable { var latitude: Double; var longitude: Double }
        struct Body: Encodable {
            var fence_id: String, layer_id: String, kind: String, marker_id: String
            var position: Position, layer_version: UInt64, at_unix_ms: Int64
        }
        let kind = e.kind.name.hasPrefix("FENCE_EVENT_KIND_") ? String(e.kind.name.dropFirst(17)) : e.kind.name
        let body = Body(fence_id: e.fenceID, layer_id: e.layerID, kind: kind, marker_id: e.markerID,
                        position: Position(latitude: e.position?.latitude ?? 0, longitude: e.position?.longitude ?? 0),
                        layer_version: e.layerVersion, at_unix_ms: e.atUnixMs)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(body)) ?? Data())
    }

    /// The signature header's value for `body` under `key`.
    public static func signature(_ body: [UInt8], key: [UInt8]) -> String {
        "sha256=" + Crypto.hex(Crypto.hmacSHA256(key: key, message: body))
    }

    public func deliver(_ notices: [FenceNotice]) {
        let now = ContinuousClock.now
        var batch: [Delivery] = []
        for n in notices {
            guard let hook = n.webhook, !hook.url.isEmpty else { continue }
            batch.append(Delivery(event: n.event, webhook: hook, attempt: 0, due: now))
        }
        guard !batch.isEmpty else { return }
        condition.lock()
        let room = max(0, capacity - queue.count)
        queue.append(contentsOf: batch.prefix(room))
        condition.signal()
        condition.unlock()
        if batch.count > room { counters.dropped.add(UInt64(batch.count - room), ordering: .relaxed) }
    }

    /// Stops the thread after the attempt in progress; queued events are dropped.
    public func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
        done.wait()
    }

    /// Backoff before attempt `n` (1-based retries): 0.25 s doubling, at most 30 s.
    static func backoff(_ n: Int) -> Duration { .milliseconds(min(30_000, 250 << min(n - 1, 10))) }

    private func run() {
        defer { done.signal() }
        while true {
            condition.lock()
            var next: Delivery?
            while next == nil && !stopped {
                let now = ContinuousClock.now
                if let i = queue.firstIndex(where: { $0.due <= now }) {
                    next = queue.remove(at: i)
                } else if let soonest = queue.map(\.due).min() {
                    let wait = soonest - now
                    _ = condition.wait(until: Date(timeIntervalSinceNow: Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18))
                } else {
                    condition.wait()
                }
            }
            condition.unlock()
            guard var d = next else { return }
            let body = Self.json(d.event)
            var headers: [(name: String, value: String)] = [("Content-Type", "application/json")]
            if !d.webhook.secretName.isEmpty {
                guard let key = secrets[d.webhook.secretName] else {
                    counters.failed.add(1, ordering: .relaxed)
                    continue
                }
                headers.append(("X-Markerd-Signature", Self.signature(body, key: key)))
            }
            let status = try? NNGHTTPClient.post(d.webhook.url, headers: headers, body: body, timeout: timeout)
            if let status, (200..<300).contains(status) {
                counters.delivered.add(1, ordering: .relaxed)
                continue
            }
            d.attempt += 1
            guard d.attempt < attempts else {
                counters.failed.add(1, ordering: .relaxed)
                continue
            }
            counters.retried.add(1, ordering: .relaxed)
            d.due = ContinuousClock.now + Self.backoff(d.attempt)
            condition.lock()
            queue.append(d)
            condition.unlock()
        }
    }
}
