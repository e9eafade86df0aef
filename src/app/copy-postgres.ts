// `linkbox migrate --to URL` (issue 22, SPEC §11): a stopped SQLite data_dir copied into an empty PostgreSQL
// database, everything included, checked, in ONE transaction: a failure anywhere leaves the target without a
// row (its schema stays: openPostgres made it, and a rerun finds it), and a rerun starts over.
//
// What goes where. Both engines have one logical schema (test/db/pg-schema.test.ts), so tables are copied table
// to table, with their ids (OVERRIDING SYSTEM VALUE), in foreign-key order read from the SQLite file itself
// (sqlite_master, PRAGMA foreign_key_list); a table this file has no rule for stops the copy rather than being
// left behind. Three kinds of table are not copied row for row, each for its reason (SPECIAL below):
// - SQLite's own (sqlite_sequence, sqlite_stat*): its bookkeeping. sqlite_sequence still counts: an
//   identity is moved past the larger of the largest id copied and the largest id SQLite ever gave (a row
//   deleted before the copy must not see its id given again, as AUTOINCREMENT promises).
// - The schema version: PRAGMA user_version on SQLite (not a table), linkbox_schema on PostgreSQL, which
//   openPostgres writes; the source is first brought to this binary's schema, the same number.
// - What lives outside the database in SQLite mode and inside it in PostgreSQL mode (migration 16): a
//   message's bytes (data_dir/mail/<xx>/<blob>/ files, or mail_inline and mail_inline_parts for a small
//   one) go into mail_bodies, written by messages-postgres.ts's own functions so that the PostgreSQL mail
//   store reads them; data_dir/secrets/signing.key goes into secrets as signing-postgres.ts reads it. The
//   SQLite copies of mail_bodies and secrets are unused (they must be empty), PostgreSQL's mail_inline
//   tables stay empty (that store never reads them).
// The triggers that keep link_counts and the mailboxes' counters are switched off inside the transaction
// (their tables are copied as they are; firing them would count every link and message twice).
//
// Memory: rows go over in pages (keyset on the primary key), a message's bytes in chunks of CHUNK_BYTES, so
// a data_dir of any size copies in bounded memory. Checks before the commit: the rows of every table counted
// on both sides, and every chunk of every message's bytes hashed (sha256) on both sides; any difference rolls
// everything back.
import type { SQL } from 'bun'
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Refusal, runningService } from './backup'
import type { Config } from '../kernel/config'
import { BODY_PART, CHUNK_BYTES, RAW_PART, writeBodyFile, writeBodyPart } from '../mail/storage/postgres'
import { SIGNING_SECRET_NAME } from '../db/postgres/signing'
import { SECRET_BYTES } from '../kernel/signing'
import { openDatabase, storageReason, type Db } from '../db/sqlite/index'
import { migrations } from '../db/sqlite/migrations'
import { openPostgres, pgReason } from '../db/postgres/index'
import { PG_SCHEMA_VERSION } from '../db/postgres/migrations'

/** Rows per INSERT (fewer for wide tables: a statement takes at most 65,535 parameters). */
export const PAGE_ROWS = 500
/** How long the copy waits for a lock on the target's tables (another session using them) before it gives up. */
const LOCK_TIMEOUT = '10s'

/** Tables not copied row for row, and why (see the top of this file). */
const SPECIAL: Record<string, string> = {
  mail_inline: 'the bytes of small messages: into mail_bodies',
  mail_inline_parts: 'the attachments of small messages: into mail_bodies',
  mail_bodies: 'unused on SQLite: filled from data_dir/mail and mail_inline',
  secrets: 'unused on SQLite: filled from data_dir/secrets',
}
/**
 * The triggers that derive rows of copied tables (link_counts, mailboxes.messages/bytes): off during the copy.
 * So is the account names' check (migration 23): a database may hold names that differ only in case from before it.
 */
const DERIVING_TRIGGERS = [
  { table: 'links', trigger: 'link_counts_insert' },
  { table: 'mail_messages', trigger: 'mail_count_insert' },
  { table: 'accounts', trigger: 'accounts_name_any_case' },
]
/** PostgreSQL's schema-version row, written by openPostgres. */
const PG_BOOKKEEPING = 'linkbox_schema'

