import Foundation
import MarkerdRender

/// How fast this host runs today against the machine issue 4's targets were set on, by the
/// issue's own yardstick: "Measured on this machine for a sparse 256 px tile with 50 icons
/// (libpng 1.6.39): zlib level 6 without filters 1.25 ms and 5.3 KB; with libpng's default
/// adaptive filters 2.9 ms and 10.7 KB; level 1 without filters 0.48 ms and 8.9 KB."
///
/// Since PNG encoding went through libdeflate (issue 37), the same levels without filters of a
/// comparable tile are timed with libdeflate, and the adaptive-filter setting is gone: the
/// factor now mixes the host's speed with libdeflate's against zlib's (a few tens of per cent
/// faster), so compare it only between runs of the same build.
///
/// The encodings of a comparable tile
/// (50 icons of 20 px, a colour gradient with an antialiased round edge, at seeded positions;
/// its PNG sizes are printed next to the issue's), timed here, median wall clock of `runs`
/// rounds with the settings interleaved. `factor` is the geometric mean of the
/// ratios (today / the issue's): wall-clock figures divided by it are what they would have been
/// on the issue's machine, as far as this one yardstick tells. Indicative only: deflating a
/// sparse tile is compute-bound in cache, a dense tile's render also reads megabytes.
struct HostReference {
    /// The issue's figures: (setting, encode options, ms, bytes).
    static let issueFigures: [(name: String, options: PNGEncodeOptions, ms: Double, bytes: Double)] = [
        ("level 6, no filter", PNGEncodeOptions(level: 6), 1.25, 5.3 * 1000),
        ("level 1, no filter", PNGEncodeOptions(level: 1), 0.48, 8.9 * 1000),
    ]
    static let runs = 41

    /// Median ms per setting, in `issueFigures`' order.
    let medians: [Double]
    /// PNG bytes per setting.
    let bytes: [Int]
    /// Geometric mean of `medians[i] / issueFigures[i].ms`.
    let factor: Double

    /// The reference tile: 50 icons on a transparent 256 px canvas.
    static let canvas: TileCanvas = {
        let side = 20
        var pixels = [UInt8](repeating: 0, count: side * side * 4)
        for row in 0..<side {
            for column in 0..<side {
                let dx = Double(column) - 9.5, dy = Double(row) - 9.5
                // Alpha: the disc's coverage of the pixel, about a pixel wide at the rim.
                let alpha = max(0, min(1, 10 - (dx * dx + dy * dy).squareRoot()))
                let colour = [60 + 9 * column, 230 - 8 * row, 100 + (3 * row * column) % 120]
                let i = 4 * (row * side + column)
                for c in 0..<3 { pixels[i + c] = UInt8((Double(colour[c]) * alpha).rounded()) }  // premultiplied
                pixels[i + 3] = UInt8((255 * alpha).rounded())
            }
        }
        let icon = RGBAImage(width: side, height: side, pixels: pixels)
        var canvas = TileCanvas(width: 256, height: 256)
        var rng = SeededRNG(seed: 4)
        for _ in 0..<50 { canvas.draw(sprite: icon, atX: rng.index(256 + side) - side, y: rng.index(256 + side) - side) }
        return canvas
    }()

    /// Times the encodings now (about 0.1 s).
    static func measure() -> HostReference {
        var times = [[Double]](repeating: [], count: issueFigures.count)
        var bytes = [Int](repeating: 0, count: issueFigures.count)
        for _ in 0..<runs {
            for (k, setting) in issueFigures.enumerated() {
                let (png, elapsed) = timed { canvas.encodePNG(options: setting.options) }
                times[k].append(elapsed.micros / 1000)
                bytes[k] = png.count
            }
        }
        let medians = times.map { $0.sorted()[$0.count / 2] }
        var logSum = 0.0
        for (k, setting) in issueFigures.enumerated() { logSum += log(medians[k] / setting.ms) }
        return HostReference(medians: medians, bytes: bytes, factor: exp(logSum / Double(issueFigures.count)))
    }

    /// "p99 / factor" for a note: the figure scaled to the issue's machine.
    func scaled(_ micros: Double) -> String {
        String(format: "%.2f ms at the issue machine's speed (÷ %.2f, HostReference just before)", micros / 1000 / factor, factor)
    }

    /// The result table's row for this measurement.
    func row(when: String) -> Row {
        let figures = Self.issueFigures
        return Row(size: "-",
                   measure: "host reference \(when): the issue's own PNG yardstick, a sparse 256 px tile of 50 icons, libpng \(figures.map(\.name).joined(separator: " / "))",
                   value: medians.map { Table.fixed($0, 2) }.joined(separator: " / "), unit: "ms median",
                   ratio: String(format: "%.2fx", factor),
                   note: "against the issue's \(figures.map { Table.fixed($0.ms, 2) }.joined(separator: " / ")) ms on the machine its targets were set on (per setting "
                       + zip(medians, figures).map { String(format: "%.2fx", $0 / $1.ms) }.joined(separator: ", ")
                       + "; Ratio: their geometric mean, the host factor); PNG \(bytes.map { Table.bytes($0) }.joined(separator: " / ")) against the issue's "
                       + figures.map { Table.fixed($0.bytes / 1000, 1) + " KB" }.joined(separator: " / ")
                       + "; median of \(Self.runs) interleaved rounds; a wall-clock figure divided by the factor is indicative of the issue's machine (deflating a sparse tile runs in cache, a dense render also reads megabytes); loadavg \(Table.fixed(Machine.loadAverage ?? 0, 1))")
    }
}
