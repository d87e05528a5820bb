/// Why decoding, encoding or drawing failed. `description` is a message fit for an API error,
/// for example "not a PNG" or "PNG too large: 2048x2048 > 1024x1024".
public struct RenderError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// The bytes do not start with the PNG signature.
        case notPNG
        /// The PNG ends before the image is complete.
        case truncated
        /// The PNG is damaged (bad CRC, bad zlib stream, invalid header fields, ...).
        case corrupt
        /// The PNG is larger than allowed: more bytes, or more pixels in either direction.
        /// Found from the header, before any pixel memory is allocated.
        case tooLarge
        /// A buffer could not be allocated.
        case outOfMemory
        /// An argument was invalid (a programming error in the caller).
        case invalidArgument
        /// Cairo failed to draw a sprite.
        case drawingFailed
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
