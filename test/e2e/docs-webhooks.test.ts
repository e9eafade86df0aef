// The webhook events as documented (issue 24): every event type is made to happen for real — a link created,
// changed, visited, reported and deleted through the app, a message sent over SMTP, a test event — and
// delivered to a receiver on 127.0.0.1; each body received must validate (ajv) against the schema the
// OpenAPI document's `webhooks` section gives for its type, and each signature must pass both the
// `standardwebhooks` package and the hand-written check the /api/docs page shows (its very text, run here).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import SwaggerParser from '@apidevtools/swagger-parser'
import Ajv2020 from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import { Webhook } from 'standardwebhooks'
import { EVENT_TYPES } from '../../src/kernel/outbox'
import { BASE, makeBox, type TestBox } from '../support/app'
import { CHROME_UA } from '../support/server'
import { until } from '../support/webhooks'

interface Got {
  headers: Record<string, string>
  body: string
}

let box: TestBox
let key: string
let smtpPort: number
let receiver: ReturnType<typeof Bun.serve>
const got: Got[] = []

beforeAll(async () => {
  box = await makeBox(
    {
      media: { allow_private_networks: true },
      server: { host: '127.0.0.1', port: 0 },
      mail: { smtp_host: '127.0.0.1' },
    },
    { smtpPort: 0 },
  )
  box.listen() // starts the deliverer
  smtpPort = (await box.startSmtp())!.port
  key = await box.account('hooks')
  receiver = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: async (req) => {
      const headers: Record<string, string> = {}
      req.headers.forEach((value, name) => (headers[name] = value))
      got.push({ headers, body: await req.text() })
      return new Response('ok')
    },
  })
})
afterAll(async () => {
  await box?.cleanup()
  receiver?.stop(true)
})

const decode = (s: string) =>
  s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')

test("every event type, sent for real, has the body the document describes and a signature the page's check accepts", async () => {
  const events = [...EVENT_TYPES].join(',')
  const made = await box.post(
    '/api/webhooks.json',
    { action: 'create', url: `http://127.0.0.1:${receiver.port}/hook`, events },
    { 'x-api-key': key },
  )
  expect(made.status, JSON.stringify(made.body)).toBe(200)
  const { id: webhookId, secret } = made.body.return

  // link.created, link.updated
  expect(
    (
      await box.post(
        '/api/getLink.json',
        { url: 'https://example.com/documented', alias: 'documented', mode: 'preview' },
        { 'x-api-key': key },
      )
    ).status,
  ).toBe(200)
  expect(
    (
      await box.post(
        '/api/update.json',
        { code: 'documented', url: 'https://example.com/changed', expire: '3600' },
        { 'x-api-key': key },
      )
    ).status,
  ).toBe(200)
  // link.clicked: a visit by a person, counted when the clicks are written
  expect((await box.request('/documented', { headers: { 'user-agent': CHROME_UA, accept: 'text/html' } })).status).toBe(
    200,
  )
  await box.recorder.flush()
  // link.reported: the report form under the link
  const report = await box.request('/documented/report', {
    method: 'POST',
    headers: { origin: BASE, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ reason: 'spam', text: 'Sent to me <unasked>.', contact: 'me@example.org' }).toString(),
  })
  expect(report.status).toBe(303)
  // mail.received: a message over SMTP
  expect((await box.get('/api/mailbox.json', { address: 'hooked' }, { 'x-api-key': key })).status).toBe(200)
  const smtp = nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true } as any)
  await smtp.sendMail({
    from: 'Sender <a@example.com>',
    to: 'hooked@localhost',
    subject: 'Hello hooks',
    text: 'Hi https://example.com/x',
    attachments: [{ filename: 'a.txt', content: 'hello' }],
  })
  smtp.close()
  // links.imported: one event for a whole file
  const form = new FormData()
  form.set('file', 'code,long_url,title\r\nimported-1,https://example.com/imported,Imported\r\n')
  expect(
    (await box.request('/api/import.json', { method: 'POST', headers: { 'x-api-key': key }, body: form })).status,
  ).toBe(200)
  // link.deleted, webhook.test
  expect((await box.post('/api/delete.json', { code: 'documented' }, { 'x-api-key': key })).status).toBe(200)
  await box.webhooks.test(webhookId)

  const types = [...EVENT_TYPES, 'webhook.test']
  await until(() => got.length >= types.length, 'one event of each type')
  await Bun.sleep(200)
  expect(got.map((g) => JSON.parse(g.body).type).sort()).toEqual([...types].sort())

  // The document as served, and its schema for each event type.
  const doc = (await SwaggerParser.dereference(
    (await (await box.request('/api/docs/openapi.json')).json()) as never,
  )) as any
  const ajv = new Ajv2020({ strict: true, strictTypes: false, allErrors: true })
  addFormats(ajv)

  // The page's own check, as a reader would paste it into a module.
  const html = await (await box.request('/api/docs')).text()
  const snippet = decode(/<pre class="example verify"[^>]*><code>([\s\S]*?)<\/code><\/pre>/.exec(html)![1]!)
  const file = join(box.dir, 'verify-webhook.mjs')
  writeFileSync(file, `${snippet}\nexport { verifyWebhook }\n`)
  const { verifyWebhook } = (await import(file)) as {
    verifyWebhook: (secret: string, headers: Record<string, string>, body: string) => boolean
  }

  for (const g of got) {
    const body = JSON.parse(g.body)
    const schema = doc.webhooks[body.type].post.requestBody.content['application/json'].schema
    const validate = ajv.compile(schema)
    expect({ type: body.type, valid: validate(body), errors: validate.errors ?? null }).toEqual({
      type: body.type,
      valid: true,
      errors: null,
    })
    expect(g.headers['content-type']).toContain('application/json')
    // The package the page names, and the page's hand-written check: both accept it, and refuse a change.
    expect(() => new Webhook(secret).verify(g.body, g.headers)).not.toThrow()
    expect(verifyWebhook(secret, g.headers, g.body), body.type).toBe(true)
    expect(verifyWebhook(secret, g.headers, g.body.replace('"data"', '"data" ')), body.type).toBe(false)
    expect(verifyWebhook(secret.slice(0, -4) + 'AAAA', g.headers, g.body), body.type).toBe(false)
    expect(
      verifyWebhook(
        secret,
        { ...g.headers, 'webhook-timestamp': String(Number(g.headers['webhook-timestamp']) - 600) },
        g.body,
      ),
    ).toBe(false)
  }
  // The documented schemas are strict: a field the builders do not write is refused.
  const created = JSON.parse(got.find((g) => JSON.parse(g.body).type === 'link.created')!.body)
  const linkSchema = doc.webhooks['link.created'].post.requestBody.content['application/json'].schema
  expect(ajv.validate(linkSchema, { ...created, data: { ...created.data, password_hash: 'x' } })).toBe(false)
  const mail = JSON.parse(got.find((g) => JSON.parse(g.body).type === 'mail.received')!.body)
  expect(mail.data).toMatchObject({ address: 'hooked@localhost', subject: 'Hello hooks', attachments: 1 })
})
