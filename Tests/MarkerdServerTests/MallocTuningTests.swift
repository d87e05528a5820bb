import MarkerdServer
import Testing

/// markerd's allocator settings (`MallocTuning`): glibc accepts the defaults (`mallopt` returns 1
/// for both), so markerd runs with them.
@Suite struct MallocTuningTests {
    @Test func defaultsAreAccepted() {
        #expect(MallocTuning.defaultMmapThresholdBytes > 1 << 20, "a doubled 1 MiB array stays in the arenas")
        #expect(MallocTuning.defaultTrimThresholdBytes >= 16 << 20, "a dense tile's buffers stay mapped")
        #if os(Linux)
        #expect(MallocTuning.apply(), "glibc refused the defaults")
        #endif
    }
}
