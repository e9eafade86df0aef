// link.clicked end to end with real parts: endpoints made with webhooks.json, visits through the app, a
// flush by the real recorder on either writer (its thread, or the main thread), the deliverer sending to a
// real receiver on 127.0.0.1, every request verified with the `standardwebhooks` package. The events must
// come one per account per flush (never one per click), only to endpoints that subscribed, and exactly once
// across a flush that failed in part and the one that wrote the rest.
import { describe, expect, test } from 'bun:test'
import { dayOf } from '../../src/clicks/batch'
import { makeBox, type TestBox } from '../support/app'
import { startReceiver, until, type Receiver } from '../support/webhooks'

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36'
const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'

const visit = (box: TestBox, code: string, ua = CHROME) =>
  box.request(`/${code}`, { redirect: 'manual', headers: { 'user-agent': ua } })

async function endpoint(box: TestBox, key: string, receiver: Receiver, events: string): Promise<number> {
  const made = await box.post(
    '/api/webhooks.json',
    { action: 'create', url: receiver.url, events },
    { 'x-api-key': key },
  )
  expect(made.status, JSON.stringify(made.body)).toBe(200)
  receiver.secret = made.body.return.secret
  return made.body.return.id
}

const count = (box: TestBox, sql: string, ...args: number[]) => (box.db.query(sql).get(...args) as { n: number }).n

