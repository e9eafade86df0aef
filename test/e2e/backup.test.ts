// Backup and restore (issue 12): the real service as a child process, data put in through its API and real
// SMTP, `linkbox backup` while it runs, then stop → wipe → `linkbox restore` → every table and file the same,
// and the old signed links still good. Also what restore must refuse: a running service (its lock, or its
// port answering /healthz), a damaged archive, a database newer than this linkbox, a data_dir in use.
import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { createHash, randomBytes } from 'node:crypto'
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import nodemailer from 'nodemailer'
import { openDatabase } from '../../src/db/sqlite'
import { sqliteTicketStorage } from '../../src/media/storage/sqlite'
import { createLinkSigner, loadSigningSecret } from '../../src/kernel/signing'
import {
  CHROME_UA,
  apiPost,
  createAccount,
  freePort,
  killAllServers,
  removeDir,
  runCli,
  startServer,
  tempDir,
  writeConfig,
  type RunningServer,
  type TestConfig,
} from '../support/server'
import { startReceiver, until, type Receiver } from '../support/webhooks'

setDefaultTimeout(90_000)

const dirs: string[] = []
afterAll(async () => {
  await killAllServers()
  dirs.forEach(removeDir)
})

const DOMAIN = 'backup.test'

async function mailConfig(): Promise<TestConfig> {
  const config = writeConfig(tempDir('linkbox-backup-'), {
    mail: { smtp_host: '127.0.0.1', smtp_port: await freePort(), domains: [DOMAIN] },
    media: { allow_private_networks: true }, // the webhook endpoint below is on 127.0.0.1
  })
  dirs.push(config.dir)
  return config
}

function plainConfig(overrides = {}): TestConfig {
  const config = writeConfig(tempDir('linkbox-backup-'), overrides)
  dirs.push(config.dir)
  return config
}

/** Every row of every table (sqlite_sequence too: ids are never reused), in rowid order. */
function dumpTables(dataDir: string): Record<string, unknown[]> {
  const db = new Database(join(dataDir, 'linkbox.db'), { readonly: true })
  try {
    const tables = (
      db.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]
    ).map((t) => t.name)
    const dump: Record<string, unknown[]> = {}
    for (const t of tables) {
      const withoutRowid = (
        db.query('SELECT sql FROM sqlite_master WHERE name = ?').get(t) as { sql: string }
      ).sql.includes('WITHOUT ROWID')
      dump[t] = db.query(`SELECT * FROM "${t}" ${withoutRowid ? '' : 'ORDER BY rowid'}`).all()
    }
    dump.user_version = [db.query('PRAGMA user_version').get()]
    return dump
  } finally {
    db.close()
  }
}

/** sha256 of every file under data_dir/secrets and data_dir/mail (its blobs; incoming/ is in flight). */
function fileHashes(dataDir: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string) => {
    if (!existsSync(dir)) return
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name)
      if (e.isDirectory()) {
        if (e.name !== 'incoming') walk(path)
      } else out[relative(dataDir, path)] = createHash('sha256').update(readFileSync(path)).digest('hex')
    }
  }
  walk(join(dataDir, 'secrets'))
  walk(join(dataDir, 'mail'))
  return out
}

async function startMail(config: TestConfig): Promise<RunningServer & { smtpPort: number }> {
  const server = await startServer({ config })
  for (const deadline = Date.now() + 15_000; ; ) {
    const m = server.stdout().match(/SMTP on \S+:(\d+) for /)
    if (m) return Object.assign(server, { smtpPort: Number(m[1]) })
    if (server.proc.exitCode !== null || Date.now() > deadline)
      throw new Error(`no SMTP line\n${server.stdout()}\n${server.stderr()}`)
    await Bun.sleep(20)
  }
}

const get = async (server: RunningServer, key: string, method: string, query: Record<string, string>) => {
  const res = await fetch(`${server.url}/api/${method}?${new URLSearchParams(query)}`, {
    headers: { 'x-api-key': key },
  })
  return { status: res.status, body: (await res.json()) as any }
}

/** A signed link names base_url; the bytes come from whichever server runs now. */
const fetchSigned = (server: RunningServer, signed: string) => {
  const u = new URL(signed)
  return fetch(`${server.url}${u.pathname}${u.search}`)
}

