// Abuse handling on the open internet (issue 26, SPEC §3 and §12), over real sockets: closing anonymous
// creation, the daily bound per address, visitors' reports (a form, Post/Redirect/Get, limited, a
// link.reported event for the owner), disabled links, banned hosts and disabled accounts answering 451 with
// their clicks kept, and blocklist files read again on SIGHUP by a real `serve`.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { appendFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createAbuseService } from '../../src/abuse/service'
import { sqliteAbuseRows } from '../../src/abuse/storage/sqlite'
import { SYSTEM } from '../../src/audit'
import { sqliteAuditRows } from '../../src/audit/storage/sqlite'
import { sqliteWebhookQueue } from '../../src/webhooks/storage/sqlite'
import { makeBox } from '../support/app'
import { CHROME_UA, killAllServers, startServer, writeConfig } from '../support/server'
import { startReceiver, until, type Receiver } from '../support/webhooks'

afterAll(killAllServers)

/** A box listening on a free port, and fetch against it. */
async function listening(overrides: Record<string, unknown> = {}) {
  const box = await makeBox({
    media: { allow_private_networks: true },
    server: { host: '127.0.0.1', port: 0 },
    ...overrides,
  })
  const origin = `http://127.0.0.1:${box.listen().port}`
  const send = (path: string, init: RequestInit = {}) => fetch(`${origin}${path}`, { redirect: 'manual', ...init })
  const create = (url: string, key?: string) =>
    send('/api/getLink.json', {
      method: 'POST',
      body: new URLSearchParams({ url }),
      headers: key ? { 'x-api-key': key } : {},
    })
  return { box, origin, send, create }
}

describe('links.anonymous = false', () => {
  test('getLink.json without a key is 401 missing_key, with one it works; the home page asks to sign in', async () => {
    const { box, origin, send, create } = await listening({ links: { anonymous: false } })
    try {
      const anon = await create('https://example.com/a')
      expect(anon.status).toBe(401)
      expect((await anon.json()).code).toBe('missing_key')
      expect((await create('https://example.com/a', await box.account('k'))).status).toBe(200)
      const home = await send('/', { headers: { accept: 'text/html' } })
      expect(home.status).toBe(200)
      const html = await home.text()
      expect(html).toContain('Sign in to shorten a link')
      expect(html).not.toContain('name="url"')
      // The form posted anyway (an old tab): refused, sent back to the page, no link made.
      const posted = await send('/', {
        method: 'POST',
        body: new URLSearchParams({ url: 'https://example.com/b' }),
        headers: { origin },
      })
      expect(posted.status).toBe(303)
      expect(await box.links.total()).toBe(1)
    } finally {
      await box.cleanup()
    }
  })
})

test('rate.anon_per_day: the fourth anonymous link of the day is 429 with Retry-After; a key is not counted', async () => {
  const { box, create } = await listening({ rate: { anon_per_minute: 0, anon_per_day: 3, key_per_minute: 0 } })
  try {
    for (let i = 0; i < 3; i++) expect((await create(`https://example.com/${i}`)).status).toBe(200)
    const fourth = await create('https://example.com/3')
    expect(fourth.status).toBe(429)
    expect(Number(fourth.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await fourth.json()).message).toContain('3 a day without a key')
    expect((await create('https://example.com/keyed', await box.account('k'))).status).toBe(200)
  } finally {
    await box.cleanup()
  }
})

