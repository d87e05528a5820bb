import Foundation
import MarkerdCore
import MarkerdRender
import Testing

@Suite struct ClusterBubbleTests {
    @Test func abbreviatesLikeSupercluster() {
        let cases: [(Int, String)] = [(0, "0"), (7, "7"), (999, "999"), (1000, "1k"), (1049, "1k"), (1050, "1.1k"),
                                      (1234, "1.2k"), (9949, "9.9k"), (9950, "10k"), (10_000, "10k"), (12_499, "12k"),
                                      (12_500, "13k"), (1_234_567, "1235k")]
        for (count, text) in cases { #expect(ClusterBubble.abbreviated(count) == text, "\(count)") }
    }

    @Test func bandsAndSizes() throws {
        #expect([2, 99, 100, 999, 1000].map(ClusterBubble.band(count:)) == [0, 0, 1, 1, 2])
        for (count, side) in [(5, 30), (500, 40), (5000, 50)] {
            for d in 1...3 {
                let img = try ClusterBubble(count: count).render(density: d)
                #expect(img.width == side * d && img.height == side * d)
            }
        }
    }

    @Test func cachedPerLabelBandAndDensity() throws {
        let cache = ClusterBubbleCache()
        let a = try cache.sprite(count: 1234, density: 1)
        _ = try cache.sprite(count: 1240, density: 1)  // also "1.2k", same band
        #expect(cache.drawCount == 1)
        _ = try cache.sprite(count: 1234, density: 2)
        _ = try cache.sprite(count: 1300, density: 1)
        #expect(cache.drawCount == 3)
        #expect(a.anchorX == 25 && a.anchorY == 25)
    }

    /// `cluster_bubble_1.2k_density2.png`: the bubble of 1,234 markers at density 2.
    @Test func golden() throws {
        let image = try ClusterBubble(count: 1234).render(density: 2)
        try Golden.check("cluster_bubble_1.2k_density2.png", PNGCodec.encode(image))
    }
}
