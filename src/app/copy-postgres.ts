// `linkbox migrate --to URL` (issue 22, SPEC §11): a stopped SQLite data_dir copied into an empty PostgreSQL
// database in ONE transaction, checked before the commit; and the reverse, for backups in PostgreSQL mode.
import type { SQL } from 'bun'
import type { SQLQueryBindings } from 'bun:sqlite'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Refusal } from './archive'
import { runningService } from './lock'
import type { Config } from '../kernel/config'
import { openDatabase, storageReason, type Db } from '../db/sqlite/index'
import { migrations } from '../db/sqlite/migrations'
import { openPostgres, pgReason } from '../db/postgres/index'
import { PG_SCHEMA_VERSION } from '../db/postgres/migrations'
import {
  type CopyResult,
  copyTable,
  DERIVING_TRIGGERS,
  LOCK_TIMEOUT,
  nonEmpty,
  PAGE_ROWS,
  planTables,
  q,
  sequenceOf,
  targetColumns,
} from './copy-tables'
import { copyMail, copySigningKey } from './copy-mail'

/**
 * Copies the data_dir of `config` (its service stopped) into the empty PostgreSQL database at `url`, and
 * checks it. `log` gets one line per table, then the mail and the key. Refusals and failures are Refusals,
 * their messages naming the cause and the URL with its password as ***.
 */
