// Two nodes on one PostgreSQL database (issue 22, SPEC §11), as an operator runs them: two `linkbox serve`
// processes with their own port and data_dir and the same [database] url, on real sockets, a real SMTP client
// and a real webhook receiver. What one node does, the other sees: a link made or changed on A redirects on B
// within a second; clicks from both add up exactly; each webhook event is delivered once, by one node, under one
// id; mail taken by B's SMTP is read through A, byte for byte; a dashboard session made on A works on B; and a
// node killed with SIGKILL while it takes creations loses none it acknowledged, while the other keeps serving.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import nodemailer from 'nodemailer'
import { signIn, overSocket } from '../support/dashboard'
import { sharedPostgres, type Postgres } from '../support/postgres'
import {
  apiPost,
  CHROME_UA,
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

setDefaultTimeout(60_000)

const DOMAIN = 'nodes.test'
let pg: Postgres
let url: string
let configs: TestConfig[] = []
let a: RunningServer
let b: RunningServer
let bSmtp: number
let key: string
const dirs: string[] = []

function nodeConfig(smtpPort: number): TestConfig {
  const c = writeConfig(tempDir('linkbox-node-'), {
    database: { url },
    // The webhook receiver is on loopback.
    media: { allow_private_networks: true },
    mail: { domains: [DOMAIN], smtp_host: '127.0.0.1', smtp_port: smtpPort },
  })
  dirs.push(c.dir)
  return c
}

beforeAll(async () => {
  pg = await sharedPostgres()
  url = await pg.createDatabase({ migrated: true })
  bSmtp = await freePort()
  configs = [nodeConfig(await freePort()), nodeConfig(bSmtp)]
  // Both start at once: the schema is made once, under the migration lock, whichever is first.
  const started = await Promise.all(configs.map((config) => startServer({ config, startTimeoutMs: 30_000 })))
  a = started[0]!
  b = started[1]!
  key = await createAccount(configs[0]!.configPath, 'alice', { admin: true })
}, 120_000)

afterAll(async () => {
  await killAllServers()
  dirs.forEach(removeDir)
  await pg?.stop()
})

const api = (node: RunningServer, method: string, fields: Record<string, string>) =>
  apiPost(node.url, method, fields, { 'x-api-key': key })
const get = async (node: RunningServer, method: string, query: Record<string, string>) => {
  const res = await fetch(`${node.url}/api/${method}?${new URLSearchParams(query)}`, { headers: { 'x-api-key': key } })
  return { status: res.status, body: (await res.json()) as any }
}
const visit = (node: RunningServer, code: string) =>
  fetch(`${node.url}/${code}`, { redirect: 'manual', headers: { 'user-agent': CHROME_UA } })

test('the schema was made once, and each node keeps no SQLite file of its own', async () => {
  const sql = new Bun.SQL(url)
  try {
    expect(Number((await sql`SELECT count(*) AS n FROM linkbox_schema`)[0].n)).toBe(1)
  } finally {
    await sql.close()
  }
  for (const c of configs) expect(await Bun.file(`${c.dataDir}/linkbox.db`).exists()).toBe(false)
})

test('a link made on A redirects on B; changed on A, B follows within a second; deleted on A, B answers 404', async () => {
  const made = await api(a, 'getLink.json', { url: 'https://example.com/first', alias: 'shared1' })
  expect(made.status, JSON.stringify(made.body)).toBe(200)
  const onB = await visit(b, 'shared1')
  expect([onB.status, onB.headers.get('location')]).toEqual([302, 'https://example.com/first'])
  // B holds the row in its cache now: the change on A must reach it through the feed.
  const changed = await api(a, 'update.json', { code: 'shared1', url: 'https://example.com/second' })
  expect(changed.status, JSON.stringify(changed.body)).toBe(200)
  const t0 = Date.now()
  let location = ''
  while (Date.now() - t0 < 1_000 && location !== 'https://example.com/second')
    location = (await visit(b, 'shared1')).headers.get('location') ?? ''
  expect(location).toBe('https://example.com/second')
  expect((await api(a, 'delete.json', { code: 'shared1' })).status).toBe(200)
  const t1 = Date.now()
  let status = 0
  while (Date.now() - t1 < 1_000 && status !== 404) status = (await visit(b, 'shared1')).status
  expect(status).toBe(404)
})

test('500 visits split over A and B give exactly 500 clicks in stats.json, on either node', async () => {
  expect((await api(a, 'getLink.json', { url: 'https://example.com/counted', alias: 'counted' })).status).toBe(200)
  const visits = Array.from({ length: 500 }, (_, i) => (i % 2 === 0 ? a : b))
  for (let i = 0; i < visits.length; i += 25) {
    const answers = await Promise.all(visits.slice(i, i + 25).map((node) => visit(node, 'counted')))
    expect(answers.every((r) => r.status === 302)).toBe(true)
  }
  // stats.json writes the asking node's pending clicks first; the other node's are written within a second.
  const t0 = Date.now()
  let clicks = { a: -1, b: -1 }
  while (Date.now() - t0 < 5_000 && (clicks.a !== 500 || clicks.b !== 500)) {
    const [sa, sb] = await Promise.all([
      api(a, 'stats.json', { code: 'counted' }),
      api(b, 'stats.json', { code: 'counted' }),
    ])
    clicks = { a: sa.body.return.clicks, b: sb.body.return.clicks }
    if (clicks.a !== 500 || clicks.b !== 500) await Bun.sleep(200)
  }
  expect(clicks).toEqual({ a: 500, b: 500 })
  const day = (await api(b, 'stats.json', { code: 'counted' })).body.return.days.at(-1)
  expect(day.clicks).toBe(500)
})

test('50 creations split over both nodes give 50 deliveries with 50 distinct webhook-ids, none twice', async () => {
  const receiver: Receiver = startReceiver()
  try {
    const made = await api(b, 'webhooks.json', { action: 'create', url: receiver.url, events: 'link.created' })
    expect(made.status, JSON.stringify(made.body)).toBe(200)
    receiver.secret = made.body.return.secret
    const codes = Array.from({ length: 50 }, (_, i) => `hook${i}`)
    const answers = await Promise.all(
      codes.map((code, i) =>
        api(i % 2 === 0 ? a : b, 'getLink.json', { url: `https://example.com/${code}`, alias: code }),
      ),
    )
    expect(answers.map((r) => r.status)).toEqual(codes.map(() => 200))
    await until(() => receiver.got.length >= 50, '50 deliveries', 20_000)
    // Long enough for a second delivery of any of them to show up.
    await Bun.sleep(1_500)
    expect(receiver.got.length).toBe(50)
    expect(new Set(receiver.got.map((g) => g.id)).size).toBe(50)
    expect(receiver.got.every((g) => g.verifyError === null)).toBe(true)
    expect(new Set(receiver.got.map((g) => JSON.parse(g.body).data.hex))).toEqual(new Set(codes))
  } finally {
    receiver.stop()
  }
})

test("a message sent to B's SMTP port is read through A, its attachment byte for byte", async () => {
  const box = await get(a, 'mailbox.json', { address: 'shared' })
  expect(box.status, JSON.stringify(box.body)).toBe(200)
  const address = box.body.return.address as string
  const content = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) % 256))
  const send = nodemailer.createTransport({ host: '127.0.0.1', port: bSmtp, secure: false, ignoreTLS: true } as any)
  try {
    await send.sendMail({
      from: 'sender@example.com',
      to: address,
      subject: 'across nodes',
      text: 'see attached',
      attachments: [{ filename: 'data.bin', content, contentType: 'application/octet-stream' }],
    })
  } finally {
    send.close()
  }
  const list = await get(a, 'messages.json', { address })
  expect(list.body.return.messages.map((m: any) => m.subject)).toEqual(['across nodes'])
  const msg = await get(a, 'message.json', { address, id: String(list.body.return.messages[0].id) })
  const [attachment] = msg.body.return.attachments
  // The signed link names base_url; it is asked of A directly.
  const path = new URL(attachment.url).pathname + new URL(attachment.url).search
  const res = await fetch(`${a.url}${path}`)
  expect(res.status).toBe(200)
  expect(Buffer.from(await res.arrayBuffer()).equals(content)).toBe(true)
})

