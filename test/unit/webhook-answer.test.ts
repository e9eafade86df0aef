// One delivery attempt's record (webhooks/post.ts), against real receivers on 127.0.0.1: the request's headers as
// they went out (the receiver's own view is the reference), and the answer kept within its bounds — at most 50
// headers and 8 KiB of them, the first 4 KiB of the body — with `truncated` saying when more was left out.
import { afterAll, expect, test } from 'bun:test'
import { post } from '../../src/webhooks/post'
import { newSecret } from '../../src/webhooks/sign'
import type { LeasedDelivery } from '../../src/webhooks/storage/contract'

const servers: { stop(force: boolean): void }[] = []
afterAll(() => {
  for (const s of servers) s.stop(true)
})

/** A receiver answering `answer`, and what it was sent (headers as it read them). */
function receiver(answer: () => Response) {
  const seen: Record<string, string>[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: async (req) => {
      await req.text()
      const headers: Record<string, string> = {}
      req.headers.forEach((v, k) => (headers[k] = v))
      seen.push(headers)
      return answer()
    },
  })
  servers.push(server)
  return { url: `http://127.0.0.1:${server.port}/hook`, seen }
}

const row = (url: string, previous: string | null = null): LeasedDelivery => ({
  id: 1,
  event_id: 1,
  webhook_id: 'msg_0123456789abcdef0123456789abcdef',
  endpoint_id: 1,
  attempts: 0,
  url,
  secret: newSecret(),
  previous_secret: previous,
  payload: '{"type":"webhook.test","timestamp":"2026-01-01T00:00:00.000Z","data":{}}',
  lease: 0,
})
const send = (r: LeasedDelivery) => post(r, { allowPrivate: true, clock: Date.now, controller: new AbortController() })

test('the headers recorded are those the receiver got, the signature among them (two during an overlap)', async () => {
  const r = receiver(() => new Response('ok', { headers: { 'x-one': '1' } }))
  const answer = await send(row(r.url, newSecret()))
  const sent = Object.fromEntries(answer.sent)
  const got = r.seen[0]!
  for (const name of Object.keys(got)) expect({ name, value: sent[name] }).toEqual({ name, value: got[name] })
  expect(Object.keys(sent).sort()).toEqual(Object.keys(got).sort())
  expect(sent['webhook-signature']!.split(' ')).toHaveLength(2)
  expect(answer).toMatchObject({ status: 200, body: 'ok', truncated: false })
  expect(Object.fromEntries(answer.headers)).toMatchObject({ 'x-one': '1' })
})

test('a long answer: its first 4,096 bytes kept and `truncated`; exactly 4,096 bytes: all of it, not truncated', async () => {
  const long = receiver(() => new Response('a'.repeat(4096) + 'b'.repeat(10_000), { status: 500 }))
  const cut = await send(row(long.url))
  expect(cut.status).toBe(500)
  expect(cut.body).toBe('a'.repeat(4096))
  expect(cut.truncated).toBe(true)
  const exact = receiver(() => new Response('c'.repeat(4096)))
  const whole = await send(row(exact.url))
  expect(whole.body).toBe('c'.repeat(4096))
  expect(whole.truncated).toBe(false)
})

test('many or large headers: at most 50 and 8 KiB of them kept, and `truncated` says some were left out', async () => {
  const many = receiver(() => {
    const headers = new Headers()
    for (let i = 0; i < 80; i++) headers.set(`x-h${String(i).padStart(2, '0')}`, 'v')
    return new Response('', { headers })
  })
  const a = await send(row(many.url))
  expect(a.headers.length).toBe(50)
  expect(a.truncated).toBe(true)
  const big = receiver(
    () => new Response('', { headers: { 'x-big-1': 'z'.repeat(5000), 'x-big-2': 'z'.repeat(5000) } }),
  )
  const b = await send(row(big.url))
  const bytes = b.headers.reduce((n, [k, v]) => n + k.length + v.length, 0)
  expect(bytes).toBeLessThanOrEqual(8192)
  expect(b.headers.map(([k]) => k)).toContain('x-big-1')
  expect(b.headers.map(([k]) => k)).not.toContain('x-big-2')
  expect(b.truncated).toBe(true)
})
