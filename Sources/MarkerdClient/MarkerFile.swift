import Foundation
import MarkerdAPI

/// Reads markers from files for bulk loading.
///
/// - CSV: a header line, then `id,lat,lon[,z_index][,more...]`. The columns named `id`, `lat`
///   (or `latitude`), `lon` (or `lng`, `longitude`) and optionally `z_index` are used; every
///   other column becomes an attribute (an empty field: none; column names must be distinct).
///   Fields may not contain commas or quotes.
/// - GeoJSON: a FeatureCollection of Point features. The id is the feature's `id` or, with
///   `idProperty`, that property; every other scalar property becomes an attribute (as text).
///   A numeric `z_index` property sets the z index; a JSON boolean `visible`, `clickable` or
///   `draggable` property sets that flag (a string one stays an attribute). This is the format
///   `geoJSONFeature` writes, so an export loads back as the same markers.
///
/// The markers come without attributes; their attributes come as columns beside them (row `i`
/// is `markers[i]`'s), which `BulkLoader.load(_:attributes:into:)` sends without building a
/// dictionary per marker. (A GeoJSON file whose features mostly have property keys of their own
/// gives no columns: each marker carries its attributes.)
public enum MarkerFile {
    public struct ReadError: Error, CustomStringConvertible {
        public var description: String
    }

    /// A file's markers and, as columns, their attributes.
    public struct Contents: Sendable {
        public var markers: [V1.Marker]
        public var attributes: AttributeColumns
    }

