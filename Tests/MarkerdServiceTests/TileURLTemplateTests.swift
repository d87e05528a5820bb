import Foundation
import MarkerdTestSupport
import Testing
@testable import MarkerdService

/// `MarkerService.replacing` (the tile URL template filled on UTF-8 bytes) against Foundation's
/// `replacingOccurrences` on seeded random templates: placeholders anywhere, repeated, cut,
/// next to each other and among non-ASCII characters.
@Suite struct TileURLTemplateTests {
    @Test func replacingMatchesFoundation() {
        let seed = testSeed()
        var rng = SplitMix64(seed: seed)
        let pieces = ["{layer}", "{size}", "{z}", "{", "}", "{lay", "er}", "/", "tiles", "é", "地图", "{{layer}}", "x"]
        let values = ["", "l", "cities-2", "ü", "{size}", "a{layer}b"]
        for round in 0..<2_000 {
            let template = (0..<Int(rng.next() % 8)).map { _ in pieces[Int(rng.next() % UInt64(pieces.count))] }.joined()
            let target = ["{layer}", "{size}"][Int(rng.next() % 2)]
            let value = values[Int(rng.next() % UInt64(values.count))]
            #expect(MarkerService.replacing(target, with: value, in: template) == template.replacingOccurrences(of: target, with: value),
                    "SEED=\(seed) round \(round): \"\(template)\" \(target) -> \"\(value)\"")
        }
    }
}