interface TablePlan {
  name: string
  columns: string[]
  /** PostgreSQL's type of each column (for the parameter casts). */
  types: string[]
  primaryKey: string[]
  /** The identity column on PostgreSQL (an AUTOINCREMENT id on SQLite), if any. */
  identity: string | null
}

export interface CopyResult {
  tables: { name: string; rows: number }[]
  mail: { blobs: number; parts: number; chunks: number; bytes: number; orphans: number }
  signingKey: boolean
  ms: number
}

const q = (name: string) => `"${name.replace(/"/g, '""')}"`

/** The tables to copy, parents before children (Kahn's order, ties by name); anything unknown is an error. */
function planTables(db: Db, pgColumns: Map<string, { name: string; type: string; identity: boolean }[]>): TablePlan[] {
  const names = (db.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[])
    .map((t) => t.name)
    .filter((n) => !n.startsWith('sqlite_') && !Object.hasOwn(SPECIAL, n))
  for (const name of pgColumns.keys())
    if (name !== PG_BOOKKEEPING && !Object.hasOwn(SPECIAL, name) && !names.includes(name))
      throw new Refusal(`migrate: the PostgreSQL database has a table "${name}" that the SQLite database has not; this copy does not know how to fill it`)
  const plans = new Map<string, TablePlan>()
  const parents = new Map<string, Set<string>>()
  for (const name of names) {
    const target = pgColumns.get(name)
    if (!target) throw new Refusal(`migrate: the SQLite table "${name}" has no counterpart in PostgreSQL; this copy does not know where it goes`)
    const info = db.query(`PRAGMA table_info(${q(name)})`).all() as { name: string; pk: number }[]
    const columns = info.map((c) => c.name)
    const pgNames = target.map((c) => c.name)
    if (columns.length !== pgNames.length || columns.some((c) => !pgNames.includes(c)))
      throw new Refusal(`migrate: the table "${name}" has the columns ${columns.join(', ')} on SQLite and ${pgNames.join(', ')} on PostgreSQL; this copy does not know how to map them`)
    const primaryKey = info.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name)
    if (primaryKey.length === 0) throw new Refusal(`migrate: the SQLite table "${name}" has no primary key to copy it in pages by`)
    const identities = target.filter((c) => c.identity).map((c) => c.name)
    plans.set(name, {
      name,
      columns,
      types: columns.map((c) => target.find((t) => t.name === c)!.type),
      primaryKey,
      identity: identities[0] ?? null,
    })
    const fks = db.query(`PRAGMA foreign_key_list(${q(name)})`).all() as { table: string }[]
    parents.set(name, new Set(fks.map((f) => f.table).filter((t) => t !== name)))
  }
  for (const [name, of] of parents)
    for (const parent of of)
      if (!plans.has(parent)) throw new Refusal(`migrate: the table "${name}" refers to "${parent}", which is not copied; this copy does not know how to order it`)
  const ordered: TablePlan[] = []
  const done = new Set<string>()
  while (ordered.length < plans.size) {
    const next = [...plans.keys()].find((n) => !done.has(n) && [...parents.get(n)!].every((p) => done.has(p)))
    if (!next) throw new Refusal(`migrate: the foreign keys of ${[...plans.keys()].filter((n) => !done.has(n)).join(', ')} form a cycle; this copy does not know which to copy first`)
    done.add(next)
    ordered.push(plans.get(next)!)
  }
  return ordered
}

/** Every table of the target's schema with its columns: name, type, identity. */
async function targetColumns(sql: SQL): Promise<Map<string, { name: string; type: string; identity: boolean }[]>> {
  const rows = await sql`
    SELECT c.relname AS table, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attidentity <> '' AS identity
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
     WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY c.relname, a.attnum`
  const out = new Map<string, { name: string; type: string; identity: boolean }[]>()
  for (const r of rows) {
    if (!out.has(r.table)) out.set(r.table, [])
    out.get(r.table)!.push({ name: r.name, type: r.type, identity: r.identity })
  }
  return out
}

