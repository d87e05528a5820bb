import Testing
@testable import MarkerdTransport

@Suite struct NNGErrorTests {
    @Test func equalityIgnoresOperationAndDescriptionHasText() {
        let e = NNGError(code: NNGError.timedOut.code, operation: "nng_ctx_recv(tcp://x)")
        #expect(e == .timedOut)
        #expect(e != .closed)
        #expect(e.description.contains("nng_ctx_recv(tcp://x)"))
        #expect(e.description.lowercased().contains("timed out"))
        #expect(NNGError.addressInUse.message.lowercased().contains("in use"))
        #expect(NNGError.closed.systemErrno == nil)
    }

    @Test func checkThrowsOnlyOnNonZero() throws {
        try nngCheck(0, "ok")
        #expect(throws: NNGError.messageTooLarge) { try nngCheck(NNGError.messageTooLarge.code, "big") }
    }

    @Test func millisecondsRoundUpAndClamp() {
        #expect(nngMilliseconds(.zero) == 0)
        #expect(nngMilliseconds(.milliseconds(-5)) == 0)
        #expect(nngMilliseconds(.microseconds(1)) == 1)
        #expect(nngMilliseconds(.milliseconds(1500)) == 1500)
        #expect(nngMilliseconds(.seconds(10_000_000)) == Int32.max)
    }

    @Test func zeroPortIsReplaced() {
        #expect(NNGReplyServer.replacingZeroPort("tcp://127.0.0.1:0", with: 4242) == "tcp://127.0.0.1:4242")
        #expect(NNGReplyServer.replacingZeroPort("tcp://[::1]:0", with: 7) == "tcp://[::1]:7")
        #expect(NNGReplyServer.replacingZeroPort("tcp://127.0.0.1:7450", with: 7) == "tcp://127.0.0.1:7450")
        #expect(NNGReplyServer.replacingZeroPort("ipc:///tmp/x:0", with: 7) == "ipc:///tmp/x:0")
    }
}
