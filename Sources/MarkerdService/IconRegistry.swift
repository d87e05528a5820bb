import MarkerdAPI
import MarkerdCore
import MarkerdRender
import Synchronization

/// A registered image icon: its PNG (kept for snapshots), decoded pixels (for rendering) and size.
public struct RegisteredIcon: Sendable {
    public var id: String
    public var png: [UInt8]
    public var image: RGBAImage
    /// Default anchor of markers using it; (0.5, 0.5) unless given at registration.
    public var anchor: Anchor
    public var width: Int { image.width }
    public var height: Int { image.height }
}

/// The server's image icons, shared by all layers. Icon ids are immutable: registering the same
/// id again with the same PNG and anchor is a no-op (so retries are safe); with different bytes
/// it is ALREADY_EXISTS (register a new id, e.g. "truck-v2").
final class IconRegistry: Sendable {
    /// Largest PNG accepted, bytes.
    static let maxPNGBytes = 1 << 20
    /// Largest icon, px per side.
    static let maxSide = 1024

    private let icons = Mutex<[String: RegisteredIcon]>([:])

    /// Decodes and validates `request` without registering it.
    static func validate(_ request: V1.RegisterIconRequest) throws(RPCError) -> RegisteredIcon {
        try MarkerConversion.checkName(request.iconID, what: "icon_id")
        guard !request.png.isEmpty else { throw .invalidArgument("icon \"\(request.iconID)\": png is empty", field: "png") }
        guard request.png.count <= maxPNGBytes else {
            throw .invalidArgument("icon \"\(request.iconID)\": png is \(request.png.count) bytes, more than \(maxPNGBytes)", field: "png")
        }
        let image: RGBAImage
        do {
            image = try PNGCodec.decode(request.png, maxWidth: maxSide, maxHeight: maxSide)
        } catch {
            throw .invalidArgument("icon \"\(request.iconID)\": \(error)", field: "png")
        }
        var anchor = Anchor.center
        if let a = request.anchor {
            guard a.x.isFinite, a.y.isFinite, (0...1).contains(a.x), (0...1).contains(a.y) else {
                throw .invalidArgument("icon \"\(request.iconID)\": anchor (\(a.x), \(a.y)) must be fractions within [0, 1]", field: "anchor")
            }
            anchor = Anchor(x: a.x, y: a.y)
        }
        return RegisteredIcon(id: request.iconID, png: request.png, image: image, anchor: anchor)
    }

    /// Registers `icon`; returns false if the same icon was already registered.
    /// Throws ALREADY_EXISTS if the id is taken by a different icon.
    /// `whileLocked` runs inside the registry's lock after a new icon is added (the journal
    /// append), so that any upsert that sees the icon is journaled after it.
    @discardableResult
    func register(_ icon: RegisteredIcon, whileLocked: () throws(RPCError) -> Void = {}) throws(RPCError) -> Bool {
        try icons.withLock { (all) throws(RPCError) -> Bool in
            if let old = all[icon.id] {
                guard old.png == icon.png, old.anchor == icon.anchor else {
                    throw .alreadyExists("icon \"\(icon.id)\" is already registered with a different image or anchor; icon ids are immutable, register a new id")
                }
                return false
            }
            all[icon.id] = icon
            do throws(RPCError) {
                try whileLocked()
            } catch {
                all[icon.id] = nil
                throw error
            }
            return true
        }
    }

    func icon(_ id: String) -> RegisteredIcon? { icons.withLock { $0[id] } }

    /// Size and default anchor for marker conversion.
    func geometry(_ id: String) -> (width: Int, height: Int, anchor: Anchor)? {
        icons.withLock { all in all[id].map { ($0.width, $0.height, $0.anchor) } }
    }

    func all() -> [RegisteredIcon] { icons.withLock { Array($0.values) }.sorted { $0.id < $1.id } }

    var count: Int { icons.withLock { $0.count } }
}