export async function copyToPostgres(
  config: Config,
  url: string,
  log: (line: string) => void,
  now = () => performance.now(),
): Promise<CopyResult> {
  const started = now()
  const running = await runningService(config)
  if (running) throw new Refusal(`migrate: ${running}; stop it first (migrate copies a data_dir no service writes to)`)
  const dbPath = join(config.data_dir, 'linkbox.db')
  if (!existsSync(dbPath)) throw new Refusal(`migrate: there is no database at ${dbPath}; check --config`)
  if (PG_SCHEMA_VERSION !== migrations.length)
    throw new Refusal(
      `migrate: this linkbox's PostgreSQL schema (${PG_SCHEMA_VERSION}) and SQLite schema (${migrations.length}) differ; it cannot copy one into the other`,
    )
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
        throw new Refusal(
          `migrate: ${target} is not empty (rows in ${busy.slice(0, 5).join(', ')}${busy.length > 5 ? ', …' : ''}); the copy goes into an empty database only`,
        )
      for (const special of ['mail_bodies', 'secrets'])
        if (db.query(`SELECT 1 FROM ${q(special)} LIMIT 1`).get())
          throw new Refusal(
            `migrate: the SQLite table ${special} holds rows, which SQLite mode never writes; this copy does not know what they are`,
          )

      db.exec('BEGIN') // one snapshot of the SQLite file for every read below
      try {
        const sequences = new Map(
          (
            db.query('SELECT name, seq FROM sqlite_sequence').safeIntegers(true).all() as {
              name: string
              seq: bigint
            }[]
          ).map((r) => [r.name, r.seq]),
        )
        const result = await pg.sql.begin(async (tx) => {
          await tx.unsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`)
          // Nobody writes (or reads: the triggers are switched) until the commit; checked empty again under the locks.
          const exclusive = new Set(DERIVING_TRIGGERS.map((d) => d.table))
          await tx.unsafe(
            `LOCK TABLE ${linkboxTables
              .filter((t) => !exclusive.has(t))
              .map(q)
              .join(', ')} IN EXCLUSIVE MODE`,
          )
          await tx.unsafe(`LOCK TABLE ${[...exclusive].map(q).join(', ')} IN ACCESS EXCLUSIVE MODE`)
          const late = await nonEmpty(tx, linkboxTables)
          if (late.length > 0)
            throw new Refusal(
              `migrate: ${target} got rows in ${late.join(', ')} meanwhile; the copy goes into an empty database only`,
            )
          for (const d of DERIVING_TRIGGERS)
            await tx.unsafe(`ALTER TABLE ${q(d.table)} DISABLE TRIGGER ${q(d.trigger)}`)

          const tables: CopyResult['tables'] = []
          for (const plan of plans) tables.push({ name: plan.name, rows: await copyTable(db, tx, plan) })
          const mail = await copyMail(db, tx, config.data_dir)
          const signingKey = await copySigningKey(tx, config.data_dir)

          // Checks: every table's rows counted on both sides.
          for (const t of tables) {
            const [lite] = db.query(`SELECT count(*) AS n FROM ${q(t.name)}`).all() as { n: number }[]
            const [there] = await tx.unsafe(`SELECT count(*) AS n FROM ${q(t.name)}`)
            if (lite!.n !== t.rows || Number(there.n) !== t.rows)
              throw new Refusal(
                `migrate: the table ${t.name} has ${lite!.n} rows on SQLite, ${t.rows} were copied and PostgreSQL counts ${there.n}`,
              )
          }
          const [bodies] =
            await tx`SELECT count(*) AS chunks, count(DISTINCT blob) AS blobs, coalesce(sum(length(data)), 0) AS bytes FROM mail_bodies`
          if (
            Number(bodies.chunks) !== mail.chunks ||
            Number(bodies.blobs) !== mail.blobs ||
            Number(bodies.bytes) !== mail.bytes
          )
            throw new Refusal(
              `migrate: mail_bodies holds ${bodies.blobs} messages' bytes in ${bodies.chunks} chunks (${bodies.bytes} bytes) where ${mail.blobs} in ${mail.chunks} (${mail.bytes} bytes) were copied`,
            )

          // New rows get ids above every id SQLite ever gave (sequences are not transactional: last, once all went well).
          for (const plan of plans) {
            if (!plan.identity) continue
            const [top] = await tx.unsafe(`SELECT coalesce(max(${q(plan.identity)}), 0) AS n FROM ${q(plan.name)}`)
            const seq = sequences.get(plan.name) ?? 0n
            const past = BigInt(top.n) > seq ? BigInt(top.n) : seq
            if (past > 0n)
              await tx`SELECT setval(pg_get_serial_sequence(${q(plan.name)}, ${plan.identity}), ${past.toString()}::bigint, true)`
          }
          for (const d of DERIVING_TRIGGERS) await tx.unsafe(`ALTER TABLE ${q(d.table)} ENABLE TRIGGER ${q(d.trigger)}`)
          return { tables, mail, signingKey }
        })
        const width = Math.max(...result.tables.map((t) => t.name.length), 'mail_bodies'.length) + 2
        for (const t of result.tables) log(`${t.name.padEnd(width)}${t.rows}`)
        const m = result.mail
        log(
          `${'mail_bodies'.padEnd(width)}${m.chunks} (the bytes of ${m.blobs} messages: ${m.parts} parts, ${m.bytes} bytes, sha256 equal${m.orphans ? `; ${m.orphans} left out that no message names` : ''})`,
        )
        log(
          `${'secrets'.padEnd(width)}${result.signingKey ? '1 (data_dir/secrets/signing.key)' : '0 (no signing key in data_dir: a node makes one)'}`,
        )
        const ms = now() - started
        const rows = result.tables.reduce((n, t) => n + t.rows, 0)
        log(
          `copied ${rows} rows of ${result.tables.length} tables, the bytes of ${m.blobs} messages${result.signingKey ? ' and the signing key' : ''} into ${target} in ${(ms / 1000).toFixed(1)} s; every count and hash checked equal`,
        )
        return { ...result, ms }
      } finally {
        if (db.inTransaction) db.exec('COMMIT')
      }
    } catch (err) {
      const postgres = String((err as { code?: unknown } | null)?.code ?? '').startsWith('ERR_POSTGRES')
      const locked = (err as { errno?: unknown }).errno === '55P03'
      const why =
        err instanceof Refusal
          ? err.message.replace(/^migrate: /, '')
          : locked
            ? `another session holds a lock on a table of the database for longer than ${LOCK_TIMEOUT} (a node running on it, or an open transaction?): ${pgReason(err)}`
            : postgres
              ? pgReason(err)
              : storageReason(err)
      throw new Refusal(
        `migrate: ${why}; nothing was copied into ${target} (one transaction: fix the cause and run migrate again)`,
      )
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
    .query(
      `SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN (${DERIVING_TRIGGERS.map(() => '?').join(', ')})`,
    )
    .all(...DERIVING_TRIGGERS.map((d) => d.trigger)) as { name: string; sql: string }[]
  if (triggers.length !== DERIVING_TRIGGERS.length)
    throw new Refusal(
      `backup: the SQLite schema lacks the triggers ${DERIVING_TRIGGERS.map((d) => d.trigger).join(', ')}`,
    )
  const tables: { name: string; rows: number }[] = []
  db.exec('BEGIN IMMEDIATE')
  try {
    for (const t of triggers) db.exec(`DROP TRIGGER ${q(t.name)}`)
    for (const plan of plans) {
      const cols = plan.columns.map(q).join(', ')
      const key = plan.primaryKey.map(q).join(', ')
      const insert = db.query(
        `INSERT INTO ${q(plan.name)} (${cols}) VALUES (${plan.columns.map(() => '?').join(', ')})`,
      )
      let rows = 0
      let last: Record<string, unknown> | null = null
      for (;;) {
        const where =
          last === null
            ? ''
            : `WHERE (${key}) > (${plan.primaryKey.map((k, i) => `$${i + 1}::${plan.types[plan.columns.indexOf(k)]}`).join(', ')})`
        const page = (await tx.unsafe(
          `SELECT ${cols} FROM ${q(plan.name)} ${where} ORDER BY ${key} LIMIT ${PAGE_ROWS}`,
          last === null ? [] : plan.primaryKey.map((k) => last![k]),
        )) as Record<string, unknown>[]
        for (const row of page) insert.run(...(plan.columns.map((c) => row[c] ?? null) as SQLQueryBindings[]))
        rows += page.length
        if (page.length < PAGE_ROWS) break
        last = page[page.length - 1]!
      }
      const [there] = await tx.unsafe(`SELECT count(*) AS n FROM ${q(plan.name)}`)
      const [here] = db.query(`SELECT count(*) AS n FROM ${q(plan.name)}`).all() as { n: number }[]
      if (Number(there.n) !== rows || here!.n !== rows)
        throw new Refusal(
          `backup: the table ${plan.name} has ${there.n} rows on PostgreSQL, ${rows} were copied and SQLite counts ${here!.n}`,
        )
      tables.push({ name: plan.name, rows })
      if (plan.identity) {
        const [seq] = await tx.unsafe(
          `SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM ${await sequenceOf(tx, plan)}`,
        )
        // SQLite keeps one row per table there (made by the first insert): raised, or made when the table is empty.
        const given = BigInt(seq.n)
        if (
          given > 0n &&
          db.query('UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?').run(given, plan.name).changes === 0
        )
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