/** The linkbox tables of the target that hold a row (the schema-version row aside). */
async function nonEmpty(sql: SQL, tables: string[]): Promise<string[]> {
  const found: string[] = []
  for (const t of tables) if (t !== PG_BOOKKEEPING && (await sql.unsafe(`SELECT EXISTS (SELECT 1 FROM ${q(t)}) AS any`))[0].any) found.push(t)
  return found
}

/** A SQLite value as a parameter: 64-bit integers as their decimal text (cast to bigint by the statement), exactly. */
const param = (v: unknown) => (typeof v === 'bigint' ? v.toString() : v)

/** Copies one table in pages of its primary key; the number of rows. */
async function copyTable(db: Db, tx: SQL, plan: TablePlan): Promise<number> {
  const perPage = Math.max(1, Math.min(PAGE_ROWS, Math.floor(60_000 / plan.columns.length)))
  const cols = plan.columns.map(q).join(', ')
  const key = plan.primaryKey.map(q).join(', ')
  const first = db.query(`SELECT ${cols} FROM ${q(plan.name)} ORDER BY ${key} LIMIT ${perPage}`).safeIntegers(true)
  const after = db
    .query(`SELECT ${cols} FROM ${q(plan.name)} WHERE (${key}) > (${plan.primaryKey.map(() => '?').join(', ')}) ORDER BY ${key} LIMIT ${perPage}`)
    .safeIntegers(true)
  const head = `INSERT INTO ${q(plan.name)} (${cols})${plan.identity ? ' OVERRIDING SYSTEM VALUE' : ''} VALUES `
  let rows = 0
  let last: Record<string, unknown> | null = null
  for (;;) {
    const page = (last === null ? first.all() : after.all(...(plan.primaryKey.map((k) => last![k]) as any[]))) as Record<string, unknown>[]
    if (page.length === 0) break
    const params: unknown[] = []
    const tuples = page.map((row) => `(${plan.columns.map((c, i) => `$${params.push(param(row[c]))}::${plan.types[i]}`).join(', ')})`)
    await tx.unsafe(head + tuples.join(', '), params)
    rows += page.length
    last = page[page.length - 1]!
    if (page.length < perPage) break
  }
  return rows
}

/** sha256 of each CHUNK_BYTES slice of a part (as writeBodyPart / writeBodyFile cut it), in order, with the slice sizes. */
async function chunkHashes(source: Uint8Array | string): Promise<{ sha256: string; size: number }[]> {
  const out: { sha256: string; size: number }[] = []
  const size = typeof source === 'string' ? statSync(source).size : source.length
  const file = typeof source === 'string' ? Bun.file(source) : null
  for (let at = 0; at === 0 || at < size; at += CHUNK_BYTES) {
    const data = file ? new Uint8Array(await file.slice(at, at + CHUNK_BYTES).arrayBuffer()) : (source as Uint8Array).subarray(at, at + CHUNK_BYTES)
    out.push({ sha256: createHash('sha256').update(data).digest('hex'), size: data.length })
  }
  return out
}

