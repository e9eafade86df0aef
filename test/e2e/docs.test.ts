// The API documents as a reader meets them (issue 24): /api/docs has the site's header, a table of contents
// with an anchor per method and per webhook event, and per method a curl example and an example answer;
// no Markdown shows through. The examples cannot drift: every curl command is taken from the rendered page
// and run with the real curl against the real service on a socket (the shell variables $LINKBOX and $KEY set
// to its address and a real key), and must succeed with an answer the document accepts; every example
// answer and event body is checked against the document's schemas with ajv. The document itself validates
// against the official OpenAPI 3.1 schema (vendored in test/fixtures/openapi-3.1) and has a webhooks section
// with every event type.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import SwaggerParser from '@apidevtools/swagger-parser'
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ApiMethod } from '../../src/web/api'
import { curlExample, exampleAnswer, inlineMarkdown, methodAnchor } from '../../src/pages/docs'
import { EVENT_TYPES } from '../../src/kernel/outbox'
import { makeBox, tempDir, testConfig, sqliteLinkbox, type SqliteLinkbox } from '../support/app'
import { accountWithPassword, signIn } from '../support/dashboard'

type Schema = Record<string, any>

const ajv = new Ajv2020({ strict: true, strictTypes: false, allErrors: true })
addFormats(ajv)
const compiled = new Map<object, ValidateFunction>()
function check(schema: Schema, value: unknown): string | null {
  let v = compiled.get(schema)
  if (!v) compiled.set(schema, (v = ajv.compile(schema)))
  return v(value) ? null : JSON.stringify(v.errors)
}

const RATE = { anon_per_minute: 100_000, key_per_minute: 100_000 }

/** What the yt-dlp stand-in says of download.json's example page (as in contract.test.ts). */
const EXAMPLE_INFO = {
  id: '42',
  title: 'A walk in the park',
  extractor_key: 'Generic',
  webpage_url: 'https://video.example.com/watch/42',
  duration: 61.5,
  thumbnail: 'https://video.example.com/thumbs/42.jpg',
  formats: [
    {
      format_id: 'mp4-720p',
      ext: 'mp4',
      protocol: 'https',
      url: 'https://cdn.example.com/42.mp4',
      vcodec: 'avc1',
      acodec: 'mp4a',
      width: 1280,
      height: 720,
      fps: 30,
      format_note: '720p',
    },
  ],
}

let dir: string
let box: SqliteLinkbox
let base: string
let key: string
let html: string
let raw: Schema // the document as published
let doc: Schema // dereferenced

beforeAll(async () => {
  dir = tempDir()
  // download.json's example page cannot be reached from here: its name gets a public address and a stand-in
  // for yt-dlp describes it (the real yt-dlp is media.test.ts's business). The example webhook's host gets
  // one too, so that webhooks.json's example passes the address check.
  const standIn = `${dir}/yt-dlp-stand-in`
  writeFileSync(
    standIn,
    `#!/bin/sh\nif [ "$1" = --version ]; then echo 2025.04.30; exit 0; fi\ncat <<'JSON'\n${JSON.stringify(EXAMPLE_INFO)}\nJSON\n`,
    { mode: 0o755 },
  )
  box = sqliteLinkbox(
    testConfig(dir, { server: { host: '127.0.0.1', port: 0 }, rate: RATE, media: { ytdlp_path: standIn } }),
    {
      resolve: async (host) => (host === 'video.example.com' || host === 'hooks.example.com' ? ['93.184.215.14'] : []),
    },
  )
  base = `http://127.0.0.1:${box.listen().port}`
  key = (await box.accounts.createAccount({ name: 'reader' })).key.key
  html = await (await fetch(`${base}/api/docs`)).text()
  raw = await (await fetch(`${base}/api/docs/openapi.json`)).json()
  doc = (await SwaggerParser.dereference(structuredClone(raw) as never)) as Schema
})

afterAll(async () => {
  await box?.close()
  rmSync(dir, { recursive: true, force: true })
})