describe('reports', () => {
  let t: Awaited<ReturnType<typeof listening>>
  let receiver: Receiver
  let key: string
  let code: string
  beforeAll(async () => {
    t = await listening()
    receiver = startReceiver()
    key = await t.box.account('owner')
    const hook = await t.box.post(
      '/api/webhooks.json',
      { action: 'create', url: receiver.url, events: 'link.reported' },
      { 'x-api-key': key },
    )
    receiver.secret = hook.body.return.secret
    const link = await t.box.post(
      '/api/getLink.json',
      { url: 'https://phish.example/login', mode: 'preview' },
      { 'x-api-key': key },
    )
    code = link.body.return.hex
  })
  afterAll(async () => {
    await t.box.cleanup()
    receiver.stop()
  })

  test('the preview page links to the form; a report is stored (no address), redirected to a thank-you page, and sent to the owner as link.reported', async () => {
    const preview = await (
      await t.send(`/${code}`, { headers: { 'user-agent': CHROME_UA, accept: 'text/html' } })
    ).text()
    expect(preview).toContain(`href="/${code}/report"`)
    const form = await t.send(`/${code}/report`)
    expect(form.status).toBe(200)
    expect(await form.text()).toContain('name="reason"')

    const sent = await t.send(`/${code}/report`, {
      method: 'POST',
      headers: { origin: t.origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        reason: 'phishing',
        text: 'It asks for my bank password.',
        contact: 'me@example.org',
      }),
    })
    expect(sent.status).toBe(303)
    expect(sent.headers.get('location')).toBe(`/${code}/report?sent=1`)
    expect(await (await t.send(sent.headers.get('location')!)).text()).toContain('your report was sent')

    const rows = t.box.db.query('SELECT * FROM link_reports').all() as Record<string, unknown>[]
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({
      code,
      reason: 'phishing',
      text: 'It asks for my bank password.',
      contact: 'me@example.org',
      closed: null,
    })
    expect(JSON.stringify(rows)).not.toContain('127.0.0.1')
    await t.box.recorder.flush()
    expect(await t.box.abuse.openReports()).toMatchObject([
      { code, long_url: 'https://phish.example/login', owner: 'owner', clicks: 1 },
    ])

    await until(() => receiver.got.length >= 1, 'link.reported')
    expect(receiver.got[0]!.verifyError).toBeNull()
    expect(JSON.parse(receiver.got[0]!.body)).toMatchObject({
      type: 'link.reported',
      data: { hex: code, reason: 'phishing' },
    })
  })

  test('a report without a reason goes back to the form with what was typed; nothing stored', async () => {
    const before = await t.box.abuse.openReportCount()
    const r = await t.send(`/${code}/report`, {
      method: 'POST',
      headers: { origin: t.origin },
      body: new URLSearchParams({ text: 'spam' }),
    })
    expect(r.status).toBe(303)
    const back = await (await t.send(r.headers.get('location')!)).text()
    expect(back).toContain('Choose what is wrong with the link.')
    expect(back).toContain('>spam</textarea>')
    expect(await t.box.abuse.openReportCount()).toBe(before)
  })

  test('a report from another site is refused; 20 reports in a minute from one client are limited', async () => {
    const cross = await t.send(`/${code}/report`, {
      method: 'POST',
      headers: { origin: 'https://evil.example' },
      body: new URLSearchParams({ reason: 'spam' }),
    })
    expect(cross.status).toBe(403)
    const statuses: number[] = []
    for (let i = 0; i < 20; i++)
      statuses.push(
        (
          await t.send(`/${code}/report`, {
            method: 'POST',
            headers: { origin: t.origin },
            body: new URLSearchParams({ reason: 'spam' }),
          })
        ).status,
      )
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(14)
    expect(await t.box.abuse.openReportCount()).toBeLessThanOrEqual(5)
  })
})

