// MarkerdJournal: the durability engine, in bytes. No C imports but Glibc.
//
// What it does
//   - `Journal`: append opaque records (the service's encoded `JournalRecord`s); each gets a
//     sequence number (1, 2, ...). One writer thread group-commits: one write() + one fdatasync
//     per group, then the group's completions run (policy `.always`). See `SyncPolicy` for what
//     `.everySecond` and `.off` can lose.
//   - `SnapshotWriter`: stream opaque sections (encoded `SnapshotSection`s) into a snapshot file,
//     committed atomically (fsync, rename, fsync dir).
//   - `Journal.open`: lock the directory, recover (snapshot sections, then journal records after
//     it), cut a torn tail, continue appending.
//   - `JournalCheck.check` / `.repair`: offline report and valid-prefix repair.
//   File and frame formats: see `JournalFormat`.
//
// How the service takes a snapshot (on a background thread; appends continue throughout):
//   let s = try journal.rotate()                 // every record <= s is in older segments
//   let w = try journal.makeSnapshotWriter(coveredSequence: s)
//   for section in state.sections() { try w.append(section) }   // header first, footer last
//   try w.commit()
//   try journal.dropSegments(coveredBy: s)       // keep it and the previous snapshot with its journal
//
// The snapshot is FUZZY: it is written in chunks while writes continue, so each part reflects
// state at some point at or after s (some records > s may already be in it). Recovery replays
// every journal record with sequence > s on top of it. That converges only because each
// journaled mutation SETS state (upsert with full values, delete, set-option) rather than
// adjusting it (no "move by +dx", no counters incremented by replay): applying a record twice,
// or to a state that already contains it, gives the same result. The service must also append
// in the same order it applies (append while holding the lock under which it mutates), so that
// replay order equals apply order for any one key.
//
// Acknowledgement: answer a client only in the append's completion (or after `await append`).
// With `.always`, an acknowledged write survives power loss. After a failed write/fsync (disk
// full) the writer retries the group with backoff until it succeeds; its completions wait, and
// `retryingAfter` tells the service to refuse new writes meanwhile (see `Journal`).