/** A message's parts in SQLite mode: part number → its bytes (inline) or the file that holds them. */
function blobParts(db: Db, dataDir: string, blob: string): Map<number, Uint8Array | string> {
  const parts = new Map<number, Uint8Array | string>()
  const inline = db.query('SELECT raw, body FROM mail_inline WHERE blob = ?').get(blob) as { raw: Uint8Array; body: string } | null
  if (inline) {
    parts.set(BODY_PART, Buffer.from(inline.body))
    parts.set(RAW_PART, inline.raw)
    for (const p of db.query('SELECT part, data FROM mail_inline_parts WHERE blob = ? ORDER BY part').all(blob) as { part: number; data: Uint8Array }[])
      parts.set(p.part, p.data)
    return parts
  }
  const dir = join(dataDir, 'mail', blob.slice(0, 2), blob)
  if (!/^[0-9a-f]{32}$/.test(blob) || !existsSync(dir))
    throw new Refusal(`migrate: the message bytes ${blob} are neither in mail_inline nor in ${dir}: the data_dir is damaged (restore a backup, or delete those messages first)`)
  for (const name of readdirSync(dir)) {
    const n = /^([1-9][0-9]{0,5})\.bin$/.exec(name)?.[1]
    const part = name === 'raw.eml' ? RAW_PART : name === 'body.json' ? BODY_PART : n ? Number(n) : null
    if (part === null) throw new Refusal(`migrate: ${join(dir, name)} is not a file a message's bytes are made of; this copy does not know where it goes`)
    parts.set(part, join(dir, name))
  }
  for (const [part, file] of [[RAW_PART, 'raw.eml'], [BODY_PART, 'body.json']] as const)
    if (!parts.has(part)) throw new Refusal(`migrate: ${join(dir, file)} is missing: the data_dir is damaged (restore a backup, or delete that message first)`)
  return parts
}

/** Every message's bytes into mail_bodies, each blob read back and compared chunk by chunk. */
async function copyMail(db: Db, tx: SQL, dataDir: string): Promise<CopyResult['mail']> {
  const result = { blobs: 0, parts: 0, chunks: 0, bytes: 0, orphans: 0 }
  const page = db.query('SELECT DISTINCT blob FROM mail_messages WHERE blob > ? ORDER BY blob LIMIT 200')
  for (let last = ''; ; ) {
    const blobs = (page.all(last) as { blob: string }[]).map((r) => r.blob)
    if (blobs.length === 0) break
    for (const blob of blobs) {
      const parts = blobParts(db, dataDir, blob)
      const expected: string[] = []
      for (const [part, source] of [...parts].sort((a, b) => a[0] - b[0])) {
        if (typeof source === 'string') await writeBodyFile(tx, blob, part, source)
        else await writeBodyPart(tx, blob, part, source)
        const hashes = await chunkHashes(source)
        hashes.forEach((h, seq) => expected.push(`${part}/${seq}/${h.size}/${h.sha256}`))
        result.parts++
        result.chunks += hashes.length
        result.bytes += hashes.reduce((n, h) => n + h.size, 0)
      }
      const written = await tx`SELECT part, seq, length(data) AS size, encode(sha256(data), 'hex') AS sha256 FROM mail_bodies WHERE blob = ${blob} ORDER BY part, seq`
      const got = written.map((r: any) => `${r.part}/${r.seq}/${r.size}/${r.sha256}`)
      if (got.join('\n') !== expected.join('\n'))
        throw new Refusal(`migrate: the bytes of message ${blob} read back from PostgreSQL differ from data_dir's (${got.length} chunks there, ${expected.length} here)`)
      result.blobs++
    }
    last = blobs[blobs.length - 1]!
  }
  // Bytes no message names (left by a crash; the orphan sweep removes them): not copied, counted.
  const named = db.query('SELECT 1 FROM mail_messages WHERE blob = ? LIMIT 1')
  result.orphans += (db.query('SELECT count(*) AS n FROM mail_inline i WHERE NOT EXISTS (SELECT 1 FROM mail_messages m WHERE m.blob = i.blob)').get() as { n: number }).n
  const root = join(dataDir, 'mail')
  for (const shard of existsSync(root) ? readdirSync(root) : [])
    if (/^[0-9a-f]{2}$/.test(shard)) for (const blob of readdirSync(join(root, shard))) if (!named.get(blob)) result.orphans++
  return result
}

