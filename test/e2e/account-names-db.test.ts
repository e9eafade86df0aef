// Account names in any case, held by the database too (migration 23, issue 36): a new name or a rename equal
// to another account's in another case is refused by both engines, whoever writes; a database that holds
// both spellings from before migrates without failing and keeps both; such a database also copies both ways
// (`linkbox migrate` SQLite → PostgreSQL, and backup's PostgreSQL → SQLite), which switch the check off.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { closeSync, openSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase } from '../../src/db/sqlite'
import { migrations } from '../../src/db/sqlite/migrations'
import { openPostgres } from '../../src/db/postgres'
import { copyIntoSqlite } from '../../src/app/copy-postgres'
import { sharedPostgres, type Postgres } from '../support/postgres'
import { removeDir, runCli, tempDir, writeConfig } from '../support/server'

let pg: Postgres
const dirs: string[] = []
beforeAll(async () => {
  pg = await sharedPostgres()
}, 120_000)
afterAll(async () => {
  dirs.forEach(removeDir)
  await pg?.stop()
})
const dir = () => {
  const d = tempDir('linkbox-names-')
  dirs.push(d)
  return d
}
const names = (rows: { name: string }[]) => rows.map((r) => r.name)

describe('SQLite', () => {
  test('a database holding carol and Carol from before migrates (both kept); then CAROL, a rename to ALICE and Dave beside dave are refused', () => {
    const path = join(dir(), 'linkbox.db')
    const old = new Database(path, { create: true, strict: true })
    for (const m of migrations.slice(0, 22)) old.exec(typeof m === 'string' ? m : m.sql)
    old.exec('PRAGMA user_version = 22')
    old.exec(
      "INSERT INTO accounts (name, admin, created) VALUES ('alice', 1, 1), ('carol', 0, 2), ('Carol', 0, 3), ('marketplace:Bob', 0, 4)",
    )
    old.close()

    const db = openDatabase(path)
    try {
      expect(db.query('PRAGMA user_version').get()).toEqual({ user_version: migrations.length })
      expect(names(db.query('SELECT name FROM accounts ORDER BY id').all() as { name: string }[])).toEqual([
        'alice',
        'carol',
        'Carol',
        'marketplace:Bob',
      ])
      const insert = (name: string) =>
        db.query('INSERT INTO accounts (name, admin, created) VALUES (?, 0, 9)').run(name)
      expect(() => insert('CAROL')).toThrow('account name taken in another case')
      expect(() => insert('alice')).toThrow(/UNIQUE constraint failed: accounts.name/) // the same spelling: the UNIQUE constraint's
      insert('dave')
      expect(() => insert('Dave')).toThrow('account name taken in another case')
      expect(() => db.query("UPDATE accounts SET name = 'ALICE' WHERE name = 'dave'").run()).toThrow(
        'account name taken in another case',
      )
      db.query("UPDATE accounts SET name = 'Dave' WHERE name = 'dave'").run() // its own name in another case
      insert('marketplace:bob') // the marketplace's made-up names stay exact
      expect((db.query('SELECT count(*) AS n FROM accounts').get() as { n: number }).n).toBe(6)
    } finally {
      db.close()
    }
  })
})