const decode = (s: string) =>
  s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')

/** The page's text as a reader sees it: no head, no tags, entities decoded. */
const visibleText = (page: string) => decode(page.replace(/<head>[\s\S]*?<\/head>/, '').replace(/<[^>]+>/g, ''))

/** The section of the page with this id (method sections do not nest). */
function section(id: string): string {
  const start = html.indexOf(`<section class="method" id="${id}"`)
  expect(start, id).toBeGreaterThan(-1)
  return html.slice(start, html.indexOf('</section>', start))
}

/** The text of the first example block of a kind in a piece of the page. */
function block(part: string, kind: string): string {
  const m = new RegExp(`<pre class="example ${kind}"[^>]*><code>([\\s\\S]*?)</code></pre>`).exec(part)
  expect(m, kind).not.toBeNull()
  return decode(m![1]!)
}

const successSchema = (m: ApiMethod) =>
  doc.paths[m.path][m.verb.toLowerCase()].responses['200'].content['application/json'].schema

describe('the page', () => {
  test('has the site header: the wordmark leads home, the nav to the API and the dashboard', async () => {
    expect(html).toMatch(/<header class="site wide"><a class="brand" href="\/">/)
    expect(html).toContain('<nav aria-label="Site"><a href="/api/docs">API</a><a href="/dashboard">Sign in</a></nav>')
    expect(html).not.toContain('Signed in as')
  })

  test('signed in to the dashboard, the header says who, as the home page does, with a sign-out button', async () => {
    await accountWithPassword(box, 'docreader', 'correct horse battery')
    const who = await signIn(
      { request: (path, init) => fetch(`${base}${path}`, { ...init, redirect: 'manual' }) },
      'docreader',
      'correct horse battery',
    )
    const res = await fetch(`${base}/api/docs`, { headers: { cookie: who.cookie } })
    const page = await res.text()
    expect(page).toContain('Signed in as </span><strong>docreader</strong>')
    expect(page).toContain(`<input type="hidden" name="_csrf" value="${who.csrf}">`)
    expect(page).toContain('<a href="/dashboard">Dashboard</a>')
    // The sign-out form posts to this origin: the referrer policy lets the browser say so.
    expect(res.headers.get('referrer-policy')).toBe('same-origin')
    expect(res.headers.get('cache-control')).toBe('private, no-cache')
    expect((await fetch(`${base}/api/docs`)).headers.get('referrer-policy')).toBe('no-referrer')
  })

  test('every method has a section with a stable anchor and an entry in the contents', () => {
    const ids = [...html.matchAll(/ id="([^"]+)"/g)].map((m) => m[1]!)
    expect(new Set(ids).size).toBe(ids.length)
    const toc = html.slice(html.indexOf('<nav class="toc"'), html.indexOf('</nav>', html.indexOf('<nav class="toc"')))
    for (const m of box.methods) {
      const id = methodAnchor(m)
      // The path's file name; a second method on the same path (POST mailbox.json, message.json) its operationId.
      expect(id).toBe(m.operationId ?? m.path.replace('/api/', ''))
      expect(ids, id).toContain(id)
      expect(toc, id).toContain(`<a href="#${id}">`)
    }
    // No entry of the contents leads nowhere.
    const targets = [...toc.matchAll(/href="#([^"]+)"/g)].map((m) => m[1]!)
    expect(targets.length).toBeGreaterThan(box.methods.length + EVENT_TYPES.length)
    for (const t of targets) expect(ids, t).toContain(t)
    for (const t of ['start', 'answers', 'rate-limits', 'signed-links', 'webhook-events', 'verify-signatures'])
      expect(targets).toContain(t)
  })

  test('issue 38: each entry names its HTTP method; every example block has its copy button; the script is loaded', async () => {
    const toc = html.slice(html.indexOf('<nav class="toc"'), html.indexOf('</nav>', html.indexOf('<nav class="toc"')))
    for (const m of box.methods)
      expect(toc).toContain(
        `<a href="#${methodAnchor(m)}"><span class="verb">${m.verb}</span> <code>${m.path.replace('/api/', '')}</code></a>`,
      )
    const blocks = [...html.matchAll(/<pre class="example (curl|curl-more|setup|verify|verify-package)" id="([^"]+)"/g)]
    expect(blocks.length).toBeGreaterThan(box.methods.length)
    for (const [, , id] of blocks) expect(html, id).toContain(`data-copy="${id}"`)
    // Every curl command is one of them.
    expect(html.split('<pre class="example curl').length - 1).toBe(
      blocks.filter(([, kind]) => kind!.startsWith('curl')).length,
    )
    expect(html).toContain('<script src="/assets/app.js?v=')
    expect((await fetch(`${base}/api/docs`)).headers.get('content-security-policy')).toContain("script-src 'self'")
  })

  test('shows no Markdown: descriptions with `code` are rendered, not printed with their backticks', () => {
    // The declarations do use Markdown (the OpenAPI document keeps it) ...
    expect(JSON.stringify(raw)).toContain('`')
    const text = visibleText(html)
    expect(text).not.toContain('`')
    expect(text).not.toContain('**')
    // ... and the page shows it as code: webhooks.json's description names the events in <code>.
    expect(section('webhooks.json')).toContain('Events (<code>link.created</code>, <code>link.updated</code>')
  })

  test('inline Markdown is escaped first: nothing in a description can make markup', () => {
    expect(inlineMarkdown('a `<b>` **c** <i onclick="x">')).toBe(
      'a <code>&lt;b&gt;</code> <strong>c</strong> &lt;i onclick=&quot;x&quot;&gt;',
    )
    expect(inlineMarkdown('`**x**` and **`y`**')).toBe('<code>**x**</code> and **<code>y</code>**')
  })

  test("every example answer is the schema's own example and valid against the method's response schema", () => {
    for (const m of box.methods) {
      const shown = JSON.parse(block(section(methodAnchor(m)), 'answer'))
      expect(shown, m.path).toEqual(exampleAnswer(m))
      expect(shown.return, m.path).toEqual((m.returns as Schema).examples[0])
      expect(check(successSchema(m), shown), m.path).toBeNull()
    }
  })

  test('every method lists its error codes with what they mean, and the rate-limit headers', () => {
    for (const m of box.methods) {
      const part = section(methodAnchor(m))
      const errors = part.slice(part.indexOf('<table class="errors">'))
      const errorsText = visibleText(errors)
      for (const [status, answer] of Object.entries(
        doc.paths[m.path][m.verb.toLowerCase()].responses as Record<string, Schema>,
      )) {
        if (status === '200') continue
        expect(errors, `${m.path} ${status}`).toContain(`<tr><td>${status}</td>`)
        for (const code of answer.content['application/json'].schema.properties.code.enum as string[])
          expect(errorsText, `${m.path} ${code}`).toContain(code)
      }
      for (const h of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After'])
        expect(part, m.path).toContain(`<code>${h}</code>`)
      expect(part).toContain('<a href="#rate-limits">')
    }
    expect(html).toContain(
      'This box allows 100000 requests a minute per key and 100000 a minute per address without a key.',
    )
  })

  test('the signed /dl, /mail/raw and /mail/attachment links: what signs them and how long they last', async () => {
    const part = visibleText(
      html.slice(
        html.indexOf('<section id="signed-links"'),
        html.indexOf('</section>', html.indexOf('<section id="signed-links"')),
      ),
    )
    for (const s of [
      '/dl/<id>?exp=…&sig=…',
      '/mail/raw/<id>?exp=…&sig=…',
      '/mail/attachment/<id>?exp=…&sig=…',
      'HMAC-SHA256',
      'secrets/signing.key',
      '403',
      '410',
      '404',
    ])
      expect(part, s).toContain(s)
    expect(part).toContain('It works for 1 hour after the answer (media.link_ttl')
    expect(part).toContain('They work for 1 hour after the answer')
    // The media lifetime is the configured one.
    const other = await makeBox({ media: { link_ttl: 7200 } })
    try {
      expect(await (await other.request('/api/docs')).text()).toContain('It works for 2 hours after the answer')
    } finally {
      await other.cleanup()
    }
  })
})

describe('the curl examples', () => {
  /** The things the examples name: the link Ab3dE9 and the mailbox signup-test with message 17, the reader's. */
  async function fixtures() {
    const owner = (await box.accounts.authenticate(key))!
    if (!(await box.links.resolve('Ab3dE9')))
      await box.links.create({ url: 'https://example.com/fixture', alias: 'Ab3dE9' }, owner)
    await box.mail.getOrCreate(owner, 'signup-test')
    const mailbox = await box.mail.checkRecipient('signup-test@localhost')
    if (!mailbox.ok) throw new Error('the example mailbox does not take mail')
    const has17 = () =>
      box.db.query('SELECT 1 FROM mail_messages WHERE id = 17 AND mailbox_id = ?').get(mailbox.mailboxId) !== null
    // Made again once an example deleted it (POST mailbox.json and message.json do): ids are never handed
    // out twice, so the last one delivered is given the example's id.
    for (let i = mailMade ? 17 : 1; i <= 17 && !has17(); i++) {
      const bytes = Buffer.from(
        `From: Example <no-reply@example.com>\r\nTo: signup-test@localhost\r\nSubject: Confirm ${i}\r\n\r\nhttps://example.com/confirm?t=${i}\r\n`,
      )
      const [id] = await box.mail.deliver(
        { size: bytes.length, oversize: false, bytes, file: null },
        'no-reply@example.com',
        [mailbox.mailboxId],
        () => false,
      )
      if (i === 17 && id !== 17) box.db.query('UPDATE mail_messages SET id = 17 WHERE id = ?').run(id!)
    }
    if (!has17()) throw new Error('the example message 17 is missing')
    mailMade = true
  }
  let mailMade = false

  test('each is on the page, uses $LINKBOX (and $KEY where a key is needed) and nothing of this machine', () => {
    for (const m of box.methods) {
      const cmd = block(section(methodAnchor(m)), 'curl')
      expect(cmd, m.path).toBe(curlExample(m))
      expect(cmd).toStartWith(`curl -s`)
      expect(cmd).toContain(`"$LINKBOX${m.path}"`)
      expect(cmd.includes('-H "X-Api-Key: $KEY"'), m.path).toBe(m.key === 'required')
      expect(cmd).not.toContain('127.0.0.1')
      // Every parameter a method names for its example is one of its own, and sent.
      for (const name of m.exampleWith ?? []) {
        expect(
          m.params.map((p) => p.name),
          m.path,
        ).toContain(name)
        expect(cmd, m.path).toMatch(new RegExp(`--data-urlencode '?${name}=`))
      }
    }
    // An update that changes something; a webhook made, as the example answer shows.
    expect(block(section('update.json'), 'curl')).toContain(
      "--data-urlencode 'url=https://example.com/a/long/path?with=query'",
    )
    expect(block(section('webhooks.json'), 'curl')).toContain('--data-urlencode action=create')
  })

  test('a value is one shell word that the shell leaves as it is, whatever it holds', async () => {
    for (const value of ["it's", '$(echo injected) `echo too` $HOME', 'a b\tc', '"q" \\ !x', 'plain-value_1.2']) {
      const fake = {
        verb: 'POST',
        path: '/api/x.json',
        key: 'optional',
        summary: '',
        params: [{ name: 'q', required: true, schema: { type: 'string', examples: [value] } }],
      }
      const word = curlExample(fake as unknown as ApiMethod)
        .split(' \\\n  ')[1]!
        .replace(/^--data-urlencode /, '')
      const proc = Bun.spawn(['bash', '-c', `printf %s ${word}`], {
        stdout: 'pipe',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      })
      expect(await new Response(proc.stdout).text()).toBe(`q=${value}`)
    }
  })

  test('each, run with the real curl against this server, succeeds with an answer the document accepts', async () => {
    expect(Bun.which('curl')).not.toBeNull()
    for (const m of box.methods) {
      await fixtures()
      const cmd = block(section(methodAnchor(m)), 'curl')
      const headerFile = join(dir, 'headers.txt')
      // As a reader runs it: the page's text, in bash, with the two variables the page asks them to set
      // (and -D to keep the headers for this test).
      // (Not spawnSync: the server answering it runs in this process.)
      const proc = Bun.spawn(['bash', '-c', `${cmd} -D '${headerFile}'`], {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LINKBOX: base, KEY: key },
        stdout: 'pipe',
        stderr: 'pipe',
      })
      const [out, err, exit] = await Promise.all([
        new Response(proc.stdout).text(),
        new Response(proc.stderr).text(),
        proc.exited,
      ])
      expect({ path: m.path, exit, stderr: err }).toEqual({ path: m.path, exit: 0, stderr: '' })
      const body = JSON.parse(out)
      expect(body.status, `${m.path}: ${out.slice(0, 300)}`).toBe('success')
      expect(check(successSchema(m), body), m.path).toBeNull()
      const headers = readFileSync(headerFile, 'utf8').toLowerCase()
      expect(headers, m.path).toStartWith('http/1.1 200')
      expect(headers).toContain('ratelimit-limit: 100000')
      expect(headers).toContain('ratelimit-remaining: ')
    }
  }, 60_000)
})