/** The signing key of data_dir into secrets; false when there is none (a PostgreSQL node then makes one). */
async function copySigningKey(tx: SQL, dataDir: string): Promise<boolean> {
  const dir = join(dataDir, 'secrets')
  const names = existsSync(dir) ? readdirSync(dir) : []
  for (const name of names)
    if (name !== 'signing.key') throw new Refusal(`migrate: ${join(dir, name)} is not a secret this copy knows; it does not know where it goes`)
  if (!names.includes('signing.key')) return false
  const path = join(dir, 'signing.key')
  const key = readFileSync(path)
  if (key.length < SECRET_BYTES) throw new Refusal(`migrate: ${path} is shorter than ${SECRET_BYTES} bytes; it is not a signing key linkbox made`)
  await tx`INSERT INTO secrets (name, value, created) VALUES (${SIGNING_SECRET_NAME}, ${key}, ${Math.floor(statSync(path).mtimeMs)})`
  const [back] = await tx`SELECT value FROM secrets WHERE name = ${SIGNING_SECRET_NAME}`
  if (!Buffer.from(back.value as Uint8Array).equals(key)) throw new Refusal(`migrate: the signing key read back from PostgreSQL differs from ${path}`)
  return true
}

/**
 * Copies the data_dir of `config` (its service stopped) into the empty PostgreSQL database at `url`, and
 * checks it. `log` gets one line per table, then the mail and the key. Refusals and failures are Refusals,
 * their messages naming the cause and the URL with its password as ***.
 */