/** A made-up but well-formed ticket, inserted through the media store as an extraction would. */
async function addTickets(dataDir: string, accountId: number): Promise<number[]> {
  const db = openDatabase(join(dataDir, 'linkbox.db'))
  try {
    const now = Date.now()
    return await sqliteTicketStorage(db).insertAll(
      [1, 2].map((n) => ({
        account_id: accountId,
        page_url: `https://video.example/watch?v=${n}`,
        format_id: `${n}8`,
        method: 'direct' as const,
        upstream_url: `https://cdn.example/${n}.mp4`,
        headers: '{}',
        filename: `video ${n}.mp4`,
        content_type: 'video/mp4',
        created: now,
        expires: now + 6 * 3600_000,
      })),
    )
  } finally {
    db.close()
  }
}

describe('backup → wipe → restore', () => {
  test('links, clicks, accounts, keys, mailboxes, messages, attachments, tickets and webhooks come back identical', async () => {
    const config = await mailConfig()
    const adminKey = await createAccount(config.configPath, 'admin', { admin: true })
    const key = await createAccount(config.configPath, 'alice')
    const extra = await runCli([
      'key',
      'create',
      'alice',
      '--scopes',
      'links,mail',
      '--label',
      'phone',
      '--config',
      config.configPath,
    ])
    expect(extra.code).toBe(0)
    const hook = await runCli([
      'webhook',
      'create',
      'alice',
      'http://127.0.0.1:9/in',
      '--events',
      'link.deleted',
      '--config',
      config.configPath,
    ])
    expect(hook.code).toBe(0)
    const server = await startMail(config)
    let restored: RunningServer | undefined
    try {
      // Links and clicks.
      const codes: string[] = []
      for (let i = 0; i < 5; i++) {
        const r = await apiPost(server.url, 'getLink.json', { url: `https://example.org/${i}` }, { 'x-api-key': key })
        expect(r.status).toBe(200)
        codes.push(r.body.return.hex)
      }
      for (let i = 0; i < 3; i++)
        await fetch(`${server.url}/${codes[0]}`, { redirect: 'manual', headers: { 'user-agent': CHROME_UA } })
      // Mail over real SMTP: a small message (kept in the database) and a large one (files under mail/).
      const address = (await get(server, key, 'mailbox.json', { address: 'inbox' })).body.return.address
      const smtp = nodemailer.createTransport({
        host: '127.0.0.1',
        port: server.smtpPort,
        secure: false,
        ignoreTLS: true,
      } as any)
      const small = randomBytes(1000)
      const large = randomBytes(400 * 1024)
      await smtp.sendMail({
        from: 'a@example.org',
        to: address,
        subject: 'small',
        text: 'hello',
        attachments: [{ filename: 's.bin', content: small }],
      })
      await smtp.sendMail({
        from: 'b@example.org',
        to: address,
        subject: 'large',
        text: 'big one',
        attachments: [{ filename: 'l.bin', content: large }],
      })
      smtp.close()
      const list = (await get(server, key, 'messages.json', { address })).body.return
      expect(list.messages.length).toBe(2)
      const signedBefore: { url: string; bytes: Buffer }[] = []
      for (const m of list.messages) {
        const full = (await get(server, key, 'message.json', { address, id: String(m.id) })).body.return
        for (const a of full.attachments) {
          const res = await fetchSigned(server, a.url)
          expect(res.status).toBe(200)
          signedBefore.push({ url: a.url, bytes: Buffer.from(await res.arrayBuffer()) })
        }
      }
      expect(signedBefore.map((s) => s.bytes.length).sort((a, b) => a - b)).toEqual([small.length, large.length])
      expect(Object.keys(fileHashes(config.dataDir)).some((p) => p.endsWith('raw.eml'))).toBe(true) // the large one is on disk
      // Media tickets, and /dl links to them signed with the service's secret.
      const aliceId = (
        JSON.parse(JSON.stringify(dumpTables(config.dataDir).accounts)) as { id: number; name: string }[]
      ).find((a) => a.name === 'alice')!.id
      const tickets = await addTickets(config.dataDir, aliceId)
      const signer = createLinkSigner(loadSigningSecret(config.dataDir))
      const dl = `/dl/${tickets[0]}?${signer.sign(`dl-${tickets[0]}`, Date.now() + 3600_000).query}`
      const dlForged = `/dl/${tickets[0]}?${createLinkSigner(randomBytes(32)).sign(`dl-${tickets[0]}`, Date.now() + 3600_000).query}`
      const dlStatus = async (s: RunningServer, path: string) => {
        const res = await fetch(`${s.url}${path}`, { redirect: 'manual' })
        await res.body?.cancel()
        return res.status
      }
      const dlBefore = [await dlStatus(server, dl), await dlStatus(server, dlForged)]
      expect(dlBefore[1]).toBe(403)
      expect(dlBefore[0]).not.toBe(403)
      // The clicks are written (the recorder flushes each second).
      for (let i = 0; ; i++) {
        const stats = await apiPost(server.url, 'stats.json', { code: codes[0]! }, { 'x-api-key': key })
        if (stats.body.return?.clicks === 3) break
        if (i > 100) throw new Error(`clicks not flushed: ${JSON.stringify(stats.body)}`)
        await Bun.sleep(100)
      }

      // While it runs: backup works, restore is refused (the lock names the running service).
      const archive = join(config.dir, 'linkbox-backup.tar')
      const b = await runCli(['backup', archive, '--config', config.configPath])
      expect(b.stderr).toBe('')
      expect(b.code).toBe(0)
      expect(statSync(archive).mode & 0o777).toBe(0o600)
      expect(existsSync(`${archive}.tmp`)).toBe(false)
      expect(readdirSync(config.dataDir).filter((n) => n.startsWith('.backup-'))).toEqual([]) // the snapshot is gone
      const refused = await runCli(['restore', archive, '--force', '--config', config.configPath])
      expect(refused.code).toBe(1)
      expect(refused.stderr).toMatch(/^linkbox: restore: linkbox \(pid \d+\) holds .*linkbox\.lock; stop it first/)
      expect(refused.stderr.trim().split('\n').length).toBe(1)

      expect(await server.stop()).toBe(0)
      expect(existsSync(join(config.dataDir, 'linkbox.lock'))).toBe(false) // released on a clean stop
      const tablesBefore = dumpTables(config.dataDir)
      const filesBefore = fileHashes(config.dataDir)
      expect(tablesBefore.links!.length).toBe(5)
      expect(tablesBefore.media_tickets!.length).toBe(2)
      expect(tablesBefore.webhook_endpoints!.length).toBe(1)
      expect(tablesBefore.mail_messages!.length).toBe(2)
      expect(filesBefore['secrets/signing.key']).toBeDefined()

      // Wipe, restore, compare.
      rmSync(config.dataDir, { recursive: true, force: true })
      const r = await runCli(['restore', archive, '--config', config.configPath])
      expect(r.stderr).toBe('')
      expect(r.code).toBe(0)
      expect(r.stdout).toContain('restored')
      expect(dumpTables(config.dataDir)).toEqual(tablesBefore)
      expect(fileHashes(config.dataDir)).toEqual(filesBefore)
      expect(statSync(join(config.dataDir, 'secrets', 'signing.key')).mode & 0o777).toBe(0o600)
      expect(statSync(config.dataDir).mode & 0o777).toBe(0o700)

      // The restored service answers as before: the old signed links verify, the keys work.
      restored = await startMail(config)
      for (const s of signedBefore) {
        const res = await fetchSigned(restored, s.url)
        expect(res.status).toBe(200)
        expect(Buffer.from(await res.arrayBuffer()).equals(s.bytes)).toBe(true)
      }
      expect([await dlStatus(restored, dl), await dlStatus(restored, dlForged)]).toEqual(dlBefore)
      expect(
        (await apiPost(restored.url, 'stats.json', { code: codes[0]! }, { 'x-api-key': key })).body.return.clicks,
      ).toBe(3)
      expect((await apiPost(restored.url, 'links.json', {}, { 'x-api-key': adminKey })).status).toBe(200)
    } finally {
      if (server.proc.exitCode === null) await server.stop()
      if (restored) expect(await restored.stop()).toBe(0)
    }
  })
})

