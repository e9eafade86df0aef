// The PostgreSQL schema (src/db/postgres/) against SQLite's (src/db/sqlite/migrations.ts), on a real server: the
// same tables, columns (order, type, nullability, default), primary keys, unique and other indexes, foreign
// keys with their ON DELETE, checks and triggers, read mechanically from both catalogs, so a SQLite migration
// without its PostgreSQL twin fails here. Then what openPostgres promises: one migration however many nodes
// start at once, a newer schema refused, and the triggers doing on PostgreSQL what they do on SQLite.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseError, openDatabase, type Db } from '../../src/db/sqlite'
import { migrations } from '../../src/db/sqlite/migrations'
import { MIGRATION_LOCK_KEY, openPostgres, type PgDb } from '../../src/db/postgres'
import { PG_SCHEMA_VERSION, pgMigrations } from '../../src/db/postgres/migrations'
import { tempDir } from '../support/app'
import { sharedPostgres, type Postgres } from '../support/postgres'

let pg: Postgres
let sqliteDir: string
let lite: Db
let migrated: PgDb
beforeAll(async () => {
  pg = await sharedPostgres()
  sqliteDir = tempDir('linkbox-pgschema-')
  lite = openDatabase(join(sqliteDir, 'linkbox.db'))
  migrated = await openPostgres(await pg.createDatabase())
}, 120_000)
afterAll(async () => {
  await migrated?.close()
  lite?.close()
  rmSync(sqliteDir, { recursive: true, force: true })
  await pg?.stop()
})

interface Column {
  name: string
  type: string
  notNull: boolean
  default: string | null
}
interface Shape {
  columns: Column[]
  primaryKey: string[]
  /** Column lists of the unique indexes, the primary key's included, sorted. */
  unique: string[]
  /** name → column list of the other indexes. */
  indexes: Record<string, string>
  /** "column → table(column) ON DELETE x", sorted. */
  foreignKeys: string[]
  checks: number
  triggers: string[]
}