export async function copyToPostgres(config: Config, url: string, log: (line: string) => void, now = () => performance.now()): Promise<CopyResult> {
  const started = now()
  const running = await runningService(config)
  if (running) throw new Refusal(`migrate: ${running}; stop it first (migrate copies a data_dir no service writes to)`)
  const dbPath = join(config.data_dir, 'linkbox.db')
  if (!existsSync(dbPath)) throw new Refusal(`migrate: there is no database at ${dbPath}; check --config`)
  if (PG_SCHEMA_VERSION !== migrations.length)
    throw new Refusal(`migrate: this linkbox's PostgreSQL schema (${PG_SCHEMA_VERSION}) and SQLite schema (${migrations.length}) differ; it cannot copy one into the other`)
  const db = openDatabase(dbPath, { onUpgrade: (note) => log(`note: ${note}`) })
  let pg: Awaited<ReturnType<typeof openPostgres>> | undefined
  try {
    try {
      pg = await openPostgres(url, { max: 2 })
    } catch (err) {
      throw new Refusal(`migrate: ${(err as Error).message}`)
    }
    const target = pg.redacted
    try {
      const columns = await targetColumns(pg.sql)
      const plans = planTables(db, columns)
      const linkboxTables = [...columns.keys()]
      const busy = await nonEmpty(pg.sql, linkboxTables)
      if (busy.length > 0)
        throw new Refusal(`migrate: ${target} is not empty (rows in ${busy.slice(0, 5).join(', ')}${busy.length > 5 ? ', …' : ''}); the copy goes into an empty database only`)
      for (const special of ['mail_bodies', 'secrets'])
        if (db.query(`SELECT 1 FROM ${q(special)} LIMIT 1`).get())
          throw new Refusal(`migrate: the SQLite table ${special} holds rows, which SQLite mode never writes; this copy does not know what they are`)

      db.exec('BEGIN') // one snapshot of the SQLite file for every read below
      try {
        const sequences = new Map((db.query('SELECT name, seq FROM sqlite_sequence').safeIntegers(true).all() as { name: string; seq: bigint }[]).map((r) => [r.name, r.seq]))
        const result = await pg.sql.begin(async (tx) => {
          await tx.unsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`)
          // Nobody writes (or reads: the triggers are switched) until the commit; checked empty again under the locks.
          const exclusive = new Set(DERIVING_TRIGGERS.map((d) => d.table))
          await tx.unsafe(`LOCK TABLE ${linkboxTables.filter((t) => !exclusive.has(t)).map(q).join(', ')} IN EXCLUSIVE MODE`)
          await tx.unsafe(`LOCK TABLE ${[...exclusive].map(q).join(', ')} IN ACCESS EXCLUSIVE MODE`)
          const late = await nonEmpty(tx, linkboxTables)
          if (late.length > 0) throw new Refusal(`migrate: ${target} got rows in ${late.join(', ')} meanwhile; the copy goes into an empty database only`)
          for (const d of DERIVING_TRIGGERS) await tx.unsafe(`ALTER TABLE ${q(d.table)} DISABLE TRIGGER ${q(d.trigger)}`)

          const tables: CopyResult['tables'] = []
          for (const plan of plans) tables.push({ name: plan.name, rows: await copyTable(db, tx, plan) })
          const mail = await copyMail(db, tx, config.data_dir)
          const signingKey = await copySigningKey(tx, config.data_dir)

          // Checks: every table's rows counted on both sides.
          for (const t of tables) {
            const [lite] = db.query(`SELECT count(*) AS n FROM ${q(t.name)}`).all() as { n: number }[]
            const [there] = await tx.unsafe(`SELECT count(*) AS n FROM ${q(t.name)}`)
            if (lite!.n !== t.rows || Number(there.n) !== t.rows)
              throw new Refusal(`migrate: the table ${t.name} has ${lite!.n} rows on SQLite, ${t.rows} were copied and PostgreSQL counts ${there.n}`)
          }
          const [bodies] = await tx`SELECT count(*) AS chunks, count(DISTINCT blob) AS blobs, coalesce(sum(length(data)), 0) AS bytes FROM mail_bodies`
          if (Number(bodies.chunks) !== mail.chunks || Number(bodies.blobs) !== mail.blobs || Number(bodies.bytes) !== mail.bytes)
            throw new Refusal(`migrate: mail_bodies holds ${bodies.blobs} messages' bytes in ${bodies.chunks} chunks (${bodies.bytes} bytes) where ${mail.blobs} in ${mail.chunks} (${mail.bytes} bytes) were copied`)

          // New rows get ids above every id SQLite ever gave (sequences are not transactional: last, once all went well).
          for (const plan of plans) {
            if (!plan.identity) continue
            const [top] = await tx.unsafe(`SELECT coalesce(max(${q(plan.identity)}), 0) AS n FROM ${q(plan.name)}`)
            const seq = sequences.get(plan.name) ?? 0n
            const past = BigInt(top.n) > seq ? BigInt(top.n) : seq
            if (past > 0n) await tx`SELECT setval(pg_get_serial_sequence(${q(plan.name)}, ${plan.identity}), ${past.toString()}::bigint, true)`
          }
          for (const d of DERIVING_TRIGGERS) await tx.unsafe(`ALTER TABLE ${q(d.table)} ENABLE TRIGGER ${q(d.trigger)}`)
          return { tables, mail, signingKey }
        })
        const width = Math.max(...result.tables.map((t) => t.name.length), 'mail_bodies'.length) + 2
        for (const t of result.tables) log(`${t.name.padEnd(width)}${t.rows}`)
        const m = result.mail
        log(`${'mail_bodies'.padEnd(width)}${m.chunks} (the bytes of ${m.blobs} messages: ${m.parts} parts, ${m.bytes} bytes, sha256 equal${m.orphans ? `; ${m.orphans} left out that no message names` : ''})`)
        log(`${'secrets'.padEnd(width)}${result.signingKey ? '1 (data_dir/secrets/signing.key)' : '0 (no signing key in data_dir: a node makes one)'}`)
        const ms = now() - started
        const rows = result.tables.reduce((n, t) => n + t.rows, 0)
        log(`copied ${rows} rows of ${result.tables.length} tables, the bytes of ${m.blobs} messages${result.signingKey ? ' and the signing key' : ''} into ${target} in ${(ms / 1000).toFixed(1)} s; every count and hash checked equal`)
        return { ...result, ms }
      } finally {
        if (db.inTransaction) db.exec('COMMIT')
      }
    } catch (err) {
      const postgres = String((err as { code?: unknown } | null)?.code ?? '').startsWith('ERR_POSTGRES')
      const locked = (err as { errno?: unknown }).errno === '55P03'
      const why =
        err instanceof Refusal ? err.message.replace(/^migrate: /, '')
        : locked ? `another session holds a lock on a table of the database for longer than ${LOCK_TIMEOUT} (a node running on it, or an open transaction?): ${pgReason(err)}`
        : postgres ? pgReason(err)
        : storageReason(err)
      throw new Refusal(`migrate: ${why}; nothing was copied into ${target} (one transaction: fix the cause and run migrate again)`)
    }
  } finally {
    await pg?.close().catch(() => {})
    db.close()
  }
}

