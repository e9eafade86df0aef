// Upgrades (issue 12): a data directory written by the previous schema's linkbox — the real source of the
// commit before the newest migration, taken out of git history and run as `bun src/main.ts account create`
// — is served by this one, which first copies the database to data_dir/backups/. A database newer than this
// linkbox is refused by serve and by every command that opens it, with one line and exit 1.
import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, statSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { KEPT_MIGRATION_COPIES, openDatabase } from '../../src/db/sqlite'
import { migrations } from '../../src/db/sqlite/migrations'
import {
  REPO_ROOT,
  apiPost,
  createAccount,
  killAllServers,
  removeDir,
  runCli,
  startServer,
  tempDir,
  writeConfig,
  type TestConfig,
} from '../support/server'

setDefaultTimeout(60_000)

const dirs: string[] = []
afterAll(async () => {
  await killAllServers()
  dirs.forEach(removeDir)
})

function freshConfig(): TestConfig {
  const config = writeConfig(tempDir('linkbox-upgrade-'))
  dirs.push(config.dir)
  return config
}

const userVersion = (path: string) => {
  const db = new Database(path, { readonly: true })
  try {
    return (db.query('PRAGMA user_version').get() as { user_version: number }).user_version
  } finally {
    db.close()
  }
}

/**
 * The source tree of the last commit before the newest migration (`git archive`, so the repository's
 * worktrees are not touched), with this checkout's node_modules. Null where git history is not at hand (a shallow clone).
 */
function previousRelease(): { command: string[]; commit: string } | null {
  const git = (...args: string[]) => Bun.spawnSync(['git', '-C', REPO_ROOT, ...args])
  // The commit that added the newest migration: its comment opens with "/* <number>: ". The oldest commit that
  // changed that text under src/, since the list has moved between files since (a move changes it too).
  const found = git('log', '--format=%H', '-S', `/* ${migrations.length}: `, '--', 'src')
  const introducing = found.stdout.toString().trim().split('\n').at(-1) ?? ''
  if (found.exitCode !== 0 || !introducing) return null
  const commit = git('rev-parse', `${introducing}^`).stdout.toString().trim()
  if (!/^[0-9a-f]{40}$/.test(commit)) return null
  const dir = mkdtempSync(join(tmpdir(), 'linkbox-previous-'))
  dirs.push(dir)
  const archive = join(dir, 'src.tar')
  if (git('archive', '--format=tar', '-o', archive, commit, 'src', 'package.json').exitCode !== 0) return null
  if (Bun.spawnSync(['tar', '-xf', archive, '-C', dir]).exitCode !== 0) return null
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'))
  return { command: [process.execPath, join(dir, 'src', 'main.ts')], commit }
}

/** A database at schema `version` made by this code's first `version` migrations (the fallback, and for counting copies). */
function databaseAtSchema(path: string, version: number) {
  const db = new Database(path, { create: true })
  for (let v = 0; v < version; v++) {
    const m = migrations[v]!
    db.transaction(() => {
      db.exec(typeof m === 'string' ? m : m.sql)
      db.exec(`PRAGMA user_version = ${v + 1}`)
    })()
  }
  db.close()
}

describe('a data directory of the previous schema', () => {
  test("written by the previous commit's linkbox, is served by this one after an automatic copy", async () => {
    const config = freshConfig()
    const previous = previousRelease()
    if (!previous)
      console.warn(
        'upgrade test: no git history here; the previous schema is made from all migrations but the newest instead',
      )
    const dbPath = join(config.dataDir, 'linkbox.db')
    let key: string
    if (previous) {
      key = await createAccount(config.configPath, 'olivia', { command: previous.command })
    } else {
      mkdirSync(config.dataDir, { mode: 0o700 })
      databaseAtSchema(dbPath, migrations.length - 1)
      key = await createAccount(config.configPath, 'olivia')
    }
    if (previous) expect(userVersion(dbPath)).toBe(migrations.length - 1)
    expect(existsSync(join(config.dataDir, 'backups'))).toBe(previous === null) // the fallback's account create already upgraded it

    const server = await startServer({ config })
    try {
      const made = await apiPost(
        server.url,
        'getLink.json',
        { url: 'https://example.org/after-upgrade' },
        { 'x-api-key': key },
      )
      expect(made.status).toBe(200)
    } finally {
      expect(await server.stop()).toBe(0)
    }
    expect(userVersion(dbPath)).toBe(migrations.length)
    const copies = readdirSync(join(config.dataDir, 'backups'))
    expect(copies.length).toBe(1)
    expect(copies[0]).toMatch(new RegExp(`^linkbox-schema${migrations.length - 1}-\\d{8}T\\d{9}Z\\.db$`))
    const copy = join(config.dataDir, 'backups', copies[0]!)
    expect(statSync(copy).mode & 0o777).toBe(0o600)
    expect(statSync(join(config.dataDir, 'backups')).mode & 0o777).toBe(0o700)
    // The operator is told, in the service's log, what happened and where the old database is.
    if (previous)
      expect(server.stdout()).toContain(
        `${dbPath}: schema ${migrations.length - 1} upgraded to ${migrations.length}; the database as it was is in ${copy}`,
      )
    expect(userVersion(copy)).toBe(migrations.length - 1)
    const old = new Database(copy, { readonly: true })
    expect(old.query('SELECT name FROM accounts').all()).toEqual(previous ? [{ name: 'olivia' }] : []) // the fallback copies before the account exists
    old.close()
  })

  test(`only the newest ${KEPT_MIGRATION_COPIES} automatic copies are kept; an up-to-date database is not copied`, async () => {
    const dir = tempDir('linkbox-upgrade-copies-')
    dirs.push(dir)
    const template = join(dir, 'template.db')
    databaseAtSchema(template, 1)
    const db = join(dir, 'linkbox.db')
    for (let i = 0; i < 5; i++) {
      for (const suffix of ['', '-wal', '-shm']) if (existsSync(db + suffix)) removeDir(db + suffix)
      copyFileSync(template, db)
      openDatabase(db).close()
      await Bun.sleep(5) // the copies are named by the millisecond
    }
    const copies = readdirSync(join(dir, 'backups')).sort()
    expect(copies.length).toBe(KEPT_MIGRATION_COPIES)
    openDatabase(db).close() // schema current: nothing to copy
    expect(readdirSync(join(dir, 'backups')).sort()).toEqual(copies)
  })
})

describe('a database newer than this linkbox', () => {
  test('is refused by serve, account create and doctor with one line, exit 1, and left as it is', async () => {
    const config = freshConfig()
    await createAccount(config.configPath, 'nina')
    const dbPath = join(config.dataDir, 'linkbox.db')
    const db = new Database(dbPath)
    db.exec(`PRAGMA user_version = ${migrations.length + 1}`)
    db.close()
    const line = `linkbox: ${dbPath} has schema ${migrations.length + 1}, this linkbox knows ${migrations.length}: upgrade linkbox (or restore a backup made by this version)\n`
    for (const args of [['serve'], ['account', 'create', 'other']]) {
      const r = await runCli([...args, '--config', config.configPath])
      expect(r.stderr).toBe(line)
      expect(r.code).toBe(1)
    }
    const doctor = await runCli(['doctor', '--config', config.configPath])
    expect(doctor.code).toBe(1)
    expect(doctor.stdout).toContain(`FAIL  database         ${dbPath} has schema ${migrations.length + 1}`)
    expect(userVersion(dbPath)).toBe(migrations.length + 1)
    expect(existsSync(join(config.dataDir, 'backups'))).toBe(false)
  })
})