describe('webhook ids across a restore (issue 20)', () => {
  const receivers: Receiver[] = []
  afterAll(() => receivers.forEach((r) => r.stop()))

  test("backup → event → restore → event: the new event goes out under a new webhook-id, not the lost one's", async () => {
    const config = plainConfig({ media: { allow_private_networks: true } }) // the receiver is on 127.0.0.1
    const receiver = startReceiver()
    receivers.push(receiver)
    const key = await createAccount(config.configPath, 'hooks')
    const made = await runCli([
      'webhook',
      'create',
      'hooks',
      receiver.url,
      '--events',
      'link.created',
      '--config',
      config.configPath,
    ])
    expect(made.code).toBe(0)
    receiver.secret = made.stdout.trimEnd().split('\n').at(-1)!
    const hookId = /^webhook (\d+) for hooks/.exec(made.stdout)![1]!
    const linkFor = async (server: RunningServer, n: number) => {
      const r = await apiPost(server.url, 'getLink.json', { url: `https://example.org/${n}` }, { 'x-api-key': key })
      expect(r.status).toBe(200)
    }
    /** Waits until the receiver has `count` requests and the delivery log says every one is done. */
    const delivered = async (server: RunningServer, count: number) => {
      await until(() => receiver.got.length >= count, `${count} deliveries`)
      for (let i = 0; ; i++) {
        const log = await apiPost(
          server.url,
          'webhooks.json',
          { action: 'deliveries', id: hookId },
          { 'x-api-key': key },
        )
        if (log.body.return.deliveries.every((d: { state: string }) => d.state === 'ok')) return
        if (i > 200) throw new Error(`deliveries not recorded: ${JSON.stringify(log.body)}`)
        await Bun.sleep(20)
      }
    }

    let server = await startServer({ config })
    const archive = join(config.dir, 'before-the-second.tar')
    try {
      await linkFor(server, 1)
      await delivered(server, 1)
      expect((await runCli(['backup', archive, '--config', config.configPath])).code).toBe(0)
      await linkFor(server, 2) // lost by the restore, but its receiver has seen its id
      await delivered(server, 2)
      expect(await server.stop()).toBe(0)

      const restored = await runCli(['restore', archive, '--force', '--config', config.configPath])
      expect(restored.stderr).toBe('')
      expect(restored.code).toBe(0)
      server = await startServer({ config })
      await linkFor(server, 3)
      await delivered(server, 3)
      await Bun.sleep(200) // nothing else arrives (the first event was done before the backup: not sent again)
    } finally {
      if (server.proc.exitCode === null) expect(await server.stop()).toBe(0)
    }

    expect(receiver.got.length).toBe(3)
    for (const g of receiver.got) expect(g.verifyError).toBeNull()
    const urls = receiver.got.map((g) => JSON.parse(g.body).data.long_url)
    expect(urls).toEqual(['https://example.org/1', 'https://example.org/2', 'https://example.org/3'])
    const ids = receiver.got.map((g) => g.id)
    // A receiver that drops the ids it has seen (as Standard Webhooks asks) keeps all three events.
    expect(new Set(ids).size).toBe(3)
    for (const id of ids) expect(id).toMatch(/^msg_[0-9a-f]{32}$/)
    // The restored database holds the first event and the new one, each under the id it went out with.
    const db = new Database(join(config.dataDir, 'linkbox.db'), { readonly: true })
    try {
      const rows = db.query('SELECT webhook_id, payload FROM webhook_events ORDER BY id').all() as {
        webhook_id: string
        payload: string
      }[]
      expect(rows.map((r) => [r.webhook_id, JSON.parse(r.payload).data.long_url])).toEqual([
        [ids[0], 'https://example.org/1'],
        [ids[2], 'https://example.org/3'],
      ])
    } finally {
      db.close()
    }
  })
})

