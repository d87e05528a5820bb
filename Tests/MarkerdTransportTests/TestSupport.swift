import MarkerdTestSupport
import Dispatch
import Foundation
import MarkerdTransport
import Synchronization


func uniqueName(_ prefix: String) -> String {
    "\(prefix)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
}

func ipcURL() -> String { "ipc://" + NSTemporaryDirectory() + uniqueName("markerd-transport") + ".sock" }

/// Replies inline on the nng thread with the request bytes.
struct EchoHandler: RequestHandler {
    func handle(_ request: IncomingRequest) {
        let body = request.body
        request.respond(size: body.count) { $0.copyMemory(from: body) }
    }
}

/// Replies with the request bytes from a dispatch queue after `delay(requestBytes)`.
struct DeferredEchoHandler: RequestHandler {
    let delay: @Sendable () -> DispatchTimeInterval
    func handle(_ request: IncomingRequest) {
        DispatchQueue.global().asyncAfter(deadline: .now() + delay()) {
            let copy = Array(request.body)
            request.respond(copy)
        }
    }
}

/// Keeps every request without replying (for timeouts and drain bounds).
final class HoldingHandler: RequestHandler, @unchecked Sendable {
    let held = Mutex<[IncomingRequest]>([])
    func handle(_ request: IncomingRequest) { held.withLock { $0.append(request) } }
    var count: Int { held.withLock { $0.count } }
    func releaseAll() -> [IncomingRequest] { held.withLock { list in defer { list = [] }; return list } }
}

/// Collects requests and answers them in reverse arrival order, in batches of `batch`, with a
/// short timer flushing partial batches.
final class OutOfOrderHandler: RequestHandler, @unchecked Sendable {
    let batch: Int
    let pending = Mutex<[IncomingRequest]>([])
    let reordered = Atomic<Int>(0)
    init(batch: Int) { self.batch = batch }

    func handle(_ request: IncomingRequest) {
        let full: [IncomingRequest] = pending.withLock { list in
            list.append(request)
            if list.count >= batch { defer { list = [] }; return list }
            return []
        }
        if full.isEmpty {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(2)) { self.flush() }
        } else {
            DispatchQueue.global().async { self.answer(full) }
        }
    }

    func flush() {
        let all: [IncomingRequest] = pending.withLock { list in defer { list = [] }; return list }
        answer(all)
    }

    func answer(_ requests: [IncomingRequest]) {
        if requests.count > 1 { reordered.add(1, ordering: .relaxed) }
        for request in requests.reversed() { request.respond(Array(request.body)) }
    }
}

/// Runs `body(i)` on `count` real threads and waits for all of them.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        let thread = Thread {
            body(i)
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    group.wait()
}

/// A request that names its sender and sequence number, padded with random bytes.
func makeRequest(thread: Int, seq: Int, rng: inout SplitMix64, maxPadding: Int = 2048) -> [UInt8] {
    var bytes: [UInt8] = []
    withUnsafeBytes(of: UInt32(thread).littleEndian) { bytes.append(contentsOf: $0) }
    withUnsafeBytes(of: UInt32(seq).littleEndian) { bytes.append(contentsOf: $0) }
    let padding = Int.random(in: 0...maxPadding, using: &rng)
    for _ in 0..<padding { bytes.append(UInt8.random(in: 0...255, using: &rng)) }
    return bytes
}

final class Tally: @unchecked Sendable {
    let state = Mutex<(ok: Int, mismatched: Int, errors: [NNGError])>((0, 0, []))
    func ok() { state.withLock { $0.ok += 1 } }
    func mismatch() { state.withLock { $0.mismatched += 1 } }
    func error(_ e: NNGError) { state.withLock { $0.errors.append(e) } }
    var snapshot: (ok: Int, mismatched: Int, errors: [NNGError]) { state.withLock { $0 } }
}
