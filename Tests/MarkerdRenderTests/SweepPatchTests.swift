import MarkerdCore
@testable import MarkerdRender
import MarkerdTestSupport
import Testing

/// `TileRenderer.renderPatched`: an earlier raster with the changed markers' windows rendered
/// again is byte for byte the raster rendered from scratch (and within 1 per channel of brute
/// force) after random changes (moves, new markers, removals, icon, z-index and visibility
/// changes, across the antimeridian), and a patch that leaves out a change's footprints does not
/// match (the check can fail). Any window of a raster rendered on its own is the raster's crop.
@Suite struct SweepPatchTests {
    let now: Int64 = 1_700_000_000_000

    /// A dense layer for the sweep: default pins spread evenly over a region (many per device
    /// pixel at z0), a few tight stacks, a faint second pin style and opaque icons at a second
    /// z-index interleaved, some exact duplicates; near the antimeridian when `edge`.
    static func denseLayer(_ rng: inout SplitMix64, count: Int, edge: Bool, now: Int64) throws -> MarkerLayer {
        let faint = IconStyle(source: .pin(PinStyle(fillColor: 0x60_3070C0, scale: 0.75)))
        let square = IconStyle(source: .image(id: "square", width: 12, height: 12))
        let center = LatLng(latitude: (rng.unit() - 0.5) * 100, longitude: edge ? 179 : (rng.unit() - 0.5) * 300)
        var records = SweepTests.cluster("u", count, center: center, spread: 40, style: .defaultPin, zIndex: 0, &rng)
        for c in 0..<3 {
            let spot = LatLng(latitude: center.latitude + (rng.unit() - 0.5) * 30, longitude: center.longitude + (rng.unit() - 0.5) * 30)
            records += SweepTests.cluster("c\(c)-", count / 10, center: spot, spread: 0.05, style: .defaultPin, zIndex: 0, &rng)
        }
        for i in records.indices {
            let r = rng.next() % 16
            if r == 0 { records[i].style = faint } else if r == 1 { records[i].style = square; records[i].zIndex = 1 }
            if i % 9 == 8 { records[i].position = records[i - 1].position }
            if records[i].position.longitude > 180 { records[i].position.longitude -= 360 }
        }
        var layer = try MarkerLayer()
        _ = try layer.upsert(records, now: now)
        return layer
    }

