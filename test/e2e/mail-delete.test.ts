// Deleting mail and marking it unread through the API (SPEC §8): POST /api/message.json with action=delete,
// seen or unseen, and POST /api/mailbox.json with action=delete. Mail goes in over a real SMTP socket
// (nodemailer); what comes out is checked in the answers, the rows of the real SQLite file and the files
// under <data_dir>/mail: a deleted message's files go (unless another mailbox's copy names them), a deleted
// mailbox takes everything with it and its address is free for anyone. Errors as the GET methods give them.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, readdirSync, statSync, utimesSync } from 'node:fs'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import { makeBox, type TestBox } from '../support/app'

setDefaultTimeout(30_000)

const DOMAIN = 'mail.test'

let box: TestBox
let send: ReturnType<typeof nodemailer.createTransport>
let aliceKey: string
let bobKey: string

beforeAll(async () => {
  box = await makeBox({ mail: { domains: [DOMAIN], smtp_host: '127.0.0.1' } }, { smtpPort: 0 })
  const port = (await box.startSmtp())!.port
  send = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true } as any)
  aliceKey = await box.account('alice')
  bobKey = await box.account('bob')
})
afterAll(async () => {
  send?.close()
  await box?.cleanup()
})

const as = (key: string) => ({ 'x-api-key': key })
const post = (method: string, fields: Record<string, string | number>, key = aliceKey) =>
  box.post(`/api/${method}`, Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, String(v)])), as(key))
const get = (method: string, query: Record<string, string | number>, key = aliceKey) =>
  box.get(`/api/${method}`, Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)])), as(key))

/** Sends over SMTP; the ids the service stored it as (one per mailbox, from the 250 reply). */
async function deliver(to: string[], subject: string, opts: { big?: boolean } = {}): Promise<number[]> {
  const info = await send.sendMail({
    from: 'sender@example.org',
    to,
    subject,
    text: `Hello ${subject}`,
    // Past the inline limit (256 KiB): the message's bytes are files under <data_dir>/mail.
    attachments: opts.big
      ? [{ filename: 'big.bin', content: Buffer.alloc(400 * 1024, 7) }]
      : [{ filename: 'a.txt', content: 'small\n' }],
  })
  return /stored as ([\d, ]+)/.exec(info.response)![1]!.split(',').map(Number)
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return []
  return (readdirSync(dir, { recursive: true }) as string[]).filter(
    (p) => statSync(join(dir, p)).isFile() && !p.startsWith('incoming'),
  )
}
const blobOf = (id: number) =>
  (box.db.query('SELECT blob FROM mail_messages WHERE id = ?').get(id) as { blob: string } | null)?.blob ?? null
const blobFiles = (blob: string) => filesUnder(join(box.dir, 'mail', blob.slice(0, 2), blob))
const count = (table: string, where: string, ...args: (string | number)[]) =>
  (box.db.query(`SELECT count(*) AS n FROM ${table} WHERE ${where}`).get(...args) as { n: number }).n

describe('message.json action=delete', () => {
  const address = `del@${DOMAIN}`
  let small: number
  let big: number

  beforeAll(async () => {
    expect((await get('mailbox.json', { address })).status).toBe(200)
    small = (await deliver([address], 'small one'))[0]!
    big = (await deliver([address], 'big one', { big: true }))[0]!
  })

  test('deletes the message, its attachments and its files (after the rows); messages.json no longer lists it', async () => {
    const blob = blobOf(big)!
    expect(blobFiles(blob).sort()).toEqual(['1.bin', 'body.json', 'raw.eml'])
    const res = await post('message.json', { address, id: big, action: 'delete' })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ status: 'success', return: { id: big, deleted: true } })
    expect(count('mail_messages', 'id = ?', big)).toBe(0)
    expect(count('mail_attachments', 'message_id = ?', big)).toBe(0)
    expect(blobFiles(blob)).toEqual([])
    const list = await get('messages.json', { address })
    expect(list.body.return.messages.map((m: { id: number }) => m.id)).toEqual([small])
    expect((await get('mailbox.json', { address })).body.return.messages).toBe(1)
    expect((await get('message.json', { address, id: big })).status).toBe(404)
  })

  test('a small message kept in the database: its inline bytes go with its row', async () => {
    const blob = blobOf(small)!
    expect(count('mail_inline', 'blob = ?', blob)).toBe(1)
    const res = await post('message.json', { address, id: small, action: 'delete' })
    expect(res.body.return).toEqual({ id: small, deleted: true })
    expect(count('mail_inline', 'blob = ?', blob)).toBe(0)
    expect(count('mail_inline_parts', 'blob = ?', blob)).toBe(0)
  })

  test('deleted already, or never there: 404 not_found naming the message', async () => {
    const again = await post('message.json', { address, id: small, action: 'delete' })
    expect(again.status).toBe(404)
    expect(again.body).toEqual({
      status: 'error',
      code: 'not_found',
      message: `There is no message ${small} in ${address}.`,
    })
    const unknown = await post('message.json', { address, id: 999_999, action: 'delete' })
    expect(unknown.status).toBe(404)
    expect(unknown.body.message).toBe(`There is no message 999999 in ${address}.`)
  })

  test('one delivery to two mailboxes: deleting one copy keeps the files the other still names', async () => {
    const other = `del-copy@${DOMAIN}`
    expect((await get('mailbox.json', { address: other })).status).toBe(200)
    const [a, b] = await deliver([address, other], 'shared', { big: true })
    const blob = blobOf(a!)!
    expect(blobOf(b!)).toBe(blob)
    expect((await post('message.json', { address, id: a!, action: 'delete' })).body.return).toEqual({
      id: a,
      deleted: true,
    })
    expect(blobFiles(blob).sort()).toEqual(['1.bin', 'body.json', 'raw.eml'])
    expect((await get('message.json', { address: other, id: b! })).body.return.text).toContain('Hello shared')
    expect((await post('message.json', { address: other, id: b!, action: 'delete' })).status).toBe(200)
    expect(blobFiles(blob)).toEqual([])
  })
})