const SQLITE_TYPES: Record<string, string> = { INTEGER: 'bigint', TEXT: 'text', BLOB: 'bytea' }
/** A default as both catalogs would agree on it: constants as written, an expression as "expression". */
const constantDefault = (d: string | null) => (d === null ? null : /^(-?\d+|'[^']*')$/.test(d) ? d : 'expression')

function sqliteShape(db: Db, table: string): Shape {
  const info = db.query(`PRAGMA table_info("${table}")`).all() as {
    name: string
    type: string
    notnull: number
    dflt_value: string | null
    pk: number
  }[]
  const autoincrement = /AUTOINCREMENT/i.test(
    (db.query('SELECT sql FROM sqlite_master WHERE name = ?').get(table) as { sql: string }).sql,
  )
  const columns = info.map((c) => ({
    name: c.name,
    type: SQLITE_TYPES[c.type]!,
    // A primary key column is NOT NULL in PostgreSQL always; in SQLite always for INTEGER PRIMARY KEY and
    // WITHOUT ROWID tables, and in practice for the rest (no store writes NULL there): compared as not null.
    notNull: c.notnull === 1 || c.pk > 0,
    default: c.pk > 0 && autoincrement ? 'identity' : constantDefault(c.dflt_value),
  }))
  const primaryKey = info
    .filter((c) => c.pk > 0)
    .sort((a, b) => a.pk - b.pk)
    .map((c) => c.name)
  const unique = new Set<string>([primaryKey.join(',')])
  const indexes: Record<string, string> = {}
  for (const ix of db.query(`PRAGMA index_list("${table}")`).all() as {
    name: string
    unique: number
    origin: string
  }[]) {
    const cols = (db.query(`PRAGMA index_info("${ix.name}")`).all() as { seqno: number; name: string }[])
      .sort((a, b) => a.seqno - b.seqno)
      .map((c) => c.name)
      .join(',')
    if (ix.unique) unique.add(cols)
    else indexes[ix.name] = cols
  }
  const foreignKeys = (
    db.query(`PRAGMA foreign_key_list("${table}")`).all() as {
      from: string
      table: string
      to: string
      on_delete: string
    }[]
  )
    .map((f) => `${f.from} → ${f.table}(${f.to}) ON DELETE ${f.on_delete}`)
    .sort()
  const sql = (db.query('SELECT sql FROM sqlite_master WHERE name = ?').get(table) as { sql: string }).sql
  const triggers = (
    db.query("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? ORDER BY name").all(table) as {
      name: string
    }[]
  ).map((t) => t.name)
  return {
    columns,
    primaryKey,
    unique: [...unique].sort(),
    indexes,
    foreignKeys,
    checks: (sql.match(/\bCHECK\s*\(/gi) ?? []).length,
    triggers,
  }
}

const ON_DELETE: Record<string, string> = {
  a: 'NO ACTION',
  r: 'RESTRICT',
  c: 'CASCADE',
  n: 'SET NULL',
  d: 'SET DEFAULT',
}

async function pgShape(sql: PgDb['sql'], table: string): Promise<Shape & { collations: string[] }> {
  const cols = await sql`
    SELECT column_name AS name, data_type AS type, is_nullable = 'NO' AS not_null, column_default AS dflt, is_identity = 'YES' AS identity,
           identity_generation AS generation, collation_name AS collation
    FROM information_schema.columns WHERE table_schema = 'public' AND table_name = ${table} ORDER BY ordinal_position`
  const columns = cols.map((c: any) => ({
    name: c.name,
    type: c.type,
    notNull: c.not_null,
    // Casts PostgreSQL adds to a constant ('redirect'::text) are not part of the value.
    default: c.identity
      ? c.generation === 'ALWAYS'
        ? 'identity'
        : 'identity by default'
      : constantDefault(c.dflt === null ? null : String(c.dflt).replace(/::(text|bigint|integer)$/, '')),
  }))
  const ixs = await sql`
    SELECT i.relname AS name, x.indisunique AS unique, x.indisprimary AS primary,
           (SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM unnest(x.indkey) WITH ORDINALITY AS k(attnum, n)
              JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum) AS cols
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = ${table}::regclass`
  const unique = ixs
    .filter((i: any) => i.unique)
    .map((i: any) => i.cols as string)
    .sort()
  const primaryKey = (ixs.find((i: any) => i.primary)?.cols ?? '').split(',').filter(Boolean)
  const indexes: Record<string, string> = {}
  for (const i of ixs) if (!i.unique) indexes[i.name] = i.cols
  const fks = await sql`
    SELECT a.attname AS from, c.confrelid::regclass::text AS table, r.attname AS to, c.confdeltype AS on_delete
    FROM pg_constraint c
    JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
    JOIN pg_attribute r ON r.attrelid = c.confrelid AND r.attnum = c.confkey[1]
    WHERE c.contype = 'f' AND c.conrelid = ${table}::regclass AND cardinality(c.conkey) = 1`
  const foreignKeys = fks.map((f: any) => `${f.from} → ${f.table}(${f.to}) ON DELETE ${ON_DELETE[f.on_delete]}`).sort()
  const [checks] =
    await sql`SELECT count(*)::int AS n FROM pg_constraint WHERE contype = 'c' AND conrelid = ${table}::regclass`
  const triggers = (
    await sql`SELECT tgname AS name FROM pg_trigger WHERE tgrelid = ${table}::regclass AND NOT tgisinternal ORDER BY tgname`
  ).map((t: any) => t.name)
  const collations = cols.filter((c: any) => c.type === 'text').map((c: any) => `${c.name}: ${c.collation}`)
  return { columns, primaryKey, unique, indexes, foreignKeys, checks: checks.n, triggers, collations }
}

const sqliteTables = () =>
  (
    lite
      .query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
      .all() as { name: string }[]
  ).map((t) => t.name)

describe("the PostgreSQL schema is the same as SQLite's newest, mechanically", () => {
  test('the migration lists are in step: PostgreSQL ends at the SQLite version, versions rise, the first is the baseline 14', () => {
    expect(PG_SCHEMA_VERSION).toBe(migrations.length)
    expect(pgMigrations[0]!.version).toBe(14)
    for (let i = 1; i < pgMigrations.length; i++)
      expect(pgMigrations[i]!.version).toBe(pgMigrations[i - 1]!.version + 1)
    expect(migrated.schema).toBe(migrations.length)
  })

  test('the same tables (and linkbox_schema, the version row)', async () => {
    const tables = (
      await migrated.sql`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`
    ).map((t: any) => t.name)
    expect(tables.length).toBeGreaterThan(20)
    expect(tables).toEqual([...sqliteTables(), 'linkbox_schema'].sort())
  })

  test('every table: columns (order, type, nullability, default), primary key, unique indexes, indexes, foreign keys, checks, triggers', async () => {
    for (const table of sqliteTables()) {
      const want = sqliteShape(lite, table)
      const { collations, ...got } = await pgShape(migrated.sql, table)
      expect({ table, ...got }).toEqual({ table, ...want })
      // Text compares byte by byte, as in SQLite, whatever collation the database was made with.
      for (const c of collations) expect(c).toEndWith(': C')
    }
  })

  test('a column SQLite has and PostgreSQL lacks is found (the comparison can fail)', async () => {
    const db = await pg.createDatabase()
    const other = await openPostgres(db)
    try {
      await other.sql`ALTER TABLE links DROP COLUMN disabled`
      const got = await pgShape(other.sql, 'links')
      expect(got.columns.map((c) => c.name)).not.toEqual(sqliteShape(lite, 'links').columns.map((c) => c.name))
      await other.sql`ALTER TABLE link_tags DROP CONSTRAINT link_tags_account_id_fkey`
      await other.sql`ALTER TABLE link_tags ADD FOREIGN KEY (account_id) REFERENCES accounts(id) ON DELETE CASCADE`
      expect((await pgShape(other.sql, 'link_tags')).foreignKeys).not.toEqual(
        sqliteShape(lite, 'link_tags').foreignKeys,
      )
    } finally {
      await other.close()
    }
  })
})

describe('openPostgres', () => {
  test('two nodes starting at once on an empty database: one migrates, the other waits and finds it done; one version row', async () => {
    const url = await pg.createDatabase()
    const [a, b] = await Promise.all([openPostgres(url), openPostgres(url)])
    try {
      expect([a.schema, b.schema]).toEqual([PG_SCHEMA_VERSION, PG_SCHEMA_VERSION])
      const rows = await a.sql`SELECT version FROM linkbox_schema`
      expect(rows.map((r: any) => r.version)).toEqual([PG_SCHEMA_VERSION])
      // Nobody holds the lock afterwards.
      const [held] = await a.sql`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted`
      expect(held.n).toBe(0)
    } finally {
      await Promise.all([a.close(), b.close()])
    }
    const again = await openPostgres(url) // a restart: nothing to do
    expect(again.schema).toBe(PG_SCHEMA_VERSION)
    expect((await again.sql`SELECT count(*)::int AS n FROM linkbox_schema`)[0].n).toBe(1)
    await again.close()
  }, 60_000)

  test('a node that finds the lock held waits for it (another node migrating), then opens', async () => {
    const url = await pg.createDatabase()
    const holder = new Bun.SQL(url, { max: 1 })
    await holder`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY.toString()}::bigint)`
    let opened = false
    const opening = openPostgres(url).then((db) => ((opened = true), db))
    await Bun.sleep(300)
    expect(opened).toBe(false)
    const [none] = await holder`SELECT to_regclass('links') IS NULL AS missing`
    expect(none.missing).toBe(true)
    await holder`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY.toString()}::bigint)`
    const db = await opening
    expect(db.schema).toBe(PG_SCHEMA_VERSION)
    await Promise.all([db.close(), holder.close()])
  }, 60_000)

  test('a database whose schema is newer than this linkbox is refused, and left as it is', async () => {
    const url = await pg.createDatabase()
    const first = await openPostgres(url)
    await first.sql`UPDATE linkbox_schema SET version = ${PG_SCHEMA_VERSION + 1}`
    await first.close()
    let error: unknown
    try {
      await openPostgres(url)
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(DatabaseError)
    expect((error as Error).message).toMatch(
      new RegExp(
        `^postgres://lb_[0-9a-f]+@127\\.0\\.0\\.1:\\d+/t_[0-9a-f]+ has schema ${PG_SCHEMA_VERSION + 1}, this linkbox knows ${PG_SCHEMA_VERSION}: upgrade linkbox on this node`,
      ),
    )
    const check = new Bun.SQL(url)
    expect((await check`SELECT version FROM linkbox_schema`)[0].version).toBe(PG_SCHEMA_VERSION + 1)
    await check.close()
  })

  test("a database with someone else's links table is refused, nothing created", async () => {
    const url = await pg.createDatabase()
    const other = new Bun.SQL(url)
    await other`CREATE TABLE links (x int)`
    await expect(openPostgres(url)).rejects.toThrow(/has tables named like linkbox's .* it is not a linkbox database/)
    expect((await other`SELECT to_regclass('linkbox_schema') IS NULL AS missing`)[0].missing).toBe(true)
    await other.close()
  })

  test("the URL's database is the one used, even with PGDATABASE set (Bun.SQL would let it win over the URL)", async () => {
    const url = await pg.createDatabase()
    const decoy = await pg.createDatabase()
    process.env.PGDATABASE = decoy.slice(decoy.lastIndexOf('/') + 1)
    try {
      const db = await openPostgres(url)
      expect((await db.sql`SELECT current_database() AS name`)[0].name).toBe(url.slice(url.lastIndexOf('/') + 1))
      await db.close()
      const other = new Bun.SQL(decoy)
      expect((await other`SELECT to_regclass('linkbox_schema') IS NULL AS missing`)[0].missing).toBe(true)
      await other.close()
    } finally {
      delete process.env.PGDATABASE
    }
  })

  test('a server that is not there: a DatabaseError naming the redacted URL and the cause, never the password', async () => {
    const password = 'hunter2-very-secret'
    const url = `postgres://linkbox:${password}@127.0.0.1:1/linkbox`
    const error = await openPostgres(url, { connectionTimeout: 3 }).catch((err) => err)
    expect(error).toBeInstanceOf(DatabaseError)
    expect(error.message).toBe(
      'postgres://linkbox:***@127.0.0.1:1/linkbox: connection refused: is PostgreSQL running on that host and port?',
    )
    expect(error.message).not.toContain(password)
  })
})

describe('the triggers do what SQLite’s do', () => {
  test('link_counts: insert, delete, owner change, an account deleted (its links to owner 0, its row gone)', async () => {
    const db = await openPostgres(await pg.createDatabase())
    const { sql } = db
    const counts = async () =>
      Object.fromEntries(
        (await sql`SELECT owner, links FROM link_counts ORDER BY owner`).map((r: any) => [
          Number(r.owner),
          Number(r.links),
        ]),
      )
    try {
      const [alice] = await sql`INSERT INTO accounts (name, created) VALUES ('alice', 1) RETURNING id`
      const [bob] = await sql`INSERT INTO accounts (name, created) VALUES ('bob', 1) RETURNING id`
      const link = (code: string, account: unknown) =>
        sql`INSERT INTO links (code, long_url, account_id, created, updated) VALUES (${code}, 'https://example.com/', ${account}, 1, 1) RETURNING id`
      await link('a1', alice.id)
      await link('a2', alice.id)
      const [b1] = await link('b1', bob.id)
      await link('n1', null)
      expect(await counts()).toEqual({ 0: 1, [alice.id]: 2, [bob.id]: 1 })
      // One statement of several rows and owners (a group of creations, storage-postgres.ts): each owner
      // gets its rows' count (migration 19 counts a statement's rows, not a row at a time).
      await sql`INSERT INTO links (code, long_url, account_id, created, updated) VALUES
        ('g1', 'https://example.com/', ${bob.id}, 1, 1), ('g2', 'https://example.com/', ${alice.id}, 1, 1),
        ('g3', 'https://example.com/', NULL, 1, 1), ('g4', 'https://example.com/', ${bob.id}, 1, 1)`
      expect(await counts()).toEqual({ 0: 2, [alice.id]: 3, [bob.id]: 3 })
      await sql`DELETE FROM links WHERE code IN ('g1', 'g2', 'g3', 'g4')`
      expect(await counts()).toEqual({ 0: 1, [alice.id]: 2, [bob.id]: 1 })
      await sql`UPDATE links SET account_id = ${alice.id} WHERE id = ${b1.id}`
      await sql`UPDATE links SET long_url = 'https://example.org/' WHERE id = ${b1.id}` // not an owner change
      expect(await counts()).toEqual({ 0: 1, [alice.id]: 3, [bob.id]: 0 })
      await sql`DELETE FROM links WHERE code = 'n1'`
      await sql`DELETE FROM accounts WHERE id = ${alice.id}` // ON DELETE SET NULL moves its links to owner 0
      expect(await counts()).toEqual({ 0: 3, [bob.id]: 0 })
      expect((await sql`SELECT count(*)::int AS n FROM links WHERE account_id IS NULL`)[0].n).toBe(3)
    } finally {
      await db.close()
    }
  })

  test('mail: a mailbox counts its messages and bytes; the inline bytes go with the last message naming them', async () => {
    const db = await openPostgres(await pg.createDatabase())
    const { sql } = db
    try {
      const [acc] = await sql`INSERT INTO accounts (name, created) VALUES ('m', 1) RETURNING id`
      const [box] =
        await sql`INSERT INTO mailboxes (address, account_id, created, expires) VALUES ('x@localhost', ${acc.id}, 1, 2) RETURNING id`
      await sql`INSERT INTO mail_inline (blob, raw, body) VALUES ('b1', ${Buffer.from([0, 1, 2, 255])}, '{}')`
      await sql`INSERT INTO mail_inline_parts (blob, part, data) VALUES ('b1', 1, ${Buffer.from('att')})`
      const message = (size: number) =>
        sql`INSERT INTO mail_messages (mailbox_id, blob, received, size, envelope_from, from_address, from_name, subject, intro, attachments)
            VALUES (${box.id}, 'b1', 1, ${size}, '', '', '', '', '', 1) RETURNING id`
      const [m1] = await message(100)
      await message(50)
      expect((await sql`SELECT messages, bytes FROM mailboxes`)[0]).toEqual({ messages: '2', bytes: '150' })
      expect((await sql`SELECT raw FROM mail_inline`)[0].raw).toEqual(Buffer.from([0, 1, 2, 255]))
      await sql`DELETE FROM mail_messages WHERE id = ${m1.id}`
      expect((await sql`SELECT messages, bytes FROM mailboxes`)[0]).toEqual({ messages: '1', bytes: '50' })
      expect((await sql`SELECT count(*)::int AS n FROM mail_inline`)[0].n).toBe(1) // still named by the other
      await sql`DELETE FROM mailboxes`
      expect(
        (
          await sql`SELECT (SELECT count(*) FROM mail_inline)::int AS a, (SELECT count(*) FROM mail_inline_parts)::int AS b`
        )[0],
      ).toEqual({ a: 0, b: 0 })
    } finally {
      await db.close()
    }
  })

  test("ids are the database's (an explicit one is refused) and never reused; webhook_id is msg_ and 32 hex digits, different each time", async () => {
    const db = await openPostgres(await pg.createDatabase())
    const { sql } = db
    try {
      await expect(sql`INSERT INTO accounts (id, name, created) VALUES (5, 'x', 1)`).rejects.toThrow(
        /cannot insert a non-DEFAULT value into column "id"/,
      )
      const [a] = await sql`INSERT INTO accounts (name, created) VALUES ('a', 1) RETURNING id`
      await sql`DELETE FROM accounts WHERE id = ${a.id}`
      const [b] = await sql`INSERT INTO accounts (name, created) VALUES ('b', 1) RETURNING id`
      expect(Number(b.id)).toBeGreaterThan(Number(a.id))
      const ids = new Set<string>()
      for (let i = 0; i < 20; i++) {
        const [e] =
          await sql`INSERT INTO webhook_events (account_id, type, created, payload) VALUES (${b.id}, 'link.created', 1, '{}') RETURNING webhook_id`
        expect(e.webhook_id).toMatch(/^msg_[0-9a-f]{32}$/)
        ids.add(e.webhook_id)
      }
      expect(ids.size).toBe(20)
      await expect(
        sql`INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at) VALUES (1, 1, 'sent', 1)`,
      ).rejects.toThrow(/check constraint|foreign key/)
    } finally {
      await db.close()
    }
  })
})