/** Makes a small data directory with an account and a link, and a backup of it; returns both. */
async function withBackup(): Promise<{ config: TestConfig; archive: string }> {
  const config = plainConfig()
  await createAccount(config.configPath, 'bob')
  const archive = join(config.dir, 'b.tar')
  const r = await runCli(['backup', archive, '--config', config.configPath])
  expect(r.code).toBe(0)
  return { config, archive }
}

/** One ustar entry as a tar program writes it: a 512-byte header (name up to 100 bytes), the bytes, padding. */
function tarEntry(name: string, data: Uint8Array): Buffer {
  const h = Buffer.alloc(512)
  h.write(name, 0, 100, 'utf8')
  h.write('0000600\0', 100, 'ascii')
  h.write('0000000\0', 108, 'ascii')
  h.write('0000000\0', 116, 'ascii')
  h.write(`${data.length.toString(8).padStart(11, '0')}\0`, 124, 'ascii')
  h.write('00000000000\0', 136, 'ascii')
  h.write('        ', 148, 'ascii') // the checksum counts itself as spaces
  h.write('0', 156, 'ascii')
  h.write('ustar\0', 257, 'ascii')
  h.write('00', 263, 'ascii')
  let sum = 0
  for (const byte of h) sum += byte
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii')
  return Buffer.concat([h, Buffer.from(data), Buffer.alloc((512 - (data.length % 512)) % 512)])
}

