// Webhooks end to end, through the parts two halves of the work built: an endpoint made with webhooks.json,
// a link created, changed and deleted and a mail received through the API and SMTP's delivery path, and the
// receiver getting each event once, signed (verified with the `standardwebhooks` package), with the body
// SPEC §9 describes — woken by the commit, not by the deliverer's timer. (Two requests per endpoint may be in
// flight at once, so events that are due together can arrive in either order: they are matched by type.)
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { makeBox, type TestBox } from '../support/app'
import { startReceiver, until, type Receiver } from '../support/webhooks'

let box: TestBox
let key: string
let receiver: Receiver

beforeAll(async () => {
  box = await makeBox({ media: { allow_private_networks: true }, server: { host: '127.0.0.1', port: 0 } })
  box.listen() // starts the deliverer
  key = await box.account('hooks')
  receiver = startReceiver()
})
afterAll(async () => {
  await box?.cleanup()
  receiver?.stop()
})

test('link and mail events reach the endpoint signed, once each, soon after the change', async () => {
  const made = await box.post(
    '/api/webhooks.json',
    { action: 'create', url: receiver.url, events: 'link.created,link.updated,link.deleted,mail.received' },
    { 'x-api-key': key },
  )
  expect(made.status, JSON.stringify(made.body)).toBe(200)
  receiver.secret = made.body.return.secret
  expect(receiver.secret).toMatch(/^whsec_/)

  const started = Date.now()
  const link = await box.post(
    '/api/getLink.json',
    { url: 'https://example.com/hooked', alias: 'hooked' },
    { 'x-api-key': key },
  )
  expect(link.status).toBe(200)
  await until(() => receiver.got.length >= 1, 'link.created')
  // Woken by the commit: the deliverer's own timer looks only every few seconds.
  expect(Date.now() - started).toBeLessThan(4_000)
  expect(
    (await box.post('/api/update.json', { code: 'hooked', url: 'https://example.com/changed' }, { 'x-api-key': key }))
      .status,
  ).toBe(200)
  expect((await box.post('/api/delete.json', { code: 'hooked' }, { 'x-api-key': key })).status).toBe(200)

  const owner = (await box.accounts.authenticate(key))!
  await box.mail.getOrCreate(owner, 'hooked')
  const check = await box.mail.checkRecipient('hooked@localhost')
  if (!check.ok) throw new Error('the mailbox does not take mail')
  const bytes = Buffer.from('From: a@example.com\r\nTo: hooked@localhost\r\nSubject: hi\r\n\r\nhello\r\n')
  await box.mail.deliver(
    { size: bytes.length, oversize: false, bytes, file: null },
    'a@example.com',
    [check.mailboxId],
    () => false,
  )

  await until(() => receiver.got.length >= 4, 'four events')
  await Bun.sleep(200)
  expect(receiver.got.length).toBe(4)
  for (const r of receiver.got) expect(r.verifyError).toBeNull()
  const bodies = receiver.got.map((r) => JSON.parse(r.body))
  expect(bodies.map((b) => b.type).sort()).toEqual(['link.created', 'link.deleted', 'link.updated', 'mail.received'])
  const of = (type: string) => bodies.find((b) => b.type === type)!
  expect(of('link.created').data).toMatchObject({ hex: 'hooked', long_url: 'https://example.com/hooked' })
  expect(of('link.updated').data).toMatchObject({ hex: 'hooked', long_url: 'https://example.com/changed' })
  expect(of('link.deleted').data).toMatchObject({ hex: 'hooked' })
  expect(JSON.stringify(bodies)).not.toContain('password_hash')
  expect(of('mail.received').data).toMatchObject({ address: 'hooked@localhost', subject: 'hi' })
  for (const b of bodies) expect(new Date(b.timestamp).toISOString()).toBe(b.timestamp)
  // One id per event, each distinct, and the one the delivery log shows.
  const ids = receiver.got.map((r) => r.id)
  expect(new Set(ids).size).toBe(4)
  const log = await box.post(
    '/api/webhooks.json',
    { action: 'deliveries', id: String(made.body.return.id) },
    { 'x-api-key': key },
  )
  expect(log.body.return.deliveries.map((d: any) => d.webhook_id).sort()).toEqual([...ids].sort())
  expect(log.body.return.deliveries.every((d: any) => d.state === 'ok' && d.last_status === 200)).toBe(true)

  // The first to arrive was link.created (nothing else was due before it was sent).
  expect(bodies[0].type).toBe('link.created')
  // Redelivered: the same id again, the same bytes.
  const first = log.body.return.deliveries.find((d: any) => d.webhook_id === ids[0])
  const again = await box.post(
    '/api/webhooks.json',
    { action: 'redeliver', id: String(made.body.return.id), event: String(first.event_id) },
    { 'x-api-key': key },
  )
  expect(again.status, JSON.stringify(again.body)).toBe(200)
  await until(() => receiver.got.length >= 5, 'the redelivery')
  expect(receiver.got[4]!.id).toBe(ids[0]!)
  expect(receiver.got[4]!.body).toBe(receiver.got[0]!.body)
  expect(receiver.got[4]!.verifyError).toBeNull()
})
