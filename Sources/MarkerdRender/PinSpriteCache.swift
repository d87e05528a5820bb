import MarkerdCore
private import Synchronization

/// Pin sprites by (normalized style, density), each drawn once and then shared. Thread-safe.
///
/// Concurrent requests for the same key wait for one drawing; requests for different keys draw
/// in parallel. Holds at most `capacity` sprites: inserting into a full cache evicts an
/// arbitrary entry (labels make the key space unbounded, so the cache must be bounded).
/// A failed drawing is not cached; the next request tries again.
public final class PinSpriteCache: Sendable {
    /// Sprites kept at most.
    public let capacity: Int

    private struct Key: Hashable, Sendable {
        let style: PinStyle
        let density: Float
    }

    /// One key's sprite; its own lock serialises the drawing so it happens once.
    private final class Slot: Sendable {
        let image = Mutex<RGBAImage?>(nil)
    }

    /// Guards the key -> slot map only; never held while drawing.
    private let slots = Mutex<[Key: Slot]>([:])
    private let draws = Atomic<Int>(0)

    /// `capacity` must be positive.
    public init(capacity: Int = 4096) {
        precondition(capacity > 0, "capacity must be positive")
        self.capacity = capacity
    }

    /// The sprite for `style` at `density` (device px per px; 1 for 256 px tiles, 2 for 512 px),
    /// drawn on first use. See `PinStyle.render(density:)`.
    public func sprite(for style: PinStyle, density: Float = 1) throws(RenderError) -> RGBAImage {
        let normalized = style.normalized
        let key = Key(style: normalized, density: density.isFinite && density > 0 ? density : 1)
        let slot = slots.withLock { map -> Slot in
            if let slot = map[key] { return slot }
            if map.count >= capacity, let victim = map.keys.first {
                map.removeValue(forKey: victim)
            }
            let slot = Slot()
            map[key] = slot
            return slot
        }
        return try slot.image.withLock { (image: inout RGBAImage?) throws(RenderError) -> RGBAImage in
            if let image { return image }
            let drawn = try normalized.render(density: key.density)
            draws.wrappingAdd(1, ordering: .relaxed)
            image = drawn
            return drawn
        }
    }

    /// Sprites currently cached (including ones being drawn).
    public var count: Int { slots.withLock { $0.count } }

    /// Sprites drawn since creation (cache misses that succeeded).
    public var drawCount: Int { draws.load(ordering: .relaxed) }
}