/** An archive of these entries with a manifest.json that lists each with its true size and sha256. */
function craftArchive(files: { path: string; data: Uint8Array }[]): Buffer {
  const manifest = {
    format: 'linkbox-backup',
    format_version: 1,
    version: 'crafted',
    schema: 1,
    created: new Date().toISOString(),
    files: files.map((f) => ({
      path: f.path,
      size: f.data.length,
      sha256: createHash('sha256').update(f.data).digest('hex'),
    })),
  }
  return Buffer.concat([
    ...files.map((f) => tarEntry(f.path, f.data)),
    tarEntry('manifest.json', Buffer.from(JSON.stringify(manifest))),
    Buffer.alloc(1024),
  ])
}

/** Where linkbox.db's bytes start in an archive: after the 512-byte header of the first entry (ours is first). */
const DB_DATA = 512

describe('restore refuses', () => {
  test('a service answering /healthz on the configured port, even without its lock file', async () => {
    const port = await freePort()
    const config = plainConfig({ server: { host: '127.0.0.1', port } })
    await createAccount(config.configPath, 'bob')
    const archive = join(config.dir, 'b.tar')
    expect((await runCli(['backup', archive, '--config', config.configPath])).code).toBe(0)
    const server = await startServer({ config })
    try {
      unlinkSync(join(config.dataDir, 'linkbox.lock'))
      const r = await runCli(['restore', archive, '--force', '--config', config.configPath])
      expect(r.code).toBe(1)
      expect(r.stderr).toBe(
        `linkbox: restore: a service answers /healthz on 127.0.0.1:${port}; stop it first (restore never writes under a running service)\n`,
      )
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })

  test('an archive with one byte changed, before it writes anything', async () => {
    const { config, archive } = await withBackup()
    const bytes = readFileSync(archive)
    bytes[DB_DATA + 200]! ^= 0x01
    const tampered = join(config.dir, 'tampered.tar')
    writeFileSync(tampered, bytes)
    rmSync(config.dataDir, { recursive: true })
    const r = await runCli(['restore', tampered, '--config', config.configPath])
    expect(r.code).toBe(1)
    expect(r.stderr).toBe(
      `linkbox: restore: ${tampered}: linkbox.db does not match its sha256 in manifest.json; the archive is damaged or was changed\n`,
    )
    expect(existsSync(config.dataDir)).toBe(false)
    // A file cut short, and one that is no archive at all.
    writeFileSync(tampered, bytes.subarray(0, 3000))
    expect((await runCli(['restore', tampered, '--config', config.configPath])).stderr).toMatch(
      /^linkbox: restore: .* (cut short|damaged)/,
    )
    writeFileSync(tampered, 'hello\n'.repeat(200))
    const junk = await runCli(['restore', tampered, '--config', config.configPath])
    expect(junk.code).toBe(1)
    expect(junk.stderr).toMatch(/^linkbox: restore: .*not a linkbox backup/)
    expect(existsSync(config.dataDir)).toBe(false)
    // The untouched archive restores.
    expect((await runCli(['restore', archive, '--config', config.configPath])).code).toBe(0)
  })

  test('a database newer than this linkbox (an archive repacked by GNU tar with schema 99)', async () => {
    const { config, archive } = await withBackup()
    const work = mkdtempSync(join(tmpdir(), 'linkbox-repack-'))
    dirs.push(work)
    expect(Bun.spawnSync(['tar', '-xf', archive, '-C', work]).exitCode).toBe(0)
    const db = new Database(join(work, 'linkbox.db'))
    db.exec('PRAGMA user_version = 99')
    db.close()
    const manifest = JSON.parse(readFileSync(join(work, 'manifest.json'), 'utf8'))
    for (const f of manifest.files) {
      const data = readFileSync(join(work, f.path))
      f.size = data.length
      f.sha256 = createHash('sha256').update(data).digest('hex')
    }
    writeFileSync(join(work, 'manifest.json'), JSON.stringify(manifest))
    const newer = join(config.dir, 'newer.tar')
    const tar = Bun.spawnSync([
      'tar',
      '--format=ustar',
      '-cf',
      newer,
      '-C',
      work,
      ...manifest.files.map((f: { path: string }) => f.path),
      'manifest.json',
    ])
    expect(tar.exitCode).toBe(0)
    rmSync(config.dataDir, { recursive: true })
    const r = await runCli(['restore', newer, '--config', config.configPath])
    expect(r.code).toBe(1)
    expect(r.stderr).toBe(
      `linkbox: restore: the linkbox.db in ${newer} has schema 99, this linkbox knows ${manifest.schema}: upgrade linkbox first\n`,
    )
    expect(existsSync(join(config.dataDir, 'linkbox.db'))).toBe(false)
    expect(existsSync(config.dataDir)).toBe(false) // not even the empty folder it would have restored into
  })

  test('a path with a . or .. segment (issue 20): the whole archive is refused before anything is written', async () => {
    const { config, archive } = await withBackup()
    const work = mkdtempSync(join(tmpdir(), 'linkbox-crafted-'))
    dirs.push(work)
    expect(Bun.spawnSync(['tar', '-xf', archive, '-C', work, 'linkbox.db']).exitCode).toBe(0)
    const db = readFileSync(join(work, 'linkbox.db'))
    const blob = `mail/ab/${'0123456789abcdef'.repeat(2)}`
    const eml = Buffer.from('From: a@example.org\r\n\r\nhello\r\n')
    const crafted = join(config.dir, 'crafted.tar')

    // The crafted archives are good ones but for the path: without it, one restores.
    writeFileSync(
      crafted,
      craftArchive([
        { path: 'linkbox.db', data: db },
        { path: `${blob}/raw.eml`, data: eml },
      ]),
    )
    const fresh = plainConfig()
    const good = await runCli(['restore', crafted, '--config', fresh.configPath])
    expect([good.code, good.stderr]).toEqual([0, ''])
    expect(readFileSync(join(fresh.dataDir, blob, 'raw.eml'))).toEqual(eml)

    // `mail/ab/<blob>/..` would be written as the file mail/ab, in the way of every message under mail/ab/.
    for (const bad of [`${blob}/..`, `${blob}/.`, 'secrets/..', 'secrets/.', `${blob}/../raw.eml`]) {
      writeFileSync(
        crafted,
        craftArchive([
          { path: 'linkbox.db', data: db },
          { path: bad, data: Buffer.from('x') },
        ]),
      )
      rmSync(fresh.dataDir, { recursive: true, force: true })
      const r = await runCli(['restore', crafted, '--config', fresh.configPath])
      expect({ bad, code: r.code, stderr: r.stderr }).toEqual({
        bad,
        code: 1,
        stderr: `linkbox: restore: ${crafted}: manifest.json names ${JSON.stringify(bad)}, which a linkbox backup never holds\n`,
      })
      expect(existsSync(fresh.dataDir)).toBe(false)
    }

    // Over a data_dir in use (--force): refused, and the data_dir is as it was, nothing moved aside.
    writeFileSync(
      crafted,
      craftArchive([
        { path: 'linkbox.db', data: db },
        { path: `${blob}/raw.eml`, data: eml },
        { path: `${blob}/..`, data: Buffer.from('x') },
      ]),
    )
    const tables = dumpTables(config.dataDir)
    const files = fileHashes(config.dataDir)
    const names = readdirSync(config.dataDir).sort()
    const r = await runCli(['restore', crafted, '--force', '--config', config.configPath])
    expect(r.code).toBe(1)
    expect(r.stderr).toBe(
      `linkbox: restore: ${crafted}: manifest.json names ${JSON.stringify(`${blob}/..`)}, which a linkbox backup never holds\n`,
    )
    expect(readdirSync(config.dataDir).sort()).toEqual(names)
    expect(dumpTables(config.dataDir)).toEqual(tables)
    expect(fileHashes(config.dataDir)).toEqual(files)
    expect(existsSync(join(config.dataDir, 'mail'))).toBe(false)
  })

  test('a data_dir that holds anything, unless --force, which moves it aside instead of deleting it', async () => {
    const { config, archive } = await withBackup()
    await createAccount(config.configPath, 'carol') // made after the backup
    const r = await runCli(['restore', archive, '--config', config.configPath])
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(
      /^linkbox: restore: .* is not empty \(.*linkbox\.db.*\); add --force to move its contents to .*before-restore-<time>\/ first\n$/,
    )
    const forced = await runCli(['restore', archive, '--force', '--config', config.configPath])
    expect(forced.stderr).toBe('')
    expect(forced.code).toBe(0)
    expect(dumpTables(config.dataDir).accounts!.map((a: any) => a.name)).toEqual(['bob'])
    const aside = readdirSync(config.dataDir).filter((n) => n.startsWith('before-restore-'))
    expect(aside.length).toBe(1)
    expect(dumpTables(join(config.dataDir, aside[0]!)).accounts!.map((a: any) => a.name)).toEqual(['bob', 'carol'])
    expect(readdirSync(config.dataDir).filter((n) => n.startsWith('.restore-'))).toEqual([])
  })
})