describe('disabled links, banned hosts, disabled accounts', () => {
  let t: Awaited<ReturnType<typeof listening>>
  let key: string
  beforeAll(async () => {
    t = await listening()
    key = await t.box.account('owner')
  })
  afterAll(() => t.box.cleanup())
  const visit = (code: string) => t.send(`/${code}`, { headers: { 'user-agent': CHROME_UA } })

  test('a disabled link answers 451 with the reason, not its destination; its owner still lists it with its clicks; enabling restores it', async () => {
    const code = (await t.box.post('/api/getLink.json', { url: 'https://shady.example/x' }, { 'x-api-key': key })).body
      .return.hex
    expect((await visit(code)).status).toBe(302)
    await t.box.abuse.setLinkDisabled(code, 'Reported as phishing.')
    const stopped = await visit(code)
    expect(stopped.status).toBe(451)
    const page = await stopped.text()
    expect(page).toContain('Reported as phishing.')
    expect(page).not.toContain('shady.example')
    await t.box.recorder.flush()
    const listed = await t.box.post('/api/links.json', {}, { 'x-api-key': key })
    expect(listed.body.return.links.find((l: { hex: string }) => l.hex === code)).toMatchObject({
      clicks: 1,
      disabled: 'Reported as phishing.',
    })
    await t.box.abuse.setLinkDisabled(code, null)
    expect((await visit(code)).status).toBe(302)
  })

  test("a banned host: its links and its subdomains' answer 451, a new one is refused naming the ban; unbanning restores them", async () => {
    const code = (await t.box.post('/api/getLink.json', { url: 'https://login.bad.example/x' }, { 'x-api-key': key }))
      .body.return.hex
    await t.box.abuse.banHost('bad.example', 'phishing kit', null)
    expect((await visit(code)).status).toBe(451)
    const refused = await t.create('https://a.b.bad.example/y', key)
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ code: 'invalid_url', message: expect.stringContaining('bad.example') })
    expect((await t.create('https://notbad.example/y', key)).status).toBe(200)
    await t.box.abuse.unbanHost('bad.example')
    expect((await visit(code)).status).toBe(302)
  })

  test('a host banned after the link was made is not reached through a rule or a split either: 451', async () => {
    const made = await t.box.post(
      '/api/getLink.json',
      {
        url: 'https://fine.example/',
        rules: JSON.stringify([{ url: 'https://m.later-bad.example/', device: ['mobile'] }]),
      },
      { 'x-api-key': key },
    )
    const ruled = made.body.return.hex
    const split = (
      await t.box.post(
        '/api/getLink.json',
        {
          url: 'https://fine.example/',
          split: JSON.stringify([
            { url: 'https://a.example/', weight: 50 },
            { url: 'https://b.later-bad.example/', weight: 50 },
          ]),
        },
        { 'x-api-key': key },
      )
    ).body.return.hex
    expect((await visit(ruled)).status).toBe(302)
    expect((await visit(split)).status).toBe(302)
    await t.box.abuse.banHost('later-bad.example', 'went bad', null)
    expect((await visit(ruled)).status).toBe(451)
    expect((await visit(split)).status).toBe(451)
    await t.box.abuse.unbanHost('later-bad.example')
    expect((await visit(ruled)).status).toBe(302)
  })

  test("a disabled account's links answer 451 (within a second), and work again when it is enabled", async () => {
    const other = await t.box.account('spammer')
    const code = (await t.box.post('/api/getLink.json', { url: 'https://spam.example/' }, { 'x-api-key': other })).body
      .return.hex
    expect((await visit(code)).status).toBe(302)
    await t.box.accounts.setDisabled('spammer', true)
    await Bun.sleep(1_100)
    expect((await visit(code)).status).toBe(451)
    await t.box.accounts.setDisabled('spammer', false)
    await Bun.sleep(1_100)
    expect((await visit(code)).status).toBe(302)
  })
})

test('blocklist files: a listed destination is refused; SIGHUP after adding a host stops its existing links and says how many', async () => {
  const config = writeConfig()
  const list = join(config.dir, 'phishing.txt')
  writeFileSync(list, '# a list\n0.0.0.0 known-bad.example\n')
  writeFileSync(
    config.configPath,
    `data_dir = ${JSON.stringify(config.dataDir)}\n[server]\nhost = "127.0.0.1"\nport = 0\n[rate]\nanon_per_minute = 0\nkey_per_minute = 0\n[mail]\nsmtp_port = 0\n[links]\nblocklist_files = [${JSON.stringify(list)}]\n`,
  )
  const server = await startServer({ config })
  const create = (url: string) =>
    fetch(`${server.url}/api/getLink.json`, { method: 'POST', body: new URLSearchParams({ url }) })
  expect(server.stdout()).toContain('blocklists: 1 hosts from 1 of 1 files')
  const listed = await create('https://www.known-bad.example/')
  expect(listed.status).toBe(400)
  expect((await listed.json()).message).toContain('blocklist')
  const made = await create('https://new-bad.example/login')
  expect(made.status).toBe(200)
  const code = (await made.json()).return.hex
  expect((await fetch(`${server.url}/${code}`, { redirect: 'manual' })).status).toBe(302)

  appendFileSync(list, 'new-bad.example\n')
  server.proc.kill('SIGHUP')
  for (let i = 0; i < 200 && !server.stdout().includes('SIGHUP: blocklists'); i++) await Bun.sleep(25)
  expect(server.stdout()).toContain('SIGHUP: blocklists: 2 hosts from 1 of 1 files')
  expect(server.stdout()).toContain('1 existing links are on them')
  expect((await fetch(`${server.url}/${code}`, { redirect: 'manual' })).status).toBe(451)
  await server.stop()
})

