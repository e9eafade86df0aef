// The click writer thread's entry (clicks/write-worker.ts): a thread cannot be handed a function, so the root
// names here how it writes link.clicked rows (webhooks' eventInserts). scripts/build.ts makes it an entrypoint.
import { serveClickWrites } from '../clicks'
import { eventInserts } from '../webhooks/storage/sqlite'

serveClickWrites(eventInserts)