describe('a crash between the commit and the files', () => {
  test('leaves files no row names (never rows without files): the sweep removes them', async () => {
    const address = `crash@${DOMAIN}`
    await get('mailbox.json', { address })
    const id = (await deliver([address], 'crashed', { big: true }))[0]!
    const blob = blobOf(id)!
    // What the deletion's transaction commits, and then no file removal (the process died).
    box.db.query('DELETE FROM mail_messages WHERE id = ?').run(id)
    expect((await get('messages.json', { address })).body.return.messages).toEqual([])
    expect(blobFiles(blob)).toHaveLength(3)
    // Files of a delivery in progress are young; these are left an hour, then swept as orphans.
    const folder = join(box.dir, 'mail', blob.slice(0, 2), blob)
    const past = new Date(Date.now() - 2 * 3600_000)
    utimesSync(folder, past, past)
    expect((await box.mail.sweep({ orphans: true })).orphans).toBe(1)
    expect(existsSync(folder)).toBe(false)
  })
})

describe('message.json action=seen and unseen', () => {
  const address = `seen@${DOMAIN}`
  let id: number

  beforeAll(async () => {
    await get('mailbox.json', { address })
    id = (await deliver([address], 'to read'))[0]!
  })

  test('unseen makes a read message new again; seen marks it read; messages.json says so', async () => {
    expect((await get('message.json', { address, id })).body.return.seen).toBe(true)
    const unseen = await post('message.json', { address, id, action: 'unseen' })
    expect(unseen.body).toEqual({ status: 'success', return: { id, seen: false } })
    expect((await get('messages.json', { address })).body.return.messages[0]).toMatchObject({ id, seen: false })
    expect(count('mail_messages', 'id = ? AND seen = 0', id)).toBe(1)
    const seen = await post('message.json', { address, id, action: 'seen' })
    expect(seen.body).toEqual({ status: 'success', return: { id, seen: true } })
    expect((await get('messages.json', { address })).body.return.messages[0]).toMatchObject({ id, seen: true })
  })
})