test('blocklist lines `*.host` and addresses in any spelling are taken; lines that are not hosts are counted and named in the reload line (issue 36)', async () => {
  const config = writeConfig()
  const list = join(config.dir, 'mixed.txt')
  writeFileSync(
    list,
    [
      '# a list',
      '*.wild-bad.example',
      'not a host!',
      '2001:0DB8::0:7',
      '0x01020307',
      '0.0.0.0 fine-bad.example bad!name',
      'a b c',
    ].join('\n') + '\n',
  )
  writeFileSync(
    config.configPath,
    `data_dir = ${JSON.stringify(config.dataDir)}\n[server]\nhost = "127.0.0.1"\nport = 0\n[rate]\nanon_per_minute = 0\nkey_per_minute = 0\n[mail]\nsmtp_port = 0\n[links]\nblocklist_files = [${JSON.stringify(list)}]\n`,
  )
  const server = await startServer({ config })
  const create = (url: string) =>
    fetch(`${server.url}/api/getLink.json`, { method: 'POST', body: new URLSearchParams({ url }) })
  // The log is JSON lines: the message of the one that starts with `when`.
  const logged = (when: string) =>
    server
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l).msg as string)
      .find((m) => m.startsWith(when)) ?? ''
  expect(logged('start: blocklists')).toContain('blocklists: 4 hosts from 1 of 1 files')
  expect(logged('start: blocklists')).toEndWith(
    `; 3 lines skipped, not hosts: ${list}:3 "not a host!", ${list}:6 "0.0.0.0 fine-bad.example bad!name", ${list}:7 "a b c"`,
  )
  for (const url of [
    'https://wild-bad.example/',
    'https://a.wild-bad.example/',
    'http://[2001:db8::7]/',
    'http://[::ffff:1.2.3.7]/',
    'http://1.2.3.7/',
    'https://fine-bad.example/',
  ])
    expect((await create(url)).status, url).toBe(400)
  expect((await create('http://[2001:db8::8]/')).status).toBe(200)
  appendFileSync(list, '||^\n')
  server.proc.kill('SIGHUP')
  for (let i = 0; i < 200 && !server.stdout().includes('SIGHUP: blocklists'); i++) await Bun.sleep(25)
  expect(logged('SIGHUP: blocklists')).toContain('; 4 lines skipped, not hosts:')
  expect(logged('SIGHUP: blocklists')).toEndWith(', …')
  await server.stop()
})

test('reports are bounded: 50 open ones a link (more are thanked, not stored), 10,000 open in all (then 503 busy)', async () => {
  const box = await makeBox()
  try {
    const key = await box.account('owner')
    const code = (await box.post('/api/getLink.json', { url: 'https://reported.example/' }, { 'x-api-key': key })).body
      .return.hex
    for (let i = 0; i < 60; i++) await box.abuse.report({ code, reason: 'spam', text: `${i}`, contact: '' })
    expect(await box.abuse.openReportCount()).toBe(50)
    // Fill the rest of the table's allowance directly, as 9,950 other links' reports would.
    const insert = box.db.query(
      "INSERT INTO link_reports (link_id, code, reason, created) VALUES (NULL, 'gone', 'spam', 0)",
    )
    box.db.transaction(() => {
      for (let i = 0; i < 9_950; i++) insert.run()
    })()
    const other = (await box.post('/api/getLink.json', { url: 'https://other.example/' }, { 'x-api-key': key })).body
      .return.hex
    await expect(box.abuse.report({ code: other, reason: 'spam', text: '', contact: '' })).rejects.toThrow(
      'Too many reports are waiting',
    )
    const page = await box.request(`/${other}/report`, {
      method: 'POST',
      headers: { origin: 'http://localhost:8080' },
      body: new URLSearchParams({ reason: 'spam' }),
    })
    expect(page.status).toBe(503)
    expect(await box.abuse.openReportCount()).toBe(10_000)
  } finally {
    await box.cleanup()
  }
})

test('a reload counts the links a list catches across pages of links (12,000 links, every third listed)', async () => {
  const box = await makeBox()
  try {
    const insert = box.db.query('INSERT INTO links (code, long_url, created, updated) VALUES (?1, ?2, 0, 0)')
    box.db.transaction(() => {
      for (let i = 0; i < 12_000; i++)
        insert.run(`c${i}`, i % 3 === 0 ? `https://x${i}.listed.example/` : `https://fine${i}.example/`)
    })()
    const list = join(box.dir, 'list.txt')
    writeFileSync(list, 'listed.example\n')
    box.config.links.blocklist_files = [list]
    const r = await box.abuse.reloadBlocklist()
    expect(r).toMatchObject({ hosts: 1, caught: 4_000 })
  } finally {
    await box.cleanup()
  }
})