test('a dashboard session made on A works on B; signed out on B, A refuses it', async () => {
  expect(
    (
      await runCli(['account', 'password', 'alice', '--password', '-', '--config', configs[0]!.configPath], {
        stdin: 'correct horse battery\n',
      })
    ).code,
  ).toBe(0)
  const who = await signIn(overSocket(a.url), 'alice', 'correct horse battery')
  const onB = await fetch(`${b.url}/dashboard`, { headers: { cookie: who.cookie }, redirect: 'manual' })
  expect(onB.status).toBe(200)
  expect(await onB.text()).toContain('alice')
  const out = await fetch(`${b.url}/logout`, {
    method: 'POST',
    headers: { cookie: who.cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: who.csrf }),
    redirect: 'manual',
  })
  expect(out.status).toBe(303)
  const onA = await fetch(`${a.url}/dashboard`, { headers: { cookie: who.cookie }, redirect: 'manual' })
  expect(onA.status).toBe(303)
  expect(onA.headers.get('location')).toStartWith('/login')
})

test('kill -9 of A while it takes creations loses none it acknowledged, and B keeps serving', async () => {
  const acknowledged: string[] = []
  let stop = false
  const writers = Array.from({ length: 4 }, async (_, w) => {
    for (let i = 0; !stop; i++) {
      const code = `kill${w}x${i}`
      try {
        const r = await api(a, 'getLink.json', { url: `https://example.com/${code}`, alias: code })
        if (r.status === 200) acknowledged.push(code)
      } catch {
        return // the connection went with the process
      }
    }
  })
  await until(() => acknowledged.length >= 40, '40 acknowledged creations on A', 20_000)
  await a.kill()
  stop = true
  await Promise.all(writers)
  // Every creation A answered 200 is in the database, and B redirects each.
  const answers = await Promise.all(acknowledged.map((code) => visit(b, code)))
  expect(answers.filter((r) => r.status !== 302).length).toBe(0)
  expect((await api(b, 'getLink.json', { url: 'https://example.com/after', alias: 'afterkill' })).status).toBe(200)
  expect((await visit(b, 'afterkill')).status).toBe(302)
})