describe('errors, as the GET methods give them', () => {
  const address = `guarded@${DOMAIN}`
  let id: number

  beforeAll(async () => {
    await get('mailbox.json', { address })
    id = (await deliver([address], 'guarded'))[0]!
  })

  test("another account's mailbox: the same 403 not_owner as the GETs, and nothing changes", async () => {
    const read = await get('message.json', { address, id }, bobKey)
    for (const fields of [
      { address, id, action: 'delete' },
      { address, id, action: 'unseen' },
    ]) {
      const r = await post('message.json', fields, bobKey)
      expect(r.status).toBe(403)
      expect(r.body).toEqual(read.body)
    }
    const box403 = await post('mailbox.json', { address, action: 'delete' }, bobKey)
    expect(box403.status).toBe(403)
    expect(box403.body).toEqual((await get('messages.json', { address }, bobKey)).body)
    expect(box403.body.code).toBe('not_owner')
    expect(count('mail_messages', 'id = ?', id)).toBe(1)
    expect(count('mailboxes', 'address = ?', address)).toBe(1)
  })

  test('a mailbox that does not exist: 404 not_found', async () => {
    for (const [method, fields] of [
      ['message.json', { address: 'nobody', id, action: 'delete' }],
      ['mailbox.json', { address: 'nobody', action: 'delete' }],
    ] as const) {
      const r = await post(method, fields)
      expect(r.status).toBe(404)
      expect(r.body).toEqual({
        status: 'error',
        code: 'not_found',
        message: `There is no mailbox nobody@${DOMAIN} (it may have expired).`,
      })
    }
  })

  test('a missing field: 400 missing_parameter naming it', async () => {
    const cases: [string, Record<string, string | number>, string][] = [
      ['message.json', { address, action: 'delete' }, 'id'],
      ['message.json', { address, id }, 'action'],
      ['message.json', { id, action: 'delete' }, 'address'],
      ['mailbox.json', { address }, 'action'],
      ['mailbox.json', { action: 'delete' }, 'address'],
    ]
    for (const [method, fields, name] of cases) {
      const r = await post(method, fields)
      expect([method, name, r.status, r.body.code]).toEqual([method, name, 400, 'missing_parameter'])
      expect(r.body.message).toContain(`"${name}"`)
    }
  })

  test('an unknown action: 400 invalid_parameter naming "action" and the ones there are', async () => {
    const r = await post('message.json', { address, id, action: 'archive' })
    expect(r.status).toBe(400)
    expect(r.body).toEqual({
      status: 'error',
      code: 'invalid_parameter',
      message: 'The parameter "action" must be one of delete, seen, unseen.',
    })
    const m = await post('mailbox.json', { address, action: 'empty' })
    expect(m.status).toBe(400)
    expect(m.body).toEqual({
      status: 'error',
      code: 'invalid_parameter',
      message: 'The parameter "action" must be one of delete.',
    })
    expect(count('mail_messages', 'id = ?', id)).toBe(1)
  })

  test('no key: 401; a key without the mail scope: 403 scope_denied', async () => {
    const anon = await box.post('/api/message.json', { address, id: String(id), action: 'delete' })
    expect(anon.status).toBe(401)
    const narrow = (await box.accounts.createKey({ account: 'alice', scopes: ['links'] })).key
    const r = await post('mailbox.json', { address, action: 'delete' }, narrow)
    expect([r.status, r.body.code]).toEqual([403, 'scope_denied'])
    expect(count('mailboxes', 'address = ?', address)).toBe(1)
  })
})

describe('mailbox.json action=delete', () => {
  test('the mailbox, its messages, attachments and files go; the address is free for another account', async () => {
    const address = `gone@${DOMAIN}`
    expect((await get('mailbox.json', { address })).status).toBe(200)
    const [big] = await deliver([address], 'big', { big: true })
    const [small] = await deliver([address], 'small')
    const bigBlob = blobOf(big!)!
    const smallBlob = blobOf(small!)!
    expect(blobFiles(bigBlob)).toHaveLength(3)

    const res = await post('mailbox.json', { address, action: 'delete' })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ status: 'success', return: { address, deleted: true } })
    expect(count('mailboxes', 'address = ?', address)).toBe(0)
    expect(count('mail_messages', 'id IN (?, ?)', big!, small!)).toBe(0)
    expect(count('mail_attachments', 'message_id IN (?, ?)', big!, small!)).toBe(0)
    expect(count('mail_inline', 'blob = ?', smallBlob)).toBe(0)
    expect(blobFiles(bigBlob)).toEqual([])
    expect(existsSync(join(box.dir, 'mail', bigBlob.slice(0, 2), bigBlob))).toBe(false)

    // Gone for its owner; free for anyone.
    expect((await get('messages.json', { address })).status).toBe(404)
    const again = await post('mailbox.json', { address, action: 'delete' })
    expect(again.status).toBe(404)
    const bob = await get('mailbox.json', { address }, bobKey)
    expect(bob.status).toBe(200)
    expect(bob.body.return).toMatchObject({ address, messages: 0 })
    expect(
      box.db
        .query('SELECT a.name FROM mailboxes m JOIN accounts a ON a.id = m.account_id WHERE m.address = ?')
        .get(address),
    ).toEqual({ name: 'bob' })
    // Mail to it now is bob's.
    const [next] = await deliver([address], 'for bob')
    expect(
      (await get('messages.json', { address }, bobKey)).body.return.messages.map((m: { id: number }) => m.id),
    ).toEqual([next])
  })

  test('a messages.json held with wait=N answers (empty) when its mailbox is deleted', async () => {
    const address = `held@${DOMAIN}`
    await get('mailbox.json', { address })
    const held = get('messages.json', { address, wait: 30 })
    await Bun.sleep(50)
    const started = Date.now()
    expect((await post('mailbox.json', { address, action: 'delete' })).status).toBe(200)
    const answer = await held
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(answer.status).toBe(200)
    expect(answer.body.return).toEqual({ address, messages: [] })
  })
})