describe('the abuse service on the async storage', () => {
  test('bans and disabled accounts stored before the service starts are in its memory once `ready`: a second service on the same database refuses at once', async () => {
    const box = await makeBox()
    try {
      const key = await box.account('owner')
      const spammer = await box.account('spammer')
      const code = (await box.post('/api/getLink.json', { url: 'https://x.old-bad.example/' }, { 'x-api-key': key }))
        .body.return.hex
      const spam = (await box.post('/api/getLink.json', { url: 'https://fine.example/' }, { 'x-api-key': spammer }))
        .body.return.hex
      await box.abuse.banHost('old-bad.example', 'went bad', null)
      await box.accounts.setDisabled('spammer', true)
      const second = createAbuseService({
        rows: sqliteAbuseRows(box.db),
        audit: sqliteAuditRows(box.db),
        queue: sqliteWebhookQueue(box.db),
        config: box.config,
        links: box.links,
        clock: Date.now,
      })
      try {
        await second.ready
        expect(second.verdict((await box.links.resolve(code))!)).toEqual({
          kind: 'banned',
          host: 'old-bad.example',
          reason: 'went bad',
        })
        expect(second.verdict((await box.links.resolve(spam))!)).toEqual({ kind: 'account' })
        expect(() => second.checkDestination('https://old-bad.example/')).toThrow('banned (went bad)')
      } finally {
        second.close()
      }
    } finally {
      await box.cleanup()
    }
  })

  test("a report closed by disabling its owner's account: the very next visit answers 451 (no wait for the next read of the accounts)", async () => {
    const { box, send } = await listening()
    try {
      const key = await box.account('spammer')
      const code = (await box.post('/api/getLink.json', { url: 'https://spam.example/' }, { 'x-api-key': key })).body
        .return.hex
      const visit = () => send(`/${code}`, { headers: { 'user-agent': CHROME_UA } })
      expect((await visit()).status).toBe(302)
      const { id } = await box.abuse.report({ code, reason: 'spam', text: '', contact: '' })
      await box.abuse.closeReport(id!, 'account_disabled', null, SYSTEM, {
        change: (tx) => box.accounts.disableWithin(tx, 'spammer', SYSTEM),
      })
      expect((await visit()).status).toBe(451)
      expect(
        box.db.query('SELECT action, closed IS NOT NULL AS closed FROM link_reports WHERE id = ?').get(id!),
      ).toEqual({ action: 'account_disabled', closed: 1 })
    } finally {
      await box.cleanup()
    }
  })

  test('two admins closing one report at once: one closes it with its change, the other is 409 and changes nothing (no ban, no audit row)', async () => {
    const box = await makeBox()
    try {
      const key = await box.account('owner')
      const code = (await box.post('/api/getLink.json', { url: 'https://racy.example/' }, { 'x-api-key': key })).body
        .return.hex
      const { id } = await box.abuse.report({ code, reason: 'phishing', text: '', contact: '' })
      const results = await Promise.allSettled([
        box.abuse.closeReport(id!, 'link_disabled', null, SYSTEM, { disableLink: { code, reason: 'phishing' } }),
        box.abuse.closeReport(id!, 'host_banned', null, SYSTEM, { ban: { host: 'racy.example', reason: 'phishing' } }),
      ])
      expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected'])
      const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult
      expect(lost.reason).toMatchObject({ status: 409, message: expect.stringContaining('closed by someone else') })
      const won = (
        results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ closed: { action: string } }>
      ).value.closed.action
      expect(box.db.query('SELECT count(*) AS n FROM banned_hosts').get()).toEqual({ n: won === 'host_banned' ? 1 : 0 })
      expect(box.db.query('SELECT disabled FROM links WHERE code = ?').get(code)).toEqual({
        disabled: won === 'link_disabled' ? 'phishing' : null,
      })
      expect(box.db.query("SELECT detail FROM audit_log WHERE action = 'report.close'").all()).toEqual([
        { detail: won },
      ])
      // A link deleted before its report is closed by disabling it: 404 naming the code, the report stays open.
      const { id: next } = await box.abuse.report({ code, reason: 'spam', text: '', contact: '' })
      box.db.query('DELETE FROM links WHERE code = ?').run(code)
      await expect(
        box.abuse.closeReport(next!, 'link_disabled', null, SYSTEM, { disableLink: { code, reason: 'x' } }),
      ).rejects.toThrow(`No link with the code "${code}".`)
      expect(await box.abuse.openReport(next!)).toMatchObject({ id: next, closed: null })
    } finally {
      await box.cleanup()
    }
  })
})