    @Test func patchedRastersMatchBruteForce() throws {
        var rng = SplitMix64(seed: testSeed())
        let r = TileRenderer(sweepAbove: 0, images: { id in id == "square" ? opaqueSquare : nil })
        let square = IconStyle(source: .image(id: "square", width: 12, height: 12))
        var worst = 0, patches = 0, declined = 0
        for round in 0..<3 {
            var layer = try Self.denseLayer(&rng, count: 6_000 + Int(rng.next() % 4000), edge: round == 2, now: now)
            var ids: [String] = []
            var from = 0
            while true {
                let (ms, next) = layer.markers(fromSlot: from, limit: 10_000)
                ids += ms.map(\.id)
                guard let next else { break }
                from = next
            }
            let p = LatLng(latitude: (rng.unit() - 0.5) * 100, longitude: round == 2 ? 179.9 : (rng.unit() - 0.5) * 300)
            let views = [RasterView.tile(TileID(z: 0, x: 0, y: 0)!, tileSize: 256, density: 1),
                         RasterView.tile(TileID.containing(p, zoom: 1 + Int(rng.next() % 2)), tileSize: 512, density: 1 + Int(rng.next() % 2))]
            var bases = try views.map { try r.render(layer, view: $0, now: now).canvas }
            for step in 0..<6 {
                // 1-4 changes of random kinds.
                var changed: [IconFootprint] = []
                for _ in 0..<(1 + rng.next() % 4) {
                    let i = Int(rng.next() % UInt64(ids.count)), id = ids[i]
                    if let f = layer.staticFootprint(id: id, now: now) { changed.append(f) }
                    let spot = LatLng(latitude: p.latitude + (rng.unit() - 0.5) * 20, longitude: p.longitude + (rng.unit() - 0.5) * 20)
                    let to = LatLng(latitude: spot.latitude, longitude: spot.longitude > 180 ? spot.longitude - 360 : spot.longitude)
                    switch rng.next() % 5 {
                    case 0: try layer.move(id: id, to: to)
                    case 1:
                        _ = layer.remove(ids: [id])
                        ids.swapAt(i, ids.count - 1); ids.removeLast()
                    case 2:
                        let new = "new-\(round)-\(step)-\(rng.next())"
                        _ = try layer.upsert([MarkerRecord(id: new, position: to, style: square, zIndex: 2)], now: now)
                        ids.append(new)
                        if let f = layer.staticFootprint(id: new, now: now) { changed.append(f) }
                    case 3:
                        var m = layer.marker(id: id)!
                        m.style = rng.next() % 2 == 0 ? square : .defaultPin
                        m.zIndex = Int32(rng.next() % 3)
                        _ = try layer.upsert([m], now: now)
                    default:
                        var m = layer.marker(id: id)!
                        m.visible.toggle()
                        _ = try layer.upsert([m], now: now)
                    }
                    if let f = layer.staticFootprint(id: id, now: now) { changed.append(f) }
                }
                for (v, view) in views.enumerated() {
                    let slow = try bruteForce(layer, view, now: now, sprites: r.sprites)
                    guard let patched = try r.renderPatched(layer, view: view, base: bases[v], changed: changed, now: now) else {
                        declined += 1
                        bases[v] = try r.render(layer, view: view, now: now).canvas
                        continue
                    }
                    let diff = maxDifference(patched.pixels, slow.pixels)
                    #expect(diff <= 1, "round \(round) step \(step) \(view): patched raster differs from brute force by \(diff)")
                    // Byte for byte the raster rendered from scratch (what makes ETags strong).
                    let fresh = try r.render(layer, view: view, now: now).canvas
                    #expect(byteMismatch(patched.pixels, fresh.pixels) == nil, "round \(round) step \(step) \(view): patched raster is not the fresh one")
                    #expect(patched.isEmpty == slow.isEmpty)
                    worst = max(worst, diff); patches += 1
                    bases[v] = patched
                }
            }
        }
        // The check can fail: a new topmost marker patched without its footprint is missing.
        var layer = try Self.denseLayer(&rng, count: 3_000, edge: false, now: now)
        let view = RasterView.tile(TileID(z: 0, x: 0, y: 0)!, tileSize: 256, density: 1)
        let base = try r.render(layer, view: view, now: now).canvas
        // Put it where it changes the picture: on a pixel already topped by the same opaque square
        // it would change nothing, and the check would have nothing to catch (CI hit that once).
        var slow = base, tries = 0
        repeat {
            let spot = tries == 0 ? LatLng(latitude: 10, longitude: 20)
                : LatLng(latitude: (rng.unit() - 0.5) * 160, longitude: (rng.unit() - 0.5) * 340)
            _ = try layer.upsert([MarkerRecord(id: "on-top", position: spot, style: square, zIndex: 9)], now: now)
            slow = try bruteForce(layer, view, now: now, sprites: r.sprites)
            tries += 1
        } while maxDifference(base.pixels, slow.pixels) <= 1 && tries < 20
        try #require(maxDifference(base.pixels, slow.pixels) > 1, "no spot found where a new square changes the z0 tile")
        let blind = try #require(try r.renderPatched(layer, view: view, base: base, changed: [], now: now))
        #expect(maxDifference(blind.pixels, slow.pixels) > 1, "a patch without the change's footprint matched brute force")
        let seen = try #require(try r.renderPatched(layer, view: view, base: base, changed: [layer.staticFootprint(id: "on-top", now: now)!], now: now))
        #expect(maxDifference(seen.pixels, slow.pixels) <= 1)
        #expect(patches > 20, "only \(patches) patched renders (\(declined) declined)")
        print("sweep patches: \(patches) patched rasters, \(declined) declined, worst difference \(worst) from brute force")
    }

    /// A pixel's value depends only on the draws that cover it (each draw paints exactly the pixels
    /// later draws have not settled): random windows of dense rasters, rendered on their own with
    /// and without the node sweep, are byte for byte the crop of the whole raster (itself rendered
    /// with the sweep and without), also where draws straddle the window's edges.
    @Test(arguments: [0, Int.max])
    func windowsAreTheRastersCrop(sweepAbove: Int) throws {
        var rng = SplitMix64(seed: testSeed())
        let r = TileRenderer(sweepAbove: sweepAbove, images: { id in id == "square" ? opaqueSquare : nil })
        let other = TileRenderer(sweepAbove: sweepAbove == 0 ? .max : 0, images: { id in id == "square" ? opaqueSquare : nil })
        var windows = 0
        for round in 0..<3 {
            let layer = try Self.denseLayer(&rng, count: 5_000 + Int(rng.next() % 4000), edge: round == 2, now: now)
            let p = LatLng(latitude: (rng.unit() - 0.5) * 100, longitude: round == 2 ? 179.9 : (rng.unit() - 0.5) * 300)
            let views = [RasterView.tile(TileID(z: 0, x: 0, y: 0)!, tileSize: 256, density: 1),
                         RasterView.tile(TileID.containing(p, zoom: 1 + Int(rng.next() % 3)), tileSize: 512, density: 1 + Int(rng.next() % 2))]
            for view in views {
                let whole = try r.render(layer, view: view, now: now).canvas
                let byOther = try other.render(layer, view: view, now: now).canvas
                #expect(byteMismatch(whole.pixels, byOther.pixels) == nil, "round \(round) \(view): the sweep and the plain path differ")
                for _ in 0..<8 {
                    var sub = view
                    let x = Int(rng.next() % UInt64(view.width - 1)), y = Int(rng.next() % UInt64(view.height - 1))
                    sub.originX += Int64(x); sub.originY += Int64(y)
                    sub.width = 1 + Int(rng.next() % UInt64(min(96, view.width - x)))
                    sub.height = 1 + Int(rng.next() % UInt64(min(96, view.height - y)))
                    let window = try r.render(layer, view: sub, now: now).canvas
                    var crop: [UInt8] = []
                    for row in y..<(y + sub.height) {
                        crop += whole.pixels[((row * view.width + x) * 4)..<((row * view.width + x + sub.width) * 4)]
                    }
                    #expect(byteMismatch(window.pixels, crop) == nil, "round \(round) \(view) window \(x),\(y) \(sub.width)x\(sub.height)")
                    windows += 1
                }
            }
        }
        #expect(windows == 48)
    }

