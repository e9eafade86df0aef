// The click writer thread's entry (clicks/storage/sqlite-thread.ts): a thread cannot be handed a function, so the
// root names here how it writes link.clicked rows (webhooks' eventInserts). scripts/build.ts makes it an entrypoint.
// Both imports are storage files: the thread loads the SQLite writers only, not the features around them.
import { serveClickWrites } from '../clicks/storage/sqlite-thread'
import { eventInserts } from '../webhooks/storage/sqlite'

serveClickWrites(eventInserts)