describe('the further examples (visit limits, rules, splits)', () => {
  const moreBlocks = (part: string) =>
    [...part.matchAll(/<pre class="example curl-more"[^>]*><code>([\s\S]*?)<\/code><\/pre>/g)].map((m) => decode(m[1]!))

  test('getLink.json and update.json show one per new parameter, each as curlExample makes it', () => {
    for (const path of ['getLink.json', 'update.json']) {
      const m = box.methods.find((x) => methodAnchor(x) === path)!
      expect(m.moreExamples?.map((x) => x.with)).toEqual([['max_visits'], ['rules'], ['split']])
      expect(moreBlocks(section(path))).toEqual(m.moreExamples!.map((x) => curlExample(m, x.with)))
    }
    expect(moreBlocks(section('getLink.json'))[1]).toContain(`--data-urlencode 'rules=[{"country":["DE","AT","CH"]`)
  })

  test('each, run with the real curl against this server, succeeds and the link has what was sent', async () => {
    let ran = 0
    for (const m of box.methods) {
      const blocks = moreBlocks(section(methodAnchor(m)))
      for (const [i, cmd] of blocks.entries()) {
        if (!(await box.links.resolve('Ab3dE9')))
          await box.links.create(
            { url: 'https://example.com/fixture', alias: 'Ab3dE9' },
            (await box.accounts.authenticate(key))!,
          )
        const proc = Bun.spawn(['bash', '-c', cmd], {
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LINKBOX: base, KEY: key },
          stdout: 'pipe',
          stderr: 'pipe',
        })
        const [out, exit] = await Promise.all([new Response(proc.stdout).text(), proc.exited])
        expect(exit).toBe(0)
        const body = JSON.parse(out)
        expect(body.status, `${m.path}: ${out.slice(0, 300)}`).toBe('success')
        expect(check(successSchema(m), body), m.path).toBeNull()
        const sent = m.moreExamples![i]!.with[0]!
        expect(body.return[sent], `${m.path} ${sent}`).not.toBeNull()
        expect(body.return[sent], `${m.path} ${sent}`).toBeDefined()
        ran++
      }
    }
    expect(ran).toBe(6)
  }, 60_000)
})

