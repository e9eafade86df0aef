// Tags as things (issue 38): an account's tags with their links and clicks, and a tag renamed (onto another:
// merged) or removed from every link that has it, in one transaction with each changed link's link.updated.
import { codeKey } from './domains'
import type { Caller } from '../kernel/caller'
import { allWritten } from '../db/written'
import { AppError } from '../kernel/errors'
import type { EventType } from '../kernel/outbox'
import type { Events } from '../kernel/events'
import type { LinkRecord } from './record'
import { type LinkRow, type LinkStorage, TOO_MANY } from './storage/contract'
import { validateTag } from './validate'

/** The tags page lists at most this many; a rename or removal changes at most TAG_CHANGE_MAX links at once. */
export const TAGS_LISTED = 1000
export const TAG_CHANGE_MAX = 10_000

interface TaggingDeps<Tx> {
  store: LinkStorage<Tx>
  clock: () => number
  events: Events
  record: (row: LinkRow, tags: readonly string[]) => LinkRecord
  published: (codes: readonly string[]) => void
  eventWriter: () => {
    write(tx: Tx, type: EventType, accountId: number | null, data: () => Record<string, unknown>, at: number): unknown
    wake(): void
  }
}

export function createTagging<Tx>({ store, clock, events, record, published, eventWriter }: TaggingDeps<Tx>) {
  /** `from` renamed `to`, or removed (null): how many links changed. */
  async function retag(caller: Caller, from: string, to: string | null): Promise<number> {
    const event = eventWriter()
    const changed: LinkRecord[] = []
    const keys: string[] = []
    const n = await store.retagAll(caller.accountId, from, to, clock(), TAG_CHANGE_MAX, (tx, links) => {
      changed.length = 0 // SQLite may run a write again
      keys.length = 0
      keys.push(...links.map((l) => codeKey(l.row.domain, l.row.code)))
      const records = links.map((l) => record(l.row, l.tags))
      changed.push(...records)
      return allWritten(
        links.map((l, i) =>
          event.write(tx, 'link.updated', l.row.account_id, () => ({ ...records[i] }), l.row.updated),
        ),
      )
    })
    if (n === TOO_MANY)
      throw new AppError(
        413,
        'too_many',
        `More than ${TAG_CHANGE_MAX.toLocaleString('en-US')} links have the tag "${from}": change it with the API in parts.`,
      )
    published(keys)
    event.wake()
    for (const link of changed) events.emit('link.updated', { link: { ...link }, accountId: caller.accountId })
    return n
  }

  return {
    /** The caller's tags by name, each with its links and their clicks (at most TAGS_LISTED). */
    tagSummary: (caller: Caller) => store.tagSummary(caller.accountId, TAGS_LISTED),
    /** Renames a tag on every link of the caller that has it; onto a tag in use, the two merge. */
    renameTag: (input: { tag: unknown; to: unknown }, caller: Caller) =>
      retag(caller, validateTag(input.tag), validateTag(input.to, 'to')),
    /** Removes a tag from every link of the caller that has it (the links stay). */
    deleteTag: (input: { tag: unknown }, caller: Caller) => retag(caller, validateTag(input.tag), null),
  }
}
