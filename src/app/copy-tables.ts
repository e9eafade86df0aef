// The table-by-table part of the copy between engines: the tables in foreign-key order, read from the SQLite file
// itself, copied in pages of their primary key with their ids; a table without a rule stops the copy.
import type { SQL } from 'bun'
import type { SQLQueryBindings } from 'bun:sqlite'
import { Refusal } from './archive'
import type { Db } from '../db/sqlite/index'

/** Rows per INSERT (fewer for wide tables: a statement takes at most 65,535 parameters). */
export const PAGE_ROWS = 500
/** How long the copy waits for a lock on the target's tables (another session using them) before it gives up. */
export const LOCK_TIMEOUT = '10s'

/** Tables not copied row for row, and why. */
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
export const DERIVING_TRIGGERS = [
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

export const q = (name: string) => `"${name.replace(/"/g, '""')}"`

/** The tables to copy, parents before children (Kahn's order, ties by name); anything unknown is an error. */
export function planTables(
  db: Db,
  pgColumns: Map<string, { name: string; type: string; identity: boolean }[]>,
): TablePlan[] {
  const names = (
    db.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]
  )
    .map((t) => t.name)
    .filter((n) => !n.startsWith('sqlite_') && !Object.hasOwn(SPECIAL, n))
  for (const name of pgColumns.keys())
    if (name !== PG_BOOKKEEPING && !Object.hasOwn(SPECIAL, name) && !names.includes(name))
      throw new Refusal(
        `migrate: the PostgreSQL database has a table "${name}" that the SQLite database has not; this copy does not know how to fill it`,
      )
  const plans = new Map<string, TablePlan>()
  const parents = new Map<string, Set<string>>()
  for (const name of names) {
    const target = pgColumns.get(name)
    if (!target)
      throw new Refusal(
        `migrate: the SQLite table "${name}" has no counterpart in PostgreSQL; this copy does not know where it goes`,
      )
    const info = db.query(`PRAGMA table_info(${q(name)})`).all() as { name: string; pk: number }[]
    const columns = info.map((c) => c.name)
    const pgNames = target.map((c) => c.name)
    if (columns.length !== pgNames.length || columns.some((c) => !pgNames.includes(c)))
      throw new Refusal(
        `migrate: the table "${name}" has the columns ${columns.join(', ')} on SQLite and ${pgNames.join(', ')} on PostgreSQL; this copy does not know how to map them`,
      )
    const primaryKey = info
      .filter((c) => c.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((c) => c.name)
    if (primaryKey.length === 0)
      throw new Refusal(`migrate: the SQLite table "${name}" has no primary key to copy it in pages by`)
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
      if (!plans.has(parent))
        throw new Refusal(
          `migrate: the table "${name}" refers to "${parent}", which is not copied; this copy does not know how to order it`,
        )
  const ordered: TablePlan[] = []
  const done = new Set<string>()
  while (ordered.length < plans.size) {
    const next = [...plans.keys()].find((n) => !done.has(n) && [...parents.get(n)!].every((p) => done.has(p)))
    if (!next)
      throw new Refusal(
        `migrate: the foreign keys of ${[...plans.keys()].filter((n) => !done.has(n)).join(', ')} form a cycle; this copy does not know which to copy first`,
      )
    done.add(next)
    ordered.push(plans.get(next)!)
  }
  return ordered
}

/** Every table of the target's schema with its columns: name, type, identity. */
export async function targetColumns(
  sql: SQL,
): Promise<Map<string, { name: string; type: string; identity: boolean }[]>> {
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
export async function nonEmpty(sql: SQL, tables: string[]): Promise<string[]> {
  const found: string[] = []
  for (const t of tables)
    if (t !== PG_BOOKKEEPING && (await sql.unsafe(`SELECT EXISTS (SELECT 1 FROM ${q(t)}) AS any`))[0].any) found.push(t)
  return found
}

/** A SQLite value as a parameter: 64-bit integers as their decimal text (cast to bigint by the statement), exactly. */
const param = (v: unknown) => (typeof v === 'bigint' ? v.toString() : v)

/** Copies one table in pages of its primary key; the number of rows. */
export async function copyTable(db: Db, tx: SQL, plan: TablePlan): Promise<number> {
  const perPage = Math.max(1, Math.min(PAGE_ROWS, Math.floor(60_000 / plan.columns.length)))
  const cols = plan.columns.map(q).join(', ')
  const key = plan.primaryKey.map(q).join(', ')
  const first = db.query(`SELECT ${cols} FROM ${q(plan.name)} ORDER BY ${key} LIMIT ${perPage}`).safeIntegers(true)
  const after = db
    .query(
      `SELECT ${cols} FROM ${q(plan.name)} WHERE (${key}) > (${plan.primaryKey.map(() => '?').join(', ')}) ORDER BY ${key} LIMIT ${perPage}`,
    )
    .safeIntegers(true)
  const head = `INSERT INTO ${q(plan.name)} (${cols})${plan.identity ? ' OVERRIDING SYSTEM VALUE' : ''} VALUES `
  let rows = 0
  let last: Record<string, unknown> | null = null
  for (;;) {
    const page = (
      last === null ? first.all() : after.all(...(plan.primaryKey.map((k) => last![k]) as SQLQueryBindings[]))
    ) as Record<string, unknown>[]
    if (page.length === 0) break
    const params: unknown[] = []
    const tuples = page.map(
      (row) => `(${plan.columns.map((c, i) => `$${params.push(param(row[c]))}::${plan.types[i]}`).join(', ')})`,
    )
    await tx.unsafe(head + tuples.join(', '), params)
    rows += page.length
    last = page[page.length - 1]!
    if (page.length < perPage) break
  }
  return rows
}

/** The sequence behind a table's identity column, as a name fit for SQL. */
export async function sequenceOf(tx: SQL, plan: TablePlan): Promise<string> {
  const [row] = await tx`SELECT pg_get_serial_sequence(${q(plan.name)}, ${plan.identity}) AS name`
  if (!row?.name) throw new Refusal(`backup: the identity of ${plan.name}.${plan.identity} has no sequence`)
  return row.name as string
}
