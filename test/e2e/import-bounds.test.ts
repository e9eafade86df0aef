// What an import may take of the machine (issue 36 item 4, SPEC §2a), over real sockets: at most
// links.import_max_rows rows per file (refused whole, before anything is made), a file of junk rows refused in
// seconds while redirects keep answering, one import at a time per account (429 with Retry-After; other
// accounts go on), and one links.imported event for the whole file instead of a link.created per link.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeBox, readAnswer, type TestBox } from '../support/app'
import { startReceiver, until, type Receiver } from '../support/webhooks'

const MAX_ROWS = 10_000
let box: TestBox
let origin: string
beforeAll(async () => {
  box = await makeBox({
    media: { allow_private_networks: true },
    server: { host: '127.0.0.1', port: 0 },
    links: { import_max_rows: MAX_ROWS },
  })
  origin = `http://127.0.0.1:${box.listen().port}`
})
afterAll(() => box.cleanup())

const as = (key: string) => ({ 'x-api-key': key })
async function importFile(key: string, text: string, format = 'csv') {
  const form = new FormData()
  form.set('file', new Blob([text], { type: 'text/csv' }), 'links.csv')
  form.set('format', format)
  return readAnswer(await fetch(`${origin}/api/import.json`, { method: 'POST', headers: as(key), body: form }))
}
/** A linkbox CSV of `n` valid rows with codes `<prefix>-<i>`. */
const rowsFile = (prefix: string, n: number) =>
  `code,long_url,title\r\n${Array.from({ length: n }, (_, i) => `${prefix}-${i},https://example.com/${prefix}/${i},Row ${i}\r\n`).join('')}`
const countOf = (account: string) =>
  (
    box.db
      .query('SELECT count(*) AS n FROM links l JOIN accounts a ON a.id = l.account_id WHERE a.name = ?')
      .get(account) as { n: number }
  ).n

describe('bounds of one file', () => {
  test(`links.import_max_rows (${MAX_ROWS} here): one row more is refused whole with 413 naming "file"; exactly that many are made`, async () => {
    const key = await box.account('rows')
    const over = await importFile(key, rowsFile('o', MAX_ROWS + 1))
    expect([over.status, over.body.code]).toEqual([413, 'too_large'])
    expect(over.body.message).toContain('"file"')
    expect(over.body.message).toContain(`more than ${MAX_ROWS} rows`)
    expect(countOf('rows')).toBe(0)
    const exact = await importFile(key, rowsFile('e', MAX_ROWS))
    expect([exact.status, exact.body.return?.created]).toEqual([200, MAX_ROWS])
    expect(countOf('rows')).toBe(MAX_ROWS)
  }, 60_000)

  test('a 10 MiB file of junk rows is refused within seconds, and a redirect keeps answering meanwhile', async () => {
    const key = await box.account('junk')
    expect(
      (await box.post('/api/getLink.json', { url: 'https://example.com/hot', alias: 'hot-code' }, as(key))).status,
    ).toBe(200)
    const junk = 'long_url\n' + 'x,y\n'.repeat((10 * 1024 * 1024 - 9) / 4)
    const started = performance.now()
    let slowest = 0
    let redirects = 0
    let done = false
    const answered = importFile(key, junk).finally(() => (done = true))
    while (!done) {
      const t = performance.now()
      const res = await fetch(`${origin}/hot-code`, { redirect: 'manual' })
      await res.arrayBuffer()
      expect(res.status).toBe(302)
      slowest = Math.max(slowest, performance.now() - t)
      redirects++
    }
    const r = await answered
    expect([r.status, r.body.code]).toEqual([413, 'too_large'])
    expect(performance.now() - started).toBeLessThan(5_000)
    expect(redirects).toBeGreaterThanOrEqual(1)
    expect(slowest).toBeLessThan(500)
    expect(countOf('junk')).toBe(1)
  }, 60_000)
})

describe('one import at a time per account', () => {
  test('a second import of the account while one runs is answered 429 rate_limited with Retry-After; another account goes on; then it is free again', async () => {
    const key = await box.account('busy')
    const other = await box.account('other')
    const id = (box.db.query("SELECT id FROM accounts WHERE name = 'busy'").get() as { id: number }).id
    const first = importFile(key, rowsFile('b1', MAX_ROWS))
    await until(
      () => box.db.query('SELECT 1 FROM import_locks WHERE account_id = ?').get(id) !== null,
      'the first import to hold the lock',
      10_000,
    )
    const [second, beside] = await Promise.all([
      importFile(key, rowsFile('b2', 10)),
      importFile(other, rowsFile('ot', 10)),
    ])
    expect([second.status, second.body.code]).toEqual([429, 'rate_limited'])
    expect(second.body.message).toContain('one import at a time')
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect([beside.status, beside.body.return?.created]).toEqual([200, 10])
    expect((await first).body.return.created).toBe(MAX_ROWS)
    // Freed at the end (and by a refused file too).
    expect(box.db.query('SELECT count(*) AS n FROM import_locks').get()).toEqual({ n: 0 })
    expect((await importFile(key, 'not,a,linkbox,file\n')).status).toBe(400)
    expect((await importFile(key, rowsFile('b3', 5))).body.return.created).toBe(5)
  }, 60_000)
})

describe('the account hears of an import once', () => {
  let receiver: Receiver
  afterAll(() => receiver?.stop())

  test('one links.imported event (account, counts, the first 1,000 codes), no link.created per link; a link made alone still sends its own', async () => {
    receiver = startReceiver()
    const key = await box.account('hooked')
    const made = await box.post('/api/webhooks.json', { action: 'create', url: receiver.url }, as(key))
    expect(made.status, JSON.stringify(made.body)).toBe(200)
    expect(made.body.return.events).toContain('links.imported')
    receiver.secret = made.body.return.secret
    const file = rowsFile('h', 1_500) + 'bad one,https://example.com/x,\r\n,,\r\n'
    const r = await importFile(key, file)
    expect(r.body.return).toMatchObject({ created: 1_500, skipped_total: 2 })
    await until(() => receiver.got.length >= 1, 'the import event')
    await Bun.sleep(500)
    expect(receiver.got.length).toBe(1)
    expect(receiver.got[0]!.verifyError).toBeNull()
    const event = JSON.parse(receiver.got[0]!.body)
    expect(event.type).toBe('links.imported')
    expect(event.data).toEqual({
      account: 'hooked',
      created: 1_500,
      skipped: 2,
      codes: Array.from({ length: 1000 }, (_, i) => `h-${i}`),
    })
    expect((await box.post('/api/getLink.json', { url: 'https://example.com/alone' }, as(key))).status).toBe(200)
    await until(() => receiver.got.length >= 2, 'link.created of a link made alone')
    expect(JSON.parse(receiver.got[1]!.body).type).toBe('link.created')
  }, 60_000)
})