describe('PostgreSQL', () => {
  test('a database holding carol and Carol at schema 22 migrates (both kept); then CAROL and a rename are refused; Dana and dana at once: one', async () => {
    const url = await pg.createDatabase()
    const first = await openPostgres(url)
    // Schema 22 as it was: without migration 23's trigger and function, 24's pending imports, 25's webhook columns and
    // table, 26's link columns, index and images (the UNIQUE on code alone back), 27's media cookies, 28's media downloads.
    await first.sql.unsafe(`
      DROP TRIGGER accounts_name_any_case ON accounts; DROP TRIGGER accounts_name_any_case_update ON accounts;
      DROP FUNCTION accounts_name_any_case(); DROP TABLE webhook_attempts; DROP TABLE pending_imports;
      ALTER TABLE webhook_endpoints DROP COLUMN previous_secret, DROP COLUMN previous_until;
      DROP TABLE media_cookies; DROP TABLE link_images; DROP INDEX links_domain_code; DROP INDEX links_meta_due; DROP TABLE media_downloads;
      ALTER TABLE links DROP COLUMN domain, DROP COLUMN expired_url, DROP COLUMN og_title, DROP COLUMN og_description,
        DROP COLUMN og_image, DROP COLUMN meta_due;
      ALTER TABLE links ADD CONSTRAINT links_code_key UNIQUE (code);
      UPDATE linkbox_schema SET version = 22;
      INSERT INTO accounts (name, admin, created) VALUES ('alice', 1, 1), ('carol', 0, 2), ('Carol', 0, 3);`)
    await first.close()

    const db = await openPostgres(url)
    try {
      expect((await db.sql`SELECT version FROM linkbox_schema`)[0].version).toBeGreaterThanOrEqual(23)
      expect(names(await db.sql`SELECT name FROM accounts ORDER BY id`)).toEqual(['alice', 'carol', 'Carol'])
      const insert = (name: string) => db.sql`INSERT INTO accounts (name, admin, created) VALUES (${name}, 0, 9)`
      const refusal = await insert('CAROL').then(
        () => null,
        (err: { errno?: string; message: string }) => err,
      )
      expect(refusal?.errno).toBe('23505')
      expect(refusal?.message).toContain('account name taken in another case')
      // The same spelling is the unique index's (ON CONFLICT (name) DO NOTHING still works).
      expect(
        await db.sql`INSERT INTO accounts (name, admin, created) VALUES ('alice', 0, 9) ON CONFLICT (name) DO NOTHING RETURNING id`,
      ).toHaveLength(0)
      await insert('dave')
      await expect(db.sql`UPDATE accounts SET name = 'ALICE' WHERE name = 'dave'`).rejects.toThrow(
        'account name taken in another case',
      )
      await db.sql`UPDATE accounts SET name = 'Dave' WHERE name = 'dave'`
      // Two connections at once, the first's transaction held open: the second waits for its commit, then is refused.
      const a = db.sql.begin(async (tx) => {
        await tx`INSERT INTO accounts (name, admin, created) VALUES ('Dana', 0, 9)`
        await Bun.sleep(300)
      })
      await Bun.sleep(50)
      const b = db.sql`INSERT INTO accounts (name, admin, created) VALUES ('dana', 0, 9)`.then(
        () => 'made',
        () => 'refused',
      )
      await a
      expect(await b).toBe('refused')
      expect(names(await db.sql`SELECT name FROM accounts WHERE lower(name) = 'dana'`)).toEqual(['Dana'])
    } finally {
      await db.close()
    }
  }, 60_000)

  test("a SQLite data_dir holding carol and Carol copies to PostgreSQL (linkbox migrate) and back (backup's copy), both kept, the check on again", async () => {
    const c = writeConfig(dir())
    expect((await runCli(['account', 'create', 'carol', '--config', c.configPath], { timeoutMs: 30_000 })).code).toBe(0)
    // Carol from before migration 23 (the trigger taken away for the insert, then made again).
    const lite = new Database(join(c.dataDir, 'linkbox.db'), { strict: true })
    const trigger = (
      lite.query("SELECT sql FROM sqlite_master WHERE name = 'accounts_name_any_case'").get() as { sql: string }
    ).sql
    lite.exec('DROP TRIGGER accounts_name_any_case')
    lite.exec("INSERT INTO accounts (name, admin, created) VALUES ('Carol', 0, 3)")
    lite.exec(trigger)
    lite.close()

    const url = await pg.createDatabase()
    const r = await runCli(['migrate', '--to', url, '--config', c.configPath], { timeoutMs: 60_000 })
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    const db = await openPostgres(url)
    try {
      expect(names(await db.sql`SELECT name FROM accounts ORDER BY id`)).toEqual(['carol', 'Carol'])
      await expect(db.sql`INSERT INTO accounts (name, admin, created) VALUES ('CAROL', 0, 9)`).rejects.toThrow(
        'account name taken in another case',
      )

      const snapshot = join(dir(), 'snapshot.db')
      await db.sql.begin(async (tx) => {
        await tx.unsafe('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY')
        closeSync(openSync(snapshot, 'wx', 0o600))
        const back = openDatabase(snapshot)
        try {
          await copyIntoSqlite(tx, back)
          expect(names(back.query('SELECT name FROM accounts ORDER BY id').all() as { name: string }[])).toEqual([
            'carol',
            'Carol',
          ])
          expect(() => back.query("INSERT INTO accounts (name, admin, created) VALUES ('CAROL', 0, 9)").run()).toThrow(
            'account name taken in another case',
          )
        } finally {
          back.close()
        }
      })
    } finally {
      await db.close()
    }
  }, 120_000)
})
