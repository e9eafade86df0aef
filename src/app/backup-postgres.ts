// `linkbox backup` and `restore` with [database] url: the same archive as SQLite mode's (backup.ts), made from one
// REPEATABLE READ snapshot copied into a fresh SQLite file; restore goes through `migrate --to`'s copy.
import { createHash, randomBytes } from 'node:crypto'
import { closeSync, existsSync, mkdirSync, openSync, rmSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import {
  BLOCK,
  copyRange,
  header,
  readArchive,
  Refusal,
  unpackArchive,
  writeAll,
  type Manifest,
  type ManifestFile,
} from './archive'
import { openForRestore, placeArchive, sealArchive, stamp } from './backup'
import type { Config } from '../kernel/config'
import { openDatabase, storageReason } from '../db/sqlite'
import { migrations } from '../db/sqlite/migrations'
import { copyIntoSqlite, copyToPostgres } from './copy-postgres'
import { openPostgres, pgReason } from '../db/postgres'
import { BODY_PART, RAW_PART } from '../mail/storage/postgres'
import { SIGNING_SECRET_NAME } from '../db/postgres/signing'
import { VERSION } from '../kernel/version'

const fileOfPart = (part: number) => (part === RAW_PART ? 'raw.eml' : part === BODY_PART ? 'body.json' : `${part}.bin`)

/** The reason of a failure that is not a Refusal: PostgreSQL's words, or the file system's. */
const reason = (err: unknown) =>
  String((err as { code?: unknown } | null)?.code ?? '').startsWith('ERR_POSTGRES') ? pgReason(err) : storageReason(err)

export async function writePostgresBackup(config: Config, file: string, now = Date.now()): Promise<Manifest> {
  if (existsSync(file)) throw new Refusal(`backup: ${file} exists already; choose a new file`)
  const folder = dirname(resolve(file))
  if (!existsSync(folder) || !statSync(folder).isDirectory())
    throw new Refusal(`backup: the folder ${folder} does not exist; create it first`)
  mkdirSync(config.data_dir, { recursive: true, mode: 0o700 })
  const tmp = `${file}.tmp`
  const snapshot = join(config.data_dir, `.backup-${randomBytes(6).toString('hex')}.db`)
  let pg: Awaited<ReturnType<typeof openPostgres>>
  try {
    pg = await openPostgres(config.database.url, { max: 1 })
  } catch (err) {
    throw new Refusal(`backup: ${(err as Error).message}`)
  }
  let out: number | undefined
  try {
    out = openSync(tmp, 'wx', 0o600)
  } catch (err) {
    await pg.close()
    const exists = (err as NodeJS.ErrnoException).code === 'EEXIST'
    throw new Refusal(
      `backup: cannot create ${tmp}: ${exists ? 'it exists (left by a backup that was stopped?); remove it' : (err as Error).message}`,
    )
  }
  try {
    const files: ManifestFile[] = []
    /** One archive entry of `size` bytes, written by `write` (which gets a function to send bytes through). */
    const entry = async (
      name: string,
      size: number,
      mtime: number,
      write: (put: (data: Uint8Array) => void) => Promise<void>,
    ) => {
      writeAll(out!, header(name, size, mtime))
      const hash = createHash('sha256')
      let written = 0
      await write((data) => {
        hash.update(data)
        writeAll(out!, data)
        written += data.length
      })
      if (written !== size)
        throw new Refusal(`backup: ${name} changed while it was written (${written} bytes where ${size} were counted)`)
      writeAll(out!, Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK))
      files.push({ path: name, size, sha256: hash.digest('hex') })
    }
    await pg.sql.begin(async (tx) => {
      // One snapshot for the rows and the bytes: a message stored meanwhile is in neither.
      await tx.unsafe('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY')
      closeSync(openSync(snapshot, 'wx', 0o600))
      const db = openDatabase(snapshot)
      try {
        await copyIntoSqlite(tx, db)
        db.exec('PRAGMA wal_checkpoint(TRUNCATE)')
      } finally {
        db.close()
      }
      const size = statSync(snapshot).size
      const fd = openSync(snapshot, 'r')
      try {
        writeAll(out!, header('linkbox.db', size, now))
        const sha256 = copyRange(fd, 0, size, out!)
        writeAll(out!, Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK))
        files.push({ path: 'linkbox.db', size, sha256 })
      } finally {
        closeSync(fd)
      }

      // Each message's bytes, as the files of a SQLite data_dir; bytes no message names are left out.
      for (let last = ''; ; ) {
        const blobs = (
          await tx`SELECT DISTINCT blob FROM mail_messages WHERE blob > ${last} ORDER BY blob LIMIT 200`
        ).map((r: { blob: string }) => r.blob)
        if (blobs.length === 0) break
        for (const blob of blobs) {
          if (!/^[0-9a-f]{32}$/.test(blob))
            throw new Refusal(
              `backup: a message's bytes are named ${JSON.stringify(blob.slice(0, 40))}, which is not a name linkbox gives; this backup does not know how to store it`,
            )
          const parts =
            await tx`SELECT part, count(*) AS chunks, sum(length(data)) AS size FROM mail_bodies WHERE blob = ${blob} GROUP BY part ORDER BY part`
          for (const p of parts) {
            const part = Number(p.part)
            await entry(`mail/${blob.slice(0, 2)}/${blob}/${fileOfPart(part)}`, Number(p.size), now, async (put) => {
              for (let seq = 0; seq < Number(p.chunks); seq++) {
                const [row] =
                  await tx`SELECT data FROM mail_bodies WHERE blob = ${blob} AND part = ${part} AND seq = ${seq}`
                if (!row)
                  throw new Refusal(`backup: the bytes of message ${blob} lack their chunk ${seq} of part ${part}`)
                put(row.data as Uint8Array)
              }
            })
          }
        }
        last = blobs[blobs.length - 1]!
      }

      const secrets = await tx`SELECT name, value, created FROM secrets ORDER BY name`
      for (const s of secrets) {
        if (s.name !== SIGNING_SECRET_NAME)
          throw new Refusal(`backup: the secret "${s.name}" is not one this backup knows how to store`)
        const value = Buffer.from(s.value as Uint8Array)
        await entry('secrets/signing.key', value.length, Number(s.created), async (put) => put(value))
      }
    })
    const manifest: Manifest = {
      format: 'linkbox-backup',
      format_version: 1,
      version: VERSION,
      schema: migrations.length,
      created: new Date(now).toISOString(),
      files,
    }
    sealArchive(out, manifest, now)
    out = undefined
    placeArchive(tmp, file, folder)
    return manifest
  } catch (err) {
    if (err instanceof Refusal) throw err
    throw new Refusal(`backup: could not copy ${pg.redacted} into ${tmp}: ${reason(err)}`)
  } finally {
    if (out !== undefined) closeSync(out)
    rmSync(tmp, { force: true })
    for (const suffix of ['', '-wal', '-shm']) rmSync(snapshot + suffix, { force: true })
    await pg.close().catch(() => {})
  }
}