describe('the OpenAPI document', () => {
  test('validates against the official OpenAPI 3.1 schema (vendored), and its JSON Schemas compile', () => {
    const official = JSON.parse(readFileSync(join(import.meta.dir, '../fixtures/openapi-3.1/schema.json'), 'utf8'))
    // Ajv resolves $dynamicRef "#meta" to the root (see fixtures/openapi-3.1/README.md): a plain $ref instead.
    const text = JSON.stringify(official).replaceAll('{"$dynamicRef":"#meta"}', '{"$ref":"#/$defs/schema"}')
    expect(text).not.toContain('$dynamicRef')
    const schema = JSON.parse(text)
    delete schema.$defs.schema.$dynamicAnchor
    // Formats are not checked (as swagger-parser does not): this iteration of the schema gives every $ref the
    // format "uri", which a reference within the document ("#/components/…") is not (fixed in later ones).
    const oas = new Ajv2020({ strict: false, allErrors: true, validateFormats: false })
    const validate = oas.compile(schema)
    expect(validate(raw), JSON.stringify(validate.errors?.slice(0, 3))).toBe(true)
    // It can fail: a webhook answered with a status that is not one.
    const broken = structuredClone(raw)
    broken.webhooks['link.created'].post.responses = { OK: { description: 'x' } }
    expect(validate(broken)).toBe(false)
    // The schemas inside are JSON Schema 2020-12 (ajv checks each against the meta-schema as it compiles it).
    const strict = new Ajv2020({ strict: true, strictTypes: false })
    addFormats(strict)
    for (const [name, s] of Object.entries(doc.components.schemas as Record<string, Schema>))
      expect(() => strict.compile(s), name).not.toThrow()
  })

  test('its webhooks section describes every event type: the signing headers, the body schema, a valid example', () => {
    const types = [...EVENT_TYPES, 'webhook.test']
    expect(Object.keys(raw.webhooks).sort()).toEqual([...types].sort())
    for (const type of types) {
      const post = doc.webhooks[type].post
      expect(post.summary, type).toBeTruthy()
      expect(post.parameters.map((p: Schema) => `${p.in} ${p.name}`)).toEqual([
        'header webhook-id',
        'header webhook-timestamp',
        'header webhook-signature',
      ])
      const body = post.requestBody.content['application/json']
      expect(body.schema.required).toEqual(['type', 'timestamp', 'data'])
      expect(body.schema.properties.type).toEqual({ const: type })
      expect(body.schema.additionalProperties).toBe(false)
      expect(check(body.schema, body.examples.event.value), type).toBeNull()
      // Another type's body is not this one's.
      expect(check(body.schema, { ...body.examples.event.value, type: 'link.nope' }), type).not.toBeNull()
      expect(Object.keys(post.responses).sort()).toEqual(['2XX', '410', 'default'])
      // The page has the event too, with the same example.
      const start = html.indexOf(`<section class="event" id="event-${type}"`)
      expect(start, type).toBeGreaterThan(-1)
      expect(JSON.parse(block(html.slice(start), 'event-body'))).toEqual(body.examples.event.value)
      expect(html).toContain(`<a href="#event-${type}">`)
    }
    // The link events carry the record links.json lists; mail.received the messages.json entry and its address.
    expect(raw.components.schemas.LinkCreatedEvent.properties.data).toEqual({ $ref: '#/components/schemas/LinkRecord' })
    const mail = doc.webhooks['mail.received'].post.requestBody.content['application/json'].schema.properties.data
    const summary =
      doc.paths['/api/messages.json'].get.responses['200'].content['application/json'].schema.properties.return
        .properties.messages.items
    expect(Object.keys(mail.properties)).toEqual(['address', ...Object.keys(summary.properties)])
  })

  test('its description names every feature', () => {
    const description = String(raw.info.description).toLowerCase()
    for (const feature of [
      'short links',
      'statistics',
      'qr codes',
      'media download',
      'temporary e-mail',
      'webhooks',
      'accounts',
      'api keys',
      'scopes',
      'abuse reports',
      'rate limits',
      'signed link',
    ])
      expect(description, feature).toContain(feature)
  })
})
