// Group commit: the writes of one event-loop turn commit in one transaction, each in its own SAVEPOINT, each
// caller told after that commit. A write may run more than once, so it must do nothing but database work.
import type { Db } from '.'
import { noteWriteSuccess } from '.'

interface Pending {
  write: () => unknown
  resolve: (value: unknown) => void
  reject: (err: unknown) => void
}

export interface WriteGroup {
  /** Runs `write` in the next group's transaction; resolves with its result once that is committed. */
  run<T>(write: () => T): Promise<T>
  /** Commits what is waiting now (for shutdown: before the database closes). */
  flush(): void
  /** Transactions committed for groups, and writes acknowledged through them (for /metrics). */
  readonly commits: number
  readonly writes: number
}

/** `schedule` decides when a group closes; the default is the end of the current event-loop turn. */
export function createWriteGroup(db: Db, schedule: (fn: () => void) => void = setImmediate): WriteGroup {
  let pending: Pending[] = []
  let scheduled = false
  let commits = 0
  let writes = 0
  // Compiled once (db.query's cache, finalized when the database closes): db.exec parses each statement
  // again, ~2 µs of the ~3 µs a write's savepoint costs.
  const begin = db.query('BEGIN IMMEDIATE')
  const commit = db.query('COMMIT')
  const savepoint = db.query('SAVEPOINT item')
  const release = db.query('RELEASE item')
  const rollbackTo = db.query('ROLLBACK TO item')

  function flush() {
    scheduled = false
    const items = pending
    pending = []
    if (items.length > 0) commitGroup(items)
  }

  // The group as one transaction. When SQLite has rolled the whole transaction back by itself (it may on
  // SQLITE_FULL or an I/O error), the writes done so far are gone: the failing one is answered and the
  // others run again in a new transaction, so each round settles at least one write.
  function commitGroup(items: Pending[]) {
    let todo = items
    const failed = new Set<Pending>()
    const fail = (item: Pending, err: unknown) => {
      failed.add(item)
      item.reject(err)
    }
    while (todo.length > 0) {
      const done: { item: Pending; value: unknown }[] = []
      let lost = false
      try {
        begin.run()
        for (const item of todo) {
          savepoint.run()
          let value: unknown
          try {
            value = item.write()
          } catch (err) {
            if (!db.inTransaction) {
              fail(item, err)
              lost = true
              break
            }
            rollbackTo.run()
            release.run()
            fail(item, err)
            continue
          }
          release.run()
          done.push({ item, value })
        }
        if (!lost) commit.run()
      } catch {
        // BEGIN, the commit or undoing one write failed (a full disk, a WAL that cannot grow): one large
        // row must not fail the small ones, so each write left is tried alone, as it was before groups.
        try {
          if (db.inTransaction) db.exec('ROLLBACK')
        } catch {}
        return alone(todo.filter((item) => !failed.has(item)))
      }
      if (lost) {
        todo = todo.filter((item) => !failed.has(item))
        continue
      }
      commits++
      writes += done.length
      noteWriteSuccess(db)
      for (const { item, value } of done) item.resolve(value)
      return
    }
  }

  // Each write in its own transaction: the fallback when a group cannot be committed.
  function alone(items: Pending[]) {
    for (const item of items) {
      let value: unknown
      try {
        value = db.transaction(item.write)()
      } catch (err) {
        item.reject(err)
        continue
      }
      commits++
      writes++
      noteWriteSuccess(db)
      item.resolve(value)
    }
  }

  return {
    run<T>(write: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        pending.push({ write, resolve: resolve as (v: unknown) => void, reject })
        if (!scheduled) {
          scheduled = true
          schedule(flush)
        }
      })
    },
    flush,
    get commits() {
      return commits
    },
    get writes() {
      return writes
    },
  }
}
