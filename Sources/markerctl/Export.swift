import Foundation
import MarkerdAPI
import MarkerdClient

/// `markerctl export`: a layer's markers as a GeoJSON FeatureCollection (`MarkerFile.geoJSONFeature`
/// per marker), written page by page to a temporary file beside `path` that replaces `path` once
/// complete (a failed export leaves no partial file).
enum Export {
    struct Refused: Error, CustomStringConvertible { var description: String }

    /// Writes every marker of `layerID` (static, live and hidden, whatever the layer's mode),
    /// paged with ListMarkers, `pageSize` per page; returns how many. A marker that stays in the
    /// layer during the export is written exactly once. Throws `Refused` for a file that cannot
    /// be created or renamed, the first failed call's `ClientError`, or a file error.
    static func run(_ client: MarkerdClient, layerID: String, path: String, pageSize: Int) throws -> Int {
        let stats = try client.layerStats(layerID)
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
        let progress = ProgressLine("exporting \(layerID)", unit: "markers", total: Int(stats.markerCount))
        try client.forEachMarkerPage(layerID, pageSize: pageSize) { markers in
            guard !markers.isEmpty else { return }
            let features = markers.map(MarkerFile.geoJSONFeature).joined(separator: ",\n")
            try file.write(contentsOf: Data(((written > 0 ? ",\n" : "") + features).utf8))
            written += markers.count
            progress.update(written)
        }
        progress.finish()
        try file.write(contentsOf: Data("\n]}\n".utf8))
        try file.close()
        guard rename(temporary, path) == 0 else { throw Refused(description: "cannot rename \(temporary) to \(path): \(String(cString: strerror(errno)))") }
        complete = true
        return written
    }
}
