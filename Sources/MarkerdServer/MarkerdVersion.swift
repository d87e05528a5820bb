/// The markerd release, reported by `markerd --version` and GetServerInfo.
public enum MarkerdVersion {
    public static let string = "0.1.0"
}
