import Foundation
import MarkerdAPI
import MarkerdClient

/// `markerctl export`: a layer's markers as a GeoJSON FeatureCollection (`MarkerFile.geoJSONFeature`
/// per marker), written page by page to a temporary file beside `path` that replaces `path` once
/// complete (a failed export leaves no partial file).
enum Export {
    struct Refused: Error, CustomStringConvertible { var description: String }

    /// Writes `layerID`'s markers to `path`; returns how many. Refuses a layer QueryViewport
    /// cannot list whole: with hidden markers, or TILED with static markers (those come as tiles
    /// only). Throws `Refused`, the first failed call's `ClientError`, or a file error.
    static func run(_ client: MarkerdClient, layerID: String, path: String, pageSize: Int) throws -> Int {
        let stats = try client.layerStats(layerID)
        if stats.hiddenMarkerCount > 0 {
            throw Refused(description: "layer \(layerID) has \(stats.hiddenMarkerCount) hidden markers, which QueryViewport does not list")
        }
        let temporary = path + ".partial-\(getpid())"
        guard FileManager.default.createFile(atPath: temporary, contents: nil), let file = FileHandle(forWritingAtPath: temporary) else {
            throw Refused(description: "cannot create \(temporary)")
        }
        var complete = false
        defer {
            try? file.close()
            if !complete { try? FileManager.default.removeItem(atPath: temporary) }
        }
        try file.write(contentsOf: Data("{\"type\":\"FeatureCollection\",\"features\":[\n".utf8))
        var written = 0
        var progress: ProgressLine?
        try client.forEachViewportPage(layerID, pageSize: pageSize) { page in
            if page.mode == .tiled && page.staticInView > 0 {
                throw Refused(description: "layer \(layerID) is TILED: QueryViewport lists its live markers only, not its " +
                              "\(page.staticInView) static ones (a layer created with --no-tiling, or with fewer markers " +
                              "than its --min-marker-count, can be exported)")
            }
            if progress == nil { progress = ProgressLine("exporting \(layerID)", unit: "markers", total: page.total) }
            guard !page.markers.isEmpty else { return }
            let features = page.markers.map(MarkerFile.geoJSONFeature).joined(separator: ",\n")
            try file.write(contentsOf: Data(((written > 0 ? ",\n" : "") + features).utf8))
            written += page.markers.count
            progress?.update(written)
        }
        progress?.finish()
        try file.write(contentsOf: Data("\n]}\n".utf8))
        try file.close()
        guard rename(temporary, path) == 0 else { throw Refused(description: "cannot rename \(temporary) to \(path): \(String(cString: strerror(errno)))") }
        complete = true
        return written
    }
}
