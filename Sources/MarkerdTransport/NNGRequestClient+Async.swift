internal import CNNG

/// One nng context + aio with a callback, driving one asynchronous call at a time:
/// idle -> sending -> receiving -> idle. State guarded by `lock`.
final class AsyncCallSlot: @unchecked Sendable {
    private enum Phase { case idle, sending, receiving }

    var ctx = nng_ctx()
    private(set) var aio: OpaquePointer?          // guarded by lock once published
    private let lock = ConditionLock()
    private var phase = Phase.idle                // guarded by lock
    private var generation: UInt64 = 0            // guarded by lock
    private var cancelled = false                 // guarded by lock
    private var deadline = ContinuousClock.now    // guarded by lock
    private var url = ""                          // guarded by lock
    private var continuation: CheckedContinuation<Result<[UInt8], NNGError>, Never>?  // guarded by lock

    init(socket: nng_socket, resendTime: Duration?) throws(NNGError) {
        try nngCheck(nng_ctx_open(&ctx, socket), "nng_ctx_open")
        if let resendTime {
            try nngCheck(nng_ctx_set_ms(ctx, NNG_OPT_REQ_RESENDTIME, nngMilliseconds(resendTime)),
                         "nng_ctx_set_ms(\(NNG_OPT_REQ_RESENDTIME))")
        }
        var made: OpaquePointer?
        try nngCheck(nng_aio_alloc(&made, { arg in
            guard let arg else { return }
            Unmanaged<AsyncCallSlot>.fromOpaque(arg).takeUnretainedValue().completed()
        }, Unmanaged.passUnretained(self).toOpaque()), "nng_aio_alloc")
        aio = made
    }

    /// Frees the aio (waits for a running callback). Never call from this slot's callback.
    func destroy() {
        let old: OpaquePointer? = lock.withLock { defer { aio = nil }; return aio }
        if let old { nng_aio_free(old) }
        nng_ctx_close(ctx)
    }

    deinit { destroy() }

    /// Starts a call; returns its generation (for `cancel`). Takes ownership of `request`.
    func start(_ request: OpaquePointer, deadline: ContinuousClock.Instant, url: String,
               continuation: CheckedContinuation<Result<[UInt8], NNGError>, Never>) -> UInt64 {
        lock.lock()
        generation &+= 1
        let gen = generation
        self.phase = .sending
        self.cancelled = false
        self.deadline = deadline
        self.url = url
        self.continuation = continuation
        let ms = nngMilliseconds(deadline - .now)
        let aio = self.aio
        lock.unlock()
        // Nothing else touches the aio until the callback: phase is .sending.
        nng_aio_set_timeout(aio, max(1, ms))
        nng_aio_set_msg(aio, request)
        nng_ctx_send(ctx, aio)
        return gen
    }

    /// Task cancellation: abort call `gen` if it is still running.
    func cancel(_ gen: UInt64) {
        lock.withLock {
            guard gen == generation, phase != .idle, let aio else { return }
            cancelled = true
            nng_aio_cancel(aio)  // schedules the callback; never runs it inline
        }
    }

    private func completed() {
        lock.lock()
        let result = nng_aio_result(aio)
        var outcome: Result<[UInt8], NNGError>
        switch phase {
        case .idle:
            lock.unlock()
            return
        case .sending:
            if result == 0 && !cancelled {
                let ms = nngMilliseconds(deadline - .now)
                if ms > 0 {
                    phase = .receiving
                    nng_aio_set_timeout(aio, ms)
                    let aio = self.aio
                    lock.unlock()
                    nng_ctx_recv(ctx, aio)
                    return
                }
                outcome = .failure(NNGError(code: NNGError.timedOut.code, operation: "NNGRequestClient.asyncCall"))
            } else {
                if let msg = nng_aio_get_msg(aio) { nng_msg_free(msg) }
                let code = result != 0 ? result : NNGError.canceled.code
                outcome = .failure(NNGError(code: code, operation: "nng_ctx_send(\(url))"))
            }
            nng_aio_set_msg(aio, nil)
        case .receiving:
            if result == 0, let msg = nng_aio_get_msg(aio) {
                let body = UnsafeRawBufferPointer(start: nng_msg_body(msg), count: nng_msg_len(msg))
                outcome = .success(Array(body.bindMemory(to: UInt8.self)))
                nng_msg_free(msg)
            } else {
                outcome = .failure(NNGError(code: result != 0 ? result : NNGError.internalError.code,
                                            operation: "nng_ctx_recv(\(url))"))
            }
            nng_aio_set_msg(aio, nil)
        }
        phase = .idle
        let continuation = self.continuation
        self.continuation = nil
        lock.unlock()
        continuation?.resume(returning: outcome)
    }
}

extension NNGRequestClient {
    /// Sends `request` and suspends until the reply arrives, without blocking a thread (nng's
    /// aio callback resumes the task). Throws `.timedOut` after `timeout`, `.canceled` if the
    /// task is cancelled, `.closed` if the client is closed, or another ``NNGError``.
    public func asyncCall(_ request: [UInt8], timeout: Duration) async throws(NNGError) -> [UInt8] {
        let deadline = ContinuousClock.now + timeout
        let slot = try acquireAsyncSlot()
        var message: OpaquePointer?
        do throws(NNGError) {
            try nngCheck(nng_msg_alloc(&message, request.count), "nng_msg_alloc")
        } catch {
            releaseAsyncSlot(slot)
            throw error
        }
        guard let message else { releaseAsyncSlot(slot); throw NNGError.internalError }
        request.withUnsafeBytes {
            UnsafeMutableRawBufferPointer(start: nng_msg_body(message), count: request.count).copyMemory(from: $0)
        }
        let url = configuration.url
        let generation = GenerationBox()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<[UInt8], NNGError>, Never>) in
                generation.set(slot.start(message, deadline: deadline, url: url, continuation: continuation))
                if Task.isCancelled { slot.cancel(generation.get()) }
            }
        } onCancel: {
            if let gen = generation.getIfSet() { slot.cancel(gen) }
        }
        releaseAsyncSlot(slot)
        return try result.get()
    }
}

/// The generation of the call in flight, shared with the cancellation handler.
final class GenerationBox: @unchecked Sendable {
    private let lock = ConditionLock()
    private var value: UInt64?  // guarded by lock
    func set(_ v: UInt64) { lock.withLock { value = v } }
    func get() -> UInt64 { lock.withLock { value ?? 0 } }
    func getIfSet() -> UInt64? { lock.withLock { value } }
}
