// Rotating a webhook's secret with an overlap ([webhooks] rotation_overlap), end to end: a real receiver on
// 127.0.0.1 verifies every delivery with the `standardwebhooks` package (never our own code). During the
// overlap a delivery carries two signatures and verifies with the old secret and with the new; once the app's
// clock is past the overlap only the new one verifies; a second rotation during an overlap drops the oldest.
// The clock is moved by 61 s at most: webhook-timestamp stays within the receiver's 5-minute tolerance.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Webhook } from 'standardwebhooks'
import { makeBox, type TestBox } from '../support/app'
import { startReceiver, until, type Received, type Receiver } from '../support/webhooks'
import { newSecret } from '../../src/webhooks/sign'

const OVERLAP_S = 60
let box: TestBox
let key: string
let receiver: Receiver
let offset = 0
let hookId = 0
let links = 0

beforeAll(async () => {
  box = await makeBox(
    {
      media: { allow_private_networks: true },
      server: { host: '127.0.0.1', port: 0 },
      webhooks: { rotation_overlap: OVERLAP_S },
    },
    { clock: () => Date.now() + offset },
  )
  box.listen() // starts the deliverer
  key = await box.account('rotor')
  receiver = startReceiver()
  const made = await api({ action: 'create', url: receiver.url, events: 'link.created' })
  hookId = made.id
  receiver.secret = made.secret
})
afterAll(async () => {
  await box?.cleanup()
  receiver?.stop()
})

async function api(fields: Record<string, string | number>) {
  const r = await box.post(
    '/api/webhooks.json',
    Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, String(v)])),
    { 'x-api-key': key },
  )
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return r.body.return
}

/** A link made through the API, and its link.created delivery as the receiver got it. */
async function delivered(): Promise<Received> {
  const n = receiver.got.length
  const r = await box.post('/api/getLink.json', { url: `https://example.com/r${++links}` }, { 'x-api-key': key })
  expect(r.status).toBe(200)
  await until(() => receiver.got.length > n, 'the link.created delivery')
  return receiver.got[n]!
}

/** The standardwebhooks verdict for `got` with `secret`: null when it verifies, else the error's text. */
function verdict(got: Received, secret: string): string | null {
  try {
    new Webhook(secret).verify(got.body, got.headers)
    return null
  } catch (err) {
    return (err as Error).message
  }
}

test('during the overlap both secrets verify (two signatures, new first); after it only the new one', async () => {
  const old = receiver.secret
  const before = await delivered()
  expect(before.headers['webhook-signature']!.split(' ')).toHaveLength(1)
  expect(verdict(before, old)).toBeNull()

  const rotatedAt = Date.now() + offset
  const rotated = await api({ action: 'rotate', id: hookId })
  const fresh = rotated.secret as string
  expect(fresh).not.toBe(old)
  expect(rotated.earlier_secret_dropped).toBe(false)
  const expires = Date.parse(rotated.previous_secret_expires)
  expect(expires - rotatedAt).toBeGreaterThanOrEqual(OVERLAP_S * 1000 - 50)
  expect(expires - rotatedAt).toBeLessThanOrEqual(OVERLAP_S * 1000 + 1000)
  // The list says so too (and never shows a secret).
  const listed = (await api({ action: 'list' })).webhooks.find((w: { id: number }) => w.id === hookId)
  expect(listed.previous_secret_expires).toBe(rotated.previous_secret_expires)
  expect(JSON.stringify(listed)).not.toContain('whsec_')

  const during = await delivered()
  const signatures = during.headers['webhook-signature']!.split(' ')
  expect(signatures).toHaveLength(2)
  expect(signatures.every((s) => s.startsWith('v1,'))).toBe(true)
  expect(verdict(during, fresh)).toBeNull()
  expect(verdict(during, old)).toBeNull()
  expect(verdict(during, newSecret())).not.toBeNull()
  // The new secret's signature comes first: a receiver that checks only the first has the new one.
  expect(verdict({ ...during, headers: { ...during.headers, 'webhook-signature': signatures[0]! } }, fresh)).toBeNull()

  // Past the overlap (the app's clock 61 s on): the old secret no longer verifies.
  offset += (OVERLAP_S + 1) * 1000
  const after = await delivered()
  expect(after.headers['webhook-signature']!.split(' ')).toHaveLength(1)
  expect(verdict(after, fresh)).toBeNull()
  expect(verdict(after, old)).toMatch(/signature/i)
  const listedAfter = (await api({ action: 'list' })).webhooks.find((w: { id: number }) => w.id === hookId)
  expect(listedAfter.previous_secret_expires).toBeNull()
  receiver.secret = fresh
})

test('a second rotation during the overlap drops the secret before the previous one: only the newest two verify', async () => {
  const first = receiver.secret
  const second = (await api({ action: 'rotate', id: hookId })).secret as string
  const third = await api({ action: 'rotate', id: hookId })
  expect(third.earlier_secret_dropped).toBe(true)
  expect(third.previous_secret_expires).not.toBeNull()
  const got = await delivered()
  expect(got.headers['webhook-signature']!.split(' ')).toHaveLength(2)
  expect(verdict(got, third.secret)).toBeNull()
  expect(verdict(got, second)).toBeNull()
  expect(verdict(got, first)).toMatch(/signature/i)
  receiver.secret = third.secret
})

test('rotation_overlap = 0: a rotation keeps nothing, and its answer says so', async () => {
  box.config.webhooks.rotation_overlap = 0
  try {
    const before = receiver.secret
    const r = await api({ action: 'rotate', id: hookId })
    expect(r.previous_secret_expires).toBeNull()
    const got = await delivered()
    expect(got.headers['webhook-signature']!.split(' ')).toHaveLength(1)
    expect(verdict(got, r.secret)).toBeNull()
    expect(verdict(got, before)).toMatch(/signature/i)
  } finally {
    box.config.webhooks.rotation_overlap = OVERLAP_S
  }
})