    /// Reads the file by extension (.csv, .geojson/.json).
    public static func read(path: String, idProperty: String? = nil) throws(ReadError) -> Contents {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ReadError(description: "cannot read \(path)")
        }
        let lower = path.lowercased()
        if lower.hasSuffix(".csv") { return try csv(data, name: path) }
        if lower.hasSuffix(".geojson") || lower.hasSuffix(".json") { return try geoJSON(data, name: path, idProperty: idProperty) }
        throw ReadError(description: "\(path): unknown file type (use .csv, .geojson or .json)")
    }

    public static func csv(_ data: Data, name: String = "csv") throws(ReadError) -> Contents {
        let bytes = [UInt8](data)
        var lines: [ArraySlice<UInt8>] = []
        lines.reserveCapacity(bytes.count / 40)
        var start = 0
        for i in 0..<bytes.count where bytes[i] == UInt8(ascii: "\n") {
            var end = i
            if end > start && bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            if end > start { lines.append(bytes[start..<end]) }
            start = i + 1
        }
        if start < bytes.count { lines.append(bytes[start..<bytes.count]) }
        guard let headerLine = lines.first else { throw ReadError(description: "\(name): empty file") }
        let header = split(headerLine).map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased() }
        func column(_ names: String...) -> Int? { names.lazy.compactMap { header.firstIndex(of: $0) }.first }
        guard let idCol = column("id"), let latCol = column("lat", "latitude"),
              let lonCol = column("lon", "lng", "longitude") else {
            throw ReadError(description: "\(name): the header needs id, lat and lon columns, found \(header.joined(separator: ","))")
        }
        let zCol = column("z_index", "zindex")
        let used = Set([idCol, latCol, lonCol] + (zCol.map { [$0] } ?? []))
        let attributeColumns = header.indices.filter { !used.contains($0) }
        let keys = attributeColumns.map { header[$0] }
        guard Set(keys).count == keys.count else {
            throw ReadError(description: "\(name): the header names a column twice: \(header.joined(separator: ","))")
        }
        var attributes = AttributeColumns(keys: keys)
        var markers: [V1.Marker] = []
        markers.reserveCapacity(lines.count - 1)
        for (n, line) in lines.dropFirst().enumerated() {
            let fields = split(line)
            guard fields.count > max(idCol, latCol, lonCol) else {
                throw ReadError(description: "\(name):\(n + 2): expected at least \(max(idCol, latCol, lonCol) + 1) fields")
            }
            guard let lat = Double(String(decoding: fields[latCol], as: UTF8.self)),
                  let lon = Double(String(decoding: fields[lonCol], as: UTF8.self)) else {
                throw ReadError(description: "\(name):\(n + 2): lat/lon are not numbers")
            }
            var m = V1.Marker()
            m.id = String(decoding: fields[idCol], as: UTF8.self)
            m.position = V1.LatLng(latitude: lat, longitude: lon)
            if let zCol, zCol < fields.count, let z = Int32(String(decoding: fields[zCol], as: UTF8.self)) { m.zIndex = z }
            for i in attributeColumns {
                if i < fields.count && !fields[i].isEmpty { attributes.append(utf8: fields[i]) } else { attributes.appendAbsent() }
            }
            markers.append(m)
        }
        return Contents(markers: markers, attributes: attributes)
    }

    private static func split(_ line: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        line.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
    }

    public static func geoJSON(_ data: Data, name: String = "geojson", idProperty: String? = nil) throws(ReadError) -> Contents {
        let root: Any
        do { root = try JSONSerialization.jsonObject(with: data) } catch {
            throw ReadError(description: "\(name): not JSON: \(error.localizedDescription)")
        }
        guard let collection = root as? [String: Any], let features = collection["features"] as? [[String: Any]] else {
            throw ReadError(description: "\(name): expected a GeoJSON FeatureCollection")
        }
        var markers: [V1.Marker] = []
        markers.reserveCapacity(features.count)
        var properties: [[String: String]] = []
        properties.reserveCapacity(features.count)
        for (n, feature) in features.enumerated() {
            guard let geometry = feature["geometry"] as? [String: Any], geometry["type"] as? String == "Point",
                  let coords = geometry["coordinates"] as? [Any], coords.count >= 2,
                  let lon = (coords[0] as? NSNumber)?.doubleValue, let lat = (coords[1] as? NSNumber)?.doubleValue else {
                throw ReadError(description: "\(name): feature \(n) is not a Point with coordinates")
            }
            let featureProperties = feature["properties"] as? [String: Any] ?? [:]
            let rawID: Any? = idProperty.map { featureProperties[$0] as Any } ?? feature["id"]
            guard let rawID, let id = text(rawID) else {
                throw ReadError(description: "\(name): feature \(n) has no \(idProperty.map { "property \"\($0)\"" } ?? "id")")
            }
            var m = V1.Marker()
            m.id = id
            m.position = V1.LatLng(latitude: lat, longitude: lon)
            var attributes: [String: String] = [:]
            for (key, value) in featureProperties where key != idProperty {
                if key == "z_index", let z = (value as? NSNumber)?.int32Value { m.zIndex = z; continue }
                if let flag = boolean(value) {
                    switch key {
                    case "visible": m.visible = flag; continue
                    case "clickable": m.clickable = flag; continue
                    case "draggable": m.draggable = flag; continue
                    default: break
                    }
                }
                if let t = text(value) { attributes[key] = t }
            }
            markers.append(m)
            properties.append(attributes)
        }
        // One column per property key any feature has (in order of first appearance), unless
        // most cells would be absent (features with keys of their own, as OSM tags come): then
        // the columns would take features x keys cells, so each marker keeps its own attributes.
        var keys: [String] = [], seen: Set<String> = []
        for p in properties { for k in p.keys where seen.insert(k).inserted { keys.append(k) } }
        let present = properties.reduce(0) { $0 + $1.count }
        guard keys.count * properties.count <= 2 * present else {
            for i in markers.indices { markers[i].attributes = properties[i] }
            return Contents(markers: markers, attributes: AttributeColumns(keys: []))
        }
        var attributes = AttributeColumns(keys: keys)
        for p in properties { for k in keys { attributes.append(p[k]) } }
        return Contents(markers: markers, attributes: attributes)
    }

    /// A JSON `true` or `false` (JSONSerialization gives them as NSNumbers of type "c"), else nil.
    private static func boolean(_ value: Any) -> Bool? {
        guard let n = value as? NSNumber, String(cString: n.objCType) == "c" else { return nil }
        return n.boolValue
    }

    /// One GeoJSON Feature (compact JSON, no newline) of `marker`, as `geoJSON` reads it back:
    /// the feature's `id`; a Point [longitude, latitude]; the attributes as string properties,
    /// `z_index` when not 0, and `visible`, `clickable`, `draggable` as booleans when not their
    /// defaults. Not written: icons, anchors, labels, animations, `extra`.
    public static func geoJSONFeature(_ marker: V1.Marker) -> String {
        var properties: [String: Any] = marker.attributes
        if marker.zIndex != 0 { properties["z_index"] = Int(marker.zIndex) }
        if marker.visible == false { properties["visible"] = false }
        if marker.clickable == false { properties["clickable"] = false }
        if marker.draggable == true { properties["draggable"] = true }
        let feature: [String: Any] = [
            "type": "Feature", "id": marker.id, "properties": properties,
            "geometry": ["type": "Point", "coordinates": [marker.position?.longitude ?? 0, marker.position?.latitude ?? 0]],
        ]
        // Only strings, numbers, booleans, arrays and dictionaries: serialization cannot fail.
        let data = (try? JSONSerialization.data(withJSONObject: feature, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    private static func text(_ value: Any) -> String? {
        switch value {
        case let s as String: return s
        case let n as NSNumber: return n.stringValue
        default: return nil
        }
    }
}