for (const writeOn of ['worker', 'main'] as const) {
  describe(`written on the ${writeOn === 'worker' ? "writer's thread" : 'main thread'}`, () => {
    // The timer never fires in a test: flushes are called.
    const boxOf = () =>
      makeBox(
        { media: { allow_private_networks: true } },
        { clicks: { intervalMs: 3_600_000, maxBatch: 100_000, writeOn } },
      )

    test("one delivery carries both links' counts; an endpoint without link.clicked gets none; an account without endpoints writes no webhook rows", async () => {
      const box = await boxOf()
      const clicked = startReceiver()
      const other = startReceiver()
      try {
        box.deliverer.start()
        const key = await box.account('watcher')
        const quietKey = await box.account('quiet')
        const clickedId = await endpoint(box, key, clicked, 'link.clicked')
        await endpoint(box, key, other, 'link.updated,link.deleted')
        const a = (await box.post('/api/getLink.json', { url: 'https://example.com/a' }, { 'x-api-key': key })).body
          .return.hex
        const b = (await box.post('/api/getLink.json', { url: 'https://example.com/b' }, { 'x-api-key': key })).body
          .return.hex
        const q = (await box.post('/api/getLink.json', { url: 'https://example.com/q' }, { 'x-api-key': quietKey }))
          .body.return.hex
        const anon = (await box.post('/api/getLink.json', { url: 'https://example.com/anon' })).body.return.hex
        const dayBefore = dayOf(Date.now())
        for (let i = 0; i < 3; i++) expect((await visit(box, a)).status).toBe(302)
        await visit(box, b)
        await visit(box, b, GOOGLEBOT)
        for (let i = 0; i < 4; i++) await visit(box, q)
        await visit(box, anon)
        expect(await box.recorder.flush()).toBe(10)
        const dayAfter = dayOf(Date.now())
        // With a thread, the main connection never checkpoints (writer.ts): the writer is the one named.
        expect(box.db.query('PRAGMA wal_autocheckpoint').get()).toEqual({
          wal_autocheckpoint: writeOn === 'worker' ? 0 : 1000,
        })

        await until(() => clicked.got.length >= 1, 'the link.clicked delivery')
        await Bun.sleep(300) // nothing else is on its way
        expect(clicked.got).toHaveLength(1)
        expect(other.got).toHaveLength(0)
        const got = clicked.got[0]!
        expect(got.verifyError).toBeNull()
        const body = JSON.parse(got.body)
        expect(body.type).toBe('link.clicked')
        expect(new Date(body.timestamp).toISOString()).toBe(body.timestamp)
        const items = [...body.data.clicks].sort((x: any, y: any) => (x.hex < y.hex ? -1 : 1))
        const day = items[0].day
        expect([dayBefore, dayAfter]).toContain(day)
        expect(items).toEqual(
          [
            { hex: a, clicks: 3, bots: 0, day },
            { hex: b, clicks: 1, bots: 1, day },
          ].sort((x, y) => (x.hex < y.hex ? -1 : 1)),
        )
        // One event, one delivery, all the watcher's; the quiet account's and the anonymous clicks none.
        const watcher = (await box.accounts.authenticate(key))!.accountId!
        expect(count(box, 'SELECT count(*) AS n FROM webhook_events')).toBe(1)
        expect(count(box, 'SELECT count(*) AS n FROM webhook_events WHERE account_id = ?', watcher)).toBe(1)
        expect(count(box, 'SELECT count(*) AS n FROM webhook_deliveries')).toBe(1)
        expect(
          count(box, "SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ? AND state = 'ok'", clickedId),
        ).toBe(1)
        expect(got.id).toBe(
          (box.db.query('SELECT webhook_id FROM webhook_events').get() as { webhook_id: string }).webhook_id,
        )
        expect(got.id).toMatch(/^msg_[0-9a-f]{32}$/)
        // The counts themselves were written as always.
        expect(box.db.query('SELECT clicks, bots FROM links WHERE code = ?').get(b)).toEqual({ clicks: 1, bots: 1 })

        // A flush with no clicks of the watcher's links writes no event.
        await visit(box, q)
        expect(await box.recorder.flush()).toBe(1)
        expect(count(box, 'SELECT count(*) AS n FROM webhook_events')).toBe(1)
      } finally {
        await box.cleanup()
        clicked.stop()
        other.stop()
      }
    })

    test('a flush that failed after committing part of the batch, then one that works: every click reported once, in one event', async () => {
      const box = await boxOf()
      const receiver = startReceiver()
      try {
        const key = await box.account('many')
        const accountId = (await box.accounts.authenticate(key))!.accountId!
        await endpoint(box, key, receiver, 'link.clicked')
        // More links than one part (LINKS_PER_COMMIT, 500): the first part commits, the second fails.
        const LINKS = 600
        box.db.transaction(() => {
          for (let i = 1; i <= LINKS; i++)
            box.db
              .query(
                "INSERT INTO links (code, long_url, account_id, created, updated) VALUES (?1, 'https://example.com/', ?2, 0, 0)",
              )
              .run(`m${i}`, accountId)
        })()
        for (let i = 1; i <= LINKS; i++) await visit(box, `m${i}`)
        const last = (box.db.query('SELECT id FROM links WHERE code = ?').get(`m${LINKS}`) as { id: number }).id
        box.db.exec(`CREATE TRIGGER refuse_last BEFORE INSERT ON click_days WHEN NEW.link_id = ${last}
          BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`)
        await expect(box.recorder.flush()).rejects.toThrow('refused by the test')
        expect(count(box, 'SELECT count(*) AS n FROM click_days')).toBe(500) // the first part is committed
        expect(count(box, 'SELECT count(*) AS n FROM webhook_events')).toBe(0) // its events go with the last part
        box.db.exec('DROP TRIGGER refuse_last')
        // New clicks meanwhile: on a committed link, and on the link whose clicks were put back.
        await visit(box, 'm1')
        await visit(box, `m${LINKS}`)
        expect(await box.recorder.flush()).toBe(LINKS - 500 + 2)
        expect(await box.recorder.flush()).toBe(0) // nothing left: no second event
        expect(count(box, 'SELECT sum(clicks) AS n FROM click_days')).toBe(LINKS + 2)
        expect(count(box, 'SELECT count(*) AS n FROM webhook_events')).toBe(1)

        box.deliverer.start()
        await until(() => receiver.got.length >= 1, 'the delivery')
        await Bun.sleep(300)
        expect(receiver.got).toHaveLength(1)
        expect(receiver.got[0]!.verifyError).toBeNull()
        const items: { hex: string; clicks: number; bots: number }[] = JSON.parse(receiver.got[0]!.body).data.clicks
        const byHex = new Map<string, number>()
        for (const it of items) byHex.set(it.hex, (byHex.get(it.hex) ?? 0) + it.clicks + it.bots)
        expect(items).toHaveLength(LINKS) // one item per link-day, kept and new folded together
        expect(byHex.size).toBe(LINKS)
        expect(byHex.get('m1')).toBe(2)
        expect(byHex.get(`m${LINKS}`)).toBe(2)
        expect([...byHex.values()].reduce((s, n) => s + n, 0)).toBe(LINKS + 2)
      } finally {
        await box.cleanup()
        receiver.stop()
      }
    })
  })
}