    /// `patchWindows` merges windows only where that covers no more pixels: against each
    /// footprint's own windows (the oracle), the merged windows lie inside the raster, cover
    /// every pixel of them, and cover no more pixels in all than they do. A marker moved 3 px
    /// gets one window, the bounding box of its two; two markers far apart keep two.
    @Test func patchWindowsCoverEveryFootprintAndMergeOverlaps() {
        var rng = SplitMix64(seed: testSeed())
        let pin = IconExtents(left: 24, right: 24, up: 48, down: 0), square = IconExtents(left: 6, right: 6, up: 6, down: 6)
        var mergedAway = 0
        for _ in 0..<300 {
            let view = RasterView.tile(TileID(z: Int(rng.next() % 2), x: 0, y: 0)!, tileSize: rng.next() % 2 == 0 ? 256 : 512,
                                       density: 1 + Int(rng.next() % 3))
            // Footprints around a few spots (a spread of 2^27 world units is 8 px at z0, density 1), some anywhere.
            let spots = (0..<(1 + rng.next() % 3)).map { _ in WorldPoint(x: UInt32(truncatingIfNeeded: rng.next()), y: UInt32(truncatingIfNeeded: rng.next())) }
            var footprints: [IconFootprint] = []
            for _ in 0..<(1 + rng.next() % 16) {
                let p: WorldPoint
                if rng.next() % 4 == 0 {
                    p = WorldPoint(x: UInt32(truncatingIfNeeded: rng.next()), y: UInt32(truncatingIfNeeded: rng.next()))
                } else {
                    let c = spots[Int(rng.next() % UInt64(spots.count))]
                    p = WorldPoint(x: c.x &+ UInt32(truncatingIfNeeded: rng.next() % (1 << 27)),
                                   y: c.y &+ UInt32(truncatingIfNeeded: rng.next() % (1 << 27)))
                }
                footprints.append(IconFootprint(position: p, extents: rng.next() % 3 == 0 ? square : pin))
            }
            let merged = TileRenderer.patchWindows(footprints, view)
            let own = footprints.flatMap { TileRenderer.patchWindows([$0], view) }
            var covered = [Bool](repeating: false, count: view.width * view.height)
            for w in merged {
                #expect(w.x >= 0 && w.y >= 0 && w.width > 0 && w.height > 0 && w.x + w.width <= view.width && w.y + w.height <= view.height, "\(w) in \(view)")
                for y in w.y..<(w.y + w.height) { for x in w.x..<(w.x + w.width) { covered[y * view.width + x] = true } }
            }
            var missed = 0
            for w in own { for y in w.y..<(w.y + w.height) { for x in w.x..<(w.x + w.width) where !covered[y * view.width + x] { missed += 1 } } }
            #expect(missed == 0, "\(view): \(missed) pixels of the footprints' own windows left out")
            let area = { (ws: [TileRenderer.PixelWindow]) in ws.reduce(0) { $0 + $1.width * $1.height } }
            #expect(area(merged) <= area(own), "\(view): merged windows cover \(area(merged)) px against \(area(own))")
            mergedAway += own.count - merged.count
        }
        #expect(mergedAway > 0, "no window merged in 300 cases")
        // A marker moved 3 px right at z0, density 1 (2^24 world units a pixel), then one far away.
        let view = RasterView.tile(TileID(z: 0, x: 0, y: 0)!, tileSize: 256, density: 1)
        let a = IconFootprint(position: WorldPoint(x: 100 << 24, y: 120 << 24), extents: pin)
        let b = IconFootprint(position: WorldPoint(x: 103 << 24, y: 120 << 24), extents: pin)
        let one = TileRenderer.patchWindows([a], view)[0]
        let moved = TileRenderer.patchWindows([a, b], view)
        #expect(moved == [TileRenderer.PixelWindow(x: one.x, y: one.y, width: one.width + 3, height: one.height)])
        let far = IconFootprint(position: WorldPoint(x: 200 << 24, y: 120 << 24), extents: pin)
        #expect(TileRenderer.patchWindows([a, far], view).count == 2)
    }
}
