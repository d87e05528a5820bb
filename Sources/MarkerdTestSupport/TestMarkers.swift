import MarkerdAPI

/// An API marker at (lat, lon) with every other field unset, adjusted by `configure`.
public func marker(_ id: String, _ lat: Double, _ lon: Double,
                   configure: (inout V1.Marker) -> Void = { _ in }) -> V1.Marker {
    var m = V1.Marker()
    m.id = id
    m.position = V1.LatLng(latitude: lat, longitude: lon)
    configure(&m)
    return m
}

/// An API move of marker `id` to (lat, lon).
public func move(_ id: String, _ lat: Double, _ lon: Double) -> V1.MarkerMove {
    var m = V1.MarkerMove()
    m.id = id
    m.position = V1.LatLng(latitude: lat, longitude: lon)
    return m
}