/**
 * Restores an archive (of either engine) into the empty database of database.url: checked whole first, its
 * files staged in data_dir as a data_dir of their own, then copied in by migrate's copy (one transaction).
 */
export async function restoreToPostgres(
  config: Config,
  file: string,
  log: (line: string) => void,
  now = Date.now(),
): Promise<Manifest> {
  const fd = await openForRestore(config, file)
  mkdirSync(config.data_dir, { recursive: true, mode: 0o700 })
  const staging = join(config.data_dir, `.restore-${stamp(now)}-${randomBytes(4).toString('hex')}`)
  try {
    const { manifest, entries } = readArchive(fd, file)
    // A staging directory removed afterwards: nothing in it needs to survive a crash.
    unpackArchive(fd, file, manifest, entries, staging, { durable: false })
    try {
      await copyToPostgres({ ...config, data_dir: staging }, config.database.url, log)
    } catch (err) {
      if (err instanceof Refusal) throw new Refusal(err.message.replace(/^migrate: /, 'restore: '))
      throw err
    }
    return manifest
  } catch (err) {
    if (err instanceof Refusal) throw err
    throw new Refusal(`restore: ${reason(err)}`)
  } finally {
    closeSync(fd)
    rmSync(staging, { recursive: true, force: true })
  }
}
