import Dispatch
import Foundation

extension MarkerdNode {
    /// Serves until SIGTERM or SIGINT, then stops gracefully (stop taking requests, finish those
    /// in flight within `drainSeconds`, flush and fsync the journal) and exits 0. A second
    /// signal while draining exits at once. SIGHUP reloads (``reload()``: tokens, signing key,
    /// audit log, TLS certificates) without dropping a connection. Never returns.
    public func runUntilSignalled() -> Never {
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        signal(SIGHUP, SIG_IGN)
        let queue = DispatchQueue(label: "markerd.signals")
        var sources: [DispatchSourceSignal] = []
        let hangup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: queue)
        hangup.setEventHandler { [self] in
            Log.info("SIGHUP: reloading")
            reload()
        }
        hangup.resume()
        sources.append(hangup)
        for sig in [SIGTERM, SIGINT] {
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { [self] in
                Log.info("shutting down", ["signal": sig == SIGTERM ? "SIGTERM" : "SIGINT"])
                signal(SIGTERM, SIG_DFL)
                signal(SIGINT, SIG_DFL)
                stop()
                Log.info("markerd stopped")
                // Everything is flushed; skip atexit handlers and library teardown, which race
                // with nng's own threads.
                fflush(nil)
                _exit(0)
            }
            source.resume()
            sources.append(source)
        }
        withExtendedLifetime(sources) { dispatchMain() }
    }
}
