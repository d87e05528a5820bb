import Foundation
import MarkerdAPI
import MarkerdClient

/// `markerctl tiles seed`: GetTile for every tile of a range, `concurrency` calls at once, so
/// that markerd's tile cache holds them.
struct TileSeeder {
    /// The most tiles one seed requests: a range with more is refused (zoom 22 alone has 2^44).
    static let maxTiles = 1_000_000

    struct Summary {
        var tiles = 0, empty = 0, bytes = 0
    }

    let client: MarkerdClient
    let layerID: String
    /// 256 or 512; 0: the layer's. density: 1, 2 or 3.
    let size: UInt32, density: UInt32
    let concurrency: Int

    /// Requests every tile of `tiles`; calls `progress` with the count done after each. Stops at
    /// the first failed call and throws its error.
    func seed(_ tiles: [(z: Int, x: Int, y: Int)], progress: @escaping @Sendable (Int) -> Void) throws(ClientError) -> Summary {
        final class State: @unchecked Sendable {
            let lock = NSLock()
            var next = 0
            var summary = Summary()
            var error: ClientError?
        }
        let state = State()
        let workers = DispatchGroup()
        let (client, layerID, size, density) = (self.client, self.layerID, self.size, self.density)
        let tiles = tiles
        for _ in 0..<min(concurrency, max(1, tiles.count)) {
            workers.enter()
            // One thread per call in flight, as BulkLoader does: each blocks in its call.
            Thread.detachNewThread {
                defer { workers.leave() }
                while true {
                    state.lock.lock()
                    guard state.error == nil, state.next < tiles.count else { state.lock.unlock(); return }
                    let t = tiles[state.next]
                    state.next += 1
                    state.lock.unlock()
                    var request = V1.GetTileRequest()
                    request.layerID = layerID
                    (request.z, request.x, request.y) = (UInt32(t.z), UInt32(t.x), UInt32(t.y))
                    (request.tileSize, request.density) = (size, density)
                    do {
                        let r: V1.GetTileResponse = try client.call("GetTile", request)
                        state.lock.lock()
                        state.summary.tiles += 1
                        state.summary.empty += r.empty ? 1 : 0
                        state.summary.bytes += r.png.count
                        let done = state.summary.tiles
                        state.lock.unlock()
                        progress(done)
                    } catch {
                        state.lock.lock()
                        if state.error == nil { state.error = (error as? ClientError) ?? .malformedReply("\(error)") }
                        state.lock.unlock()
                        return
                    }
                }
            }
        }
        workers.wait()
        if let error = state.error { throw error }
        return state.summary
    }
}
