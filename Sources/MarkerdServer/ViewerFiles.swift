import Foundation
import MarkerdService
import MarkerdTransport

/// The files the viewer page loads besides itself, served by ``TileGateway`` from two
/// directories: Leaflet (`/viewer/leaflet/{path}`, Debian's `libjs-leaflet` by default) and the
/// basemap (`/viewer/basemap/{path}`: GeoJSON that `scripts/build-basemap.py` derives from
/// Natural Earth). Nothing is loaded from elsewhere.
///
/// Only files below the directory are served: ``GatewayRoute`` accepts a path of 1-8 segments
/// of `[A-Za-z0-9_.-]`, none empty or starting with a dot (so no `..`, no hidden files, no
/// percent-escapes, no absolute paths), with an extension in ``contentTypes``; anything else is
/// 404. Symbolic links inside the directory are followed (the directory's owner decides what it
/// holds). Files are read on every request (a few hundred KB, on the gateway's handler queue).
public struct ViewerFiles: Sendable, Equatable {
    /// Where Debian's libjs-leaflet installs Leaflet (leaflet.js, leaflet.css, images/).
    public static let defaultLeafletDirectory = "/usr/share/javascript/leaflet"

    /// Leaflet's directory (`--leaflet-dir`). Default ``defaultLeafletDirectory``.
    public var leafletDirectory: String
    /// The basemap's directory (`--basemap-dir`); nil (the default): no basemap, and the viewer
    /// says so.
    public var basemapDirectory: String?

    public init(leafletDirectory: String = Self.defaultLeafletDirectory, basemapDirectory: String? = nil) {
        self.leafletDirectory = leafletDirectory
        self.basemapDirectory = basemapDirectory
    }

    /// The extensions served, and their `Content-Type`.
    public static let contentTypes: [String: String] = [
        "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8", "png": "image/png",
        "geojson": "application/geo+json", "json": "application/json", "map": "application/json",
    ]

    /// Whether `path` (relative, `/`-separated, as sent) names a file the routes may serve; see
    /// the type's documentation.
    public static func isServable(_ path: Substring) -> Bool {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...8).contains(segments.count) else { return false }
        for s in segments {
            guard let first = s.utf8.first, first != UInt8(ascii: "."), s.utf8.count <= 128,
                  s.utf8.allSatisfy({ isSafe($0) }) else { return false }
        }
        return contentType(path) != nil
    }

    /// The `Content-Type` for the extension of the path's last segment; nil when not served.
    static func contentType(_ path: Substring) -> String? {
        let name = path[(path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex)...]
        guard let dot = name.lastIndex(of: ".") else { return nil }
        return contentTypes[String(name[name.index(after: dot)...])]
    }

    private static func isSafe(_ c: UInt8) -> Bool {
        (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == UInt8(ascii: "_")
            || c == UInt8(ascii: "-") || c == UInt8(ascii: ".")
    }

    /// The file `path` (already checked by ``isServable(_:)``) below `directory` as a 200
    /// response (`Cache-Control: public, max-age=3600`). NOT_FOUND when it is missing or not a
    /// regular file, with `what` in the message (what is missing and how to get it; the message
    /// does not show the server's directory).
    static func response(directory: String, path: String, what: String) throws(RPCError) -> HTTPResponse {
        let full = (directory.hasSuffix("/") ? directory : directory + "/") + path
        var isDirectory: ObjCBool = false
        guard let type = contentType(path[...]),
              FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue,
              let data = FileManager.default.contents(atPath: full) else {
            throw .notFound("no \(path) here (\(what))")
        }
        return HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", type),
                                                   HTTPHeader("Cache-Control", "public, max-age=3600")],
                            body: Array(data))
    }
}
