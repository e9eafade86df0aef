// The bytes of mail on disk under <data_dir>/mail (incoming/ while received; <xx>/<blob>/ stored), fsynced
// before the rows that name them commit; a crash in between leaves a blob no row names (sweepOrphans).
import { randomUUID } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'

/** Messages up to this size are kept in memory while they arrive; larger ones go to a file as they come. */
const IN_MEMORY_BYTES = 1024 * 1024
/** A blob or incoming file this old that no row names is debris of a crash, not a delivery in progress. */
const ORPHAN_AGE_MS = 60 * 60 * 1000

export interface Taken {
  /** Bytes of the message as the client sent it (after dot-unstuffing). */
  size: number
  oversize: boolean
  /** The whole message, when it fit in memory. */
  bytes: Buffer | null
  /** Else the incoming file holding it. */
  file: string | null
}

/** The message for the parser: its bytes, or a stream of its incoming file. */
export function takenSource(taken: Taken): Buffer | Readable {
  return taken.bytes ?? createReadStream(taken.file!)
}

async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

async function writeSynced(path: string, data: Uint8Array): Promise<void> {
  const handle = await open(path, 'wx', 0o600)
  try {
    await handle.writeFile(data)
    await handle.sync()
  } finally {
    await handle.close()
  }
}

export function createSpool(dataDir: string) {
  const root = join(dataDir, 'mail')
  const incoming = join(root, 'incoming')
  const dirOf = (blob: string) => join(root, blob.slice(0, 2), blob)
  let ready: Promise<unknown> | null = null
  const prepare = () => (ready ??= mkdir(incoming, { recursive: true, mode: 0o700 }))

  return {
    root,
    rawPath: (blob: string) => join(dirOf(blob), 'raw.eml'),
    partPath: (blob: string, part: number) => join(dirOf(blob), `${part}.bin`),
    bodyPath: (blob: string) => join(dirOf(blob), 'body.json'),

    /**
     * Reads a DATA stream to its end, counting the bytes. Past `maxBytes` nothing more is kept (the rest is
     * read and dropped, so that the client can hear the 552), and the message never reaches the parser.
     */
    async take(stream: Readable, maxBytes: number): Promise<Taken> {
      await prepare()
      let size = 0
      let oversize = false
      let chunks: Buffer[] = []
      let held = 0
      let file: string | null = null
      let handle: Awaited<ReturnType<typeof open>> | null = null
      let failure: unknown = null
      try {
        for await (const chunk of stream as AsyncIterable<Buffer>) {
          size += chunk.length
          if (oversize || failure) continue
          if (size > maxBytes) {
            oversize = true
            chunks = []
            continue
          }
          chunks.push(chunk)
          held += chunk.length
          if (held >= IN_MEMORY_BYTES) {
            // The iteration waits for this write: the socket is not read faster than the disk takes it.
            try {
              if (!handle) {
                file = join(incoming, `${randomUUID()}.eml`)
                handle = await open(file, 'ax', 0o600) // append: each writeFile adds to the end
              }
              await handle.writeFile(Buffer.concat(chunks, held))
            } catch (err) {
              failure = err
            }
            chunks = []
            held = 0
          }
        }
        if (failure) throw failure
        if (oversize) return { size, oversize, bytes: null, file: null }
        if (!handle) return { size, oversize, bytes: Buffer.concat(chunks, held), file: null }
        if (held > 0) await handle.writeFile(Buffer.concat(chunks, held))
        return { size, oversize, bytes: null, file }
      } catch (err) {
        if (file) await rm(file, { force: true })
        file = null
        throw err
      } finally {
        await handle?.close()
        if (oversize && file) await rm(file, { force: true })
      }
    },

    /** The message for the parser: its bytes, or a stream of its file. */
    source: takenSource,

    /** Forgets a message that will not be stored (refused, or the server is closing). */
    async discard(taken: Taken): Promise<void> {
      if (taken.file) await rm(taken.file, { force: true })
    },

    /** Writes a message's blob (raw, body.json, attachments) and fsyncs it; returns its name. */
    async store(taken: Taken, body: string, parts: Uint8Array[]): Promise<string> {
      await prepare()
      const blob = randomUUID().replaceAll('-', '')
      const dir = dirOf(blob)
      const parent = join(root, blob.slice(0, 2))
      await mkdir(dir, { recursive: true, mode: 0o700 })
      try {
        if (taken.file) {
          await fsyncPath(taken.file)
          await rename(taken.file, join(dir, 'raw.eml'))
          taken.file = null
        } else await writeSynced(join(dir, 'raw.eml'), taken.bytes!)
        await writeSynced(join(dir, 'body.json'), Buffer.from(body))
        for (let i = 0; i < parts.length; i++) await writeSynced(join(dir, `${i + 1}.bin`), parts[i]!)
        await fsyncPath(dir)
        await fsyncPath(parent)
      } catch (err) {
        await rm(dir, { recursive: true, force: true })
        throw err
      }
      return blob
    },

    async remove(blob: string): Promise<void> {
      if (/^[0-9a-f]{32}$/.test(blob)) await rm(dirOf(blob), { recursive: true, force: true })
    },

    /**
     * Removes what a crash left behind: incoming files, and blobs that no row names (`used` says which
     * are named), older than an hour so that a delivery in progress is never touched. Returns the count.
     */
    async sweepOrphans(used: (blob: string) => boolean, now = Date.now()): Promise<number> {
      let removed = 0
      const old = async (path: string) => {
        try {
          return now - (await stat(path)).mtimeMs > ORPHAN_AGE_MS
        } catch {
          return false
        }
      }
      const list = async (dir: string) => readdir(dir).catch(() => [] as string[])
      for (const name of await list(incoming)) {
        const path = join(incoming, name)
        if (await old(path)) {
          await rm(path, { force: true })
          removed++
        }
      }
      for (const shard of await list(root)) {
        if (!/^[0-9a-f]{2}$/.test(shard)) continue
        for (const blob of await list(join(root, shard))) {
          if (!/^[0-9a-f]{32}$/.test(blob) || used(blob)) continue
          const path = join(root, shard, blob)
          if (await old(path)) {
            await rm(path, { recursive: true, force: true })
            removed++
          }
        }
      }
      return removed
    },
  }
}
export type Spool = ReturnType<typeof createSpool>
