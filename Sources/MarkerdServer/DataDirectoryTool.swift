import Foundation
import MarkerdJournal

/// `markerd check DIR` and `markerd repair DIR`.
public enum DataDirectoryTool {
    /// Runs the subcommand, prints its report and returns the exit status: 0 when the directory
    /// is (now) recoverable, 1 when it is damaged, 2 when it cannot be read.
    public static func run(_ subcommand: String, directory: String) -> Int32 {
        do {
            let report = subcommand == "repair"
                ? try JournalCheck.repair(directory: directory)
                : try JournalCheck.check(directory: directory)
            print(report.description)
            return report.recoverable ? 0 : 1
        } catch {
            FileHandle.standardError.write("markerd \(subcommand): \(error)\n".data(using: .utf8)!)
            return 2
        }
    }
}