// ---- the reverse: PostgreSQL → a fresh SQLite file (backup in PostgreSQL mode: the archive's linkbox.db)

/**
 * Copies every table of the PostgreSQL transaction `tx` (a REPEATABLE READ snapshot) into `db`, a SQLite file
 * just made at this binary's schema: the same plan and order as above, rows in pages, the counter triggers
 * dropped for the copy and made again from their own SQL, sqlite_sequence set from the identities so that a
 * SQLite service never gives an id PostgreSQL gave. Message bytes and secrets are the caller's (they go into
 * the archive as files). Checked: the rows of every table counted on both sides.
 */
export async function copyIntoSqlite(tx: SQL, db: Db): Promise<{ name: string; rows: number }[]> {
  const plans = planTables(db, await targetColumns(tx))
  const triggers = db
    .query(`SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN (${DERIVING_TRIGGERS.map(() => '?').join(', ')})`)
    .all(...DERIVING_TRIGGERS.map((d) => d.trigger)) as { name: string; sql: string }[]
  if (triggers.length !== DERIVING_TRIGGERS.length) throw new Refusal(`backup: the SQLite schema lacks the triggers ${DERIVING_TRIGGERS.map((d) => d.trigger).join(', ')}`)
  const tables: { name: string; rows: number }[] = []
  db.exec('BEGIN IMMEDIATE')
  try {
    for (const t of triggers) db.exec(`DROP TRIGGER ${q(t.name)}`)
    for (const plan of plans) {
      const cols = plan.columns.map(q).join(', ')
      const key = plan.primaryKey.map(q).join(', ')
      const insert = db.query(`INSERT INTO ${q(plan.name)} (${cols}) VALUES (${plan.columns.map(() => '?').join(', ')})`)
      let rows = 0
      let last: Record<string, unknown> | null = null
      for (;;) {
        const where = last === null ? '' : `WHERE (${key}) > (${plan.primaryKey.map((k, i) => `$${i + 1}::${plan.types[plan.columns.indexOf(k)]}`).join(', ')})`
        const page = (await tx.unsafe(`SELECT ${cols} FROM ${q(plan.name)} ${where} ORDER BY ${key} LIMIT ${PAGE_ROWS}`, last === null ? [] : plan.primaryKey.map((k) => last![k]))) as Record<string, unknown>[]
        for (const row of page) insert.run(...(plan.columns.map((c) => row[c] ?? null) as any[]))
        rows += page.length
        if (page.length < PAGE_ROWS) break
        last = page[page.length - 1]!
      }
      const [there] = await tx.unsafe(`SELECT count(*) AS n FROM ${q(plan.name)}`)
      const [here] = db.query(`SELECT count(*) AS n FROM ${q(plan.name)}`).all() as { n: number }[]
      if (Number(there.n) !== rows || here!.n !== rows)
        throw new Refusal(`backup: the table ${plan.name} has ${there.n} rows on PostgreSQL, ${rows} were copied and SQLite counts ${here!.n}`)
      tables.push({ name: plan.name, rows })
      if (plan.identity) {
        const [seq] = await tx.unsafe(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM ${await sequenceOf(tx, plan)}`)
        // SQLite keeps one row per table there (made by the first insert): raised, or made when the table is empty.
        const given = BigInt(seq.n)
        if (given > 0n && db.query('UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?').run(given, plan.name).changes === 0)
          db.query('INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)').run(plan.name, given)
      }
    }
    for (const t of triggers) db.exec(t.sql)
    db.exec('COMMIT')
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK')
    throw err
  }
  return tables
}

/** The sequence behind a table's identity column, as a name fit for SQL. */
async function sequenceOf(tx: SQL, plan: TablePlan): Promise<string> {
  const [row] = await tx`SELECT pg_get_serial_sequence(${q(plan.name)}, ${plan.identity}) AS name`
  if (!row?.name) throw new Refusal(`backup: the identity of ${plan.name}.${plan.identity} has no sequence`)
  return row.name as string
}

