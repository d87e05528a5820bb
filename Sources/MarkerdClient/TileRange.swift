import Foundation

/// The XYZ (Web Mercator, "slippy map") tiles that cover a bounding box over a range of zoom
/// levels: what `markerctl tiles seed` requests.
public struct TileRange: Sendable, Equatable {
    /// Why a range was refused; the description names the argument and the value.
    public struct InvalidArgument: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// The Web Mercator latitude limit, degrees: the bbox's latitudes are clamped to it.
    public static let maxLatitude = 85.05112877980659

    /// Degrees. west > east crosses the antimeridian (e.g. 170,-50,-170,-30).
    public let west: Double, south: Double, east: Double, north: Double
    /// Zoom levels, each 0...22.
    public let zooms: ClosedRange<Int>

    /// Validates every value: finite; longitudes within -180...180; latitudes within -90...90;
    /// south < north; west != east; zooms within 0...22.
    public init(west: Double, south: Double, east: Double, north: Double, zooms: ClosedRange<Int>) throws(InvalidArgument) {
        for (name, v, limit) in [("west", west, 180.0), ("south", south, 90), ("east", east, 180), ("north", north, 90)] {
            guard v.isFinite, abs(v) <= limit else {
                throw InvalidArgument(description: "bbox \(name) \(v) is not within -\(Int(limit))...\(Int(limit)) degrees")
            }
        }
        guard south < north else { throw InvalidArgument(description: "bbox south \(south) is not below north \(north)") }
        guard west != east else { throw InvalidArgument(description: "bbox west and east are both \(west): an empty box") }
        guard zooms.lowerBound >= 0, zooms.upperBound <= 22 else {
            throw InvalidArgument(description: "zoom \(zooms.lowerBound)-\(zooms.upperBound) is not within 0-22")
        }
        (self.west, self.south, self.east, self.north, self.zooms) = (west, south, east, north, zooms)
    }

    /// Parses "WEST,SOUTH,EAST,NORTH" (degrees) and "A-B" or "A" (zoom levels); a nil bbox is the whole world.
    public init(bbox: String?, zoom: String) throws(InvalidArgument) {
        let parts = zoom.split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
        guard (1...2).contains(parts.count), let a = parts.first ?? nil, let b = parts.last ?? nil, a <= b else {
            throw InvalidArgument(description: "--zoom takes A-B (0 <= A <= B <= 22) or A, not \"\(zoom)\"")
        }
        var box = [-180, -90, 180, 90.0]
        if let bbox {
            let values = bbox.split(separator: ",", omittingEmptySubsequences: false).map { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard values.count == 4, values.allSatisfy({ $0 != nil }) else {
                throw InvalidArgument(description: "--bbox takes WEST,SOUTH,EAST,NORTH in degrees, not \"\(bbox)\"")
            }
            box = values.map { $0! }
        }
        try self.init(west: box[0], south: box[1], east: box[2], north: box[3], zooms: a...b)
    }

    /// The tile columns of zoom `z` (two ranges when the box crosses the antimeridian, merged
    /// when they meet) and its rows.
    public func tiles(zoom z: Int) -> (columns: [ClosedRange<Int>], rows: ClosedRange<Int>) {
        let n = 1 << z
        func column(_ lon: Double) -> Int { min(n - 1, max(0, Int(((lon + 180) / 360 * Double(n)).rounded(.down)))) }
        func row(_ lat: Double) -> Int {
            let phi = min(Self.maxLatitude, max(-Self.maxLatitude, lat)) * .pi / 180
            let y = (1 - log(tan(phi) + 1 / cos(phi)) / .pi) / 2 * Double(n)
            return min(n - 1, max(0, Int(y.rounded(.down))))
        }
        let rows = row(north)...row(south)
        let w = column(west), e = column(east)
        if west < east { return ([w...e], rows) }
        // Across the antimeridian: west...180 and -180...east.
        return (w <= e + 1 ? [0...(n - 1)] : [0...e, w...(n - 1)], rows)
    }

    /// Tiles in the whole range.
    public var count: Int {
        zooms.reduce(0) { total, z in
            let t = tiles(zoom: z)
            return total + t.columns.reduce(0) { $0 + $1.count } * t.rows.count
        }
    }

    /// Every tile of the range as (z, x, y): by zoom, then row, then column.
    public func allTiles() -> [(z: Int, x: Int, y: Int)] {
        var out: [(z: Int, x: Int, y: Int)] = []
        out.reserveCapacity(count)
        for z in zooms {
            let t = tiles(zoom: z)
            for y in t.rows { for c in t.columns { for x in c { out.append((z, x, y)) } } }
        }
        return out
    }
}
