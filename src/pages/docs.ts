// GET /api/docs (a page for people) and /api/docs/openapi.json, both made from the method declarations and their
// schemas, so the page cannot promise other rules than the API checks.
import type { TSchema } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import docsTpl from '../../assets/docs.html' with { type: 'text' }
import { answerCodes, type ApiFile, type ApiMethod } from '../web/api'
import {
  exampleEvent,
  openApiDocument,
  operationId,
  STATUS_TEXT,
  type OpenApiOptions,
  type WebhookEventDoc,
} from '../web/openapi'
import type { ApiParam } from '../web/schema'
import { MAIL_LINK_TTL_MS } from '../mail'
import { escapeHtml, page } from '../web/render'

type Schema = Record<string, any>

/** Escaped, with break opportunities after punctuation and every 12 characters of a long run: patterns and
 *  long values would otherwise widen the page past a phone's screen. */
export function breakable(text: string): string {
  return text
    .split(/(?<=[/,|\])\-:;?])/)
    .flatMap((part) => part.match(/.{1,12}/gsu) ?? [])
    .map(escapeHtml)
    .join('<wbr>')
}
const code = (v: unknown) => `<code>${breakable(typeof v === 'string' ? v : JSON.stringify(v))}</code>`

/**
 * The little Markdown the descriptions use (they are Markdown in the OpenAPI document), as HTML: `code`
 * and **strong**. Escaped first, so nothing in a description can make markup of its own.
 */
export function inlineMarkdown(text: string): string {
  return text
    .split(/(`[^`]+`)/)
    .map((part) =>
      part.length > 2 && part.startsWith('`') && part.endsWith('`')
        ? code(part.slice(1, -1))
        : escapeHtml(part).replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>'),
    )
    .join('')
}

/** "string", "integer", "string or integer", "array of LinkRecord", "LinkRecord or null". */
export function typeText(s: Schema): string {
  if (s.anyOf) return (s.anyOf as Schema[]).map(typeText).join(' or ')
  if (s.type === 'array') return `array of ${s.items ? typeText(s.items) : 'values'}`
  if (s.title) return String(s.title)
  if (s.const !== undefined) return JSON.stringify(s.const)
  return String(s.type ?? 'any')
}

/** The rule of a value, in words, from its schema (HTML: values in <code>). */
export function ruleText(s: Schema): string[] {
  const parts: string[] = []
  if (s.anyOf) for (const b of s.anyOf as Schema[]) parts.push(...ruleText(b).map((r) => `${typeText(b)}: ${r}`))
  if (s.enum) parts.push(`one of ${(s.enum as unknown[]).map(code).join(', ')}`)
  if (s.format === 'date') parts.push('a date, YYYY-MM-DD')
  else if (s.format === 'date-time') parts.push('a time, ISO 8601 UTC')
  else if (s.format === 'uri') parts.push('a URL')
  const { minLength: lo, maxLength: hi } = s
  if (lo !== undefined && hi !== undefined) parts.push(lo === hi ? `${lo} characters` : `${lo} to ${hi} characters`)
  else if (hi !== undefined) parts.push(`at most ${hi} characters`)
  else if (lo !== undefined && lo > 1) parts.push(`at least ${lo} characters`)
  else if (lo === 1) parts.push('not empty')
  if (s.pattern !== undefined) parts.push(`matching ${code(s.pattern)}`)
  if (s.minimum !== undefined && s.maximum !== undefined) parts.push(`from ${s.minimum} to ${s.maximum}`)
  else if (s.minimum !== undefined) parts.push(`at least ${s.minimum}`)
  else if (s.maximum !== undefined) parts.push(`at most ${s.maximum}`)
  return parts
}

const capitalised = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

function paramRow(p: ApiParam): string {
  const s = p.schema as Schema
  const rules = ruleText(s)
  if (p.caseInsensitive) rules.push('any letter case')
  if (s.default !== undefined) rules.push(`default ${code(s.default)}`)
  if (p.absent?.includes('') && !p.required) rules.push('empty = the default')
  const text = [s.description ? inlineMarkdown(String(s.description)) : '', capitalised(rules.join('; '))]
    .filter(Boolean)
    .join('. ')
  // Two columns (the name with its type and whether it is required, then the rule) fit a phone's screen.
  const kind = `${escapeHtml(typeText(s))}${p.required ? ', <strong>required</strong>' : ', optional'}`
  return `<tr><td><code>${escapeHtml(p.name)}</code><br><span class="muted">${kind}</span></td><td>${text}</td></tr>`
}

function fileRow(f: ApiFile): string {
  const rule = `${escapeHtml(f.description)}. ${f.types.map(code).join(' or ')}, at most ${f.maxBytes / 1024} KiB; only in a multipart/form-data body`
  return `<tr><td><code>${escapeHtml(f.name)}</code><br><span class="muted">file, optional</span></td><td>${rule}</td></tr>`
}

/** The fields of an object schema, one per line. */
function fieldsHtml(s: Schema): string {
  const required = new Set<string>(s.required ?? [])
  const items = Object.entries(s.properties as Record<string, Schema>).map(([name, f]) => {
    const rules = f.anyOf ? [] : ruleText(f).filter((r) => !r.startsWith('matching'))
    const description = f.description ?? (f.anyOf as Schema[] | undefined)?.find((b) => b.description)?.description
    const notes = [description ? inlineMarkdown(String(description)) : '', capitalised(rules.join('; '))]
      .filter(Boolean)
      .join('. ')
    return `<li><code>${escapeHtml(name)}</code> <span class="muted">${escapeHtml(typeText(f))}${required.has(name) ? '' : ', optional'}</span>${notes ? `: ${notes}` : ''}</li>`
  })
  return `<ul class="fields">${items.join('')}</ul>`
}

/** The fields of the `return` object. */
function returnHtml(schema: TSchema | undefined): string {
  const s = schema as Schema | undefined
  if (!s?.properties) return ''
  return `<p><code>return</code> is ${s.title ? `a ${escapeHtml(String(s.title))}` : 'an object'}:</p>${fieldsHtml(s)}`
}

/** A block of code or JSON: wrapped rather than scrolled, so that it fits a phone and needs no focus to read. */
const block = (kind: string, text: string, label: string) =>
  `<pre class="example ${kind}" aria-label="${escapeHtml(label)}"><code>${escapeHtml(text)}</code></pre>`

/** A block with a copy button (assets/app.js shows it; without the script the text is selected by hand). */
const copyable = (id: string, kind: string, text: string, label: string) =>
  `<div class="copyable">${block(kind, text, label).replace(' aria-label=', ` id="${escapeHtml(id)}" aria-label=`)}` +
  `<button type="button" class="copy small" data-copy="${escapeHtml(id)}" aria-label="Copy: ${escapeHtml(label)}" hidden>Copy</button></div>`

const json = (value: unknown) => JSON.stringify(value, null, 2)

/** The value an example shows for a parameter: its schema's first example, else its default or first member. */
function exampleValue(s: Schema): unknown {
  const found =
    s.examples?.[0] ??
    s.default ??
    s.enum?.[0] ??
    (s.anyOf as Schema[] | undefined)?.map(exampleValue).find((v) => v !== undefined)
  return found
}

/**
 * The parameters of a method's example request: the required ones, those the method names for its example
 * (update.json's url: an update that changes something), and, for a method where one value of a parameter
 * makes others required (webhooks.json's action=create needs url), that first value and what it needs;
 * each at its schema's example.
 */
export function exampleParams(m: ApiMethod, more?: string[]): [string, string][] {
  const rule = m.requiredWhen?.[0]
  const names = new Set([
    ...m.params.filter((p) => p.required).map((p) => p.name),
    ...(more ?? m.exampleWith ?? []),
    ...(rule ? [rule.param, ...rule.required] : []),
  ])
  return m.params
    .filter((p) => names.has(p.name))
    .map((p) => {
      const value = rule && p.name === rule.param ? rule.value : exampleValue(p.schema as Schema)
      if (value === undefined) throw new Error(`${m.path} ${p.name}: its schema has no example for the documents`)
      return [p.name, String(value)]
    })
}

/** A word for the shell, single-quoted: nothing in it is expanded. */
const shellWord = (s: string) => (/^[A-Za-z0-9_.,:/@%+=-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`)

/**
 * The example request as a curl command. $LINKBOX (the base URL) and $KEY (an API key) are shell variables
 * the reader sets once (the page says how), so each command can be pasted as it is.
 */
export function curlExample(m: ApiMethod, more?: string[]): string {
  const params = exampleParams(m, more)
  const lines = [`curl -s${m.verb === 'GET' && params.length ? ' -G' : ''} "$LINKBOX${m.path}"`]
  if (m.key === 'required') lines.push('-H "X-Api-Key: $KEY"')
  for (const [name, value] of params) lines.push(`--data-urlencode ${shellWord(`${name}=${value}`)}`)
  if (m.verb === 'POST' && params.length === 0) lines.push("-d ''")
  return lines.join(' \\\n  ')
}

/** The example answer: the envelope around the `return` schema's first example. */
export function exampleAnswer(m: ApiMethod): unknown {
  const example = (m.returns as { examples?: unknown[] } | undefined)?.examples?.[0]
  return { status: 'success', return: example ?? {} }
}

function errorsHtml(m: ApiMethod): string {
  const rows = Object.entries(answerCodes(m)).map(
    ([status, codes]) =>
      `<tr><td>${status}</td><td>${codes.map((c) => `<code>${escapeHtml(c)}</code>`).join(', ')}</td><td>${escapeHtml(STATUS_TEXT[Number(status)] ?? 'Error')}</td></tr>`,
  )
  return `<table class="errors"><thead><tr><th scope="col">HTTP</th><th scope="col">code</th><th scope="col">When</th></tr></thead><tbody>${rows.join('')}</tbody></table>`
}

/** The anchor of a method: its path's last part ("getLink.json"), what people search the page for. */
export const methodAnchor = (m: ApiMethod) => m.operationId ?? `${operationId(m)}.json`
export const eventAnchor = (e: WebhookEventDoc) => `event-${e.type}`
const groupAnchor = (tag: string) => `group-${tag}`

const GROUPS: Record<string, string> = {
  links: 'Links and statistics',
  qr: 'QR codes',
  media: 'Media download',
  mail: 'Temporary e-mail',
  webhooks: 'Webhooks',
}
const groupTitle = (tag: string) => GROUPS[tag] ?? capitalised(tag)

function methodHtml(m: ApiMethod): string {
  const id = methodAnchor(m)
  const rows = m.params.map(paramRow).join('') + (m.files ?? []).map(fileRow).join('')
  const table = rows
    ? `<table class="params"><thead><tr><th scope="col">Parameter</th><th scope="col">Rule</th></tr></thead><tbody>${rows}</tbody></table>`
    : '<p class="muted">No parameters.</p>'
  const key = m.key === 'required' ? 'key required' : 'key optional'
  const other = m.otherContent
    ? `<p>${escapeHtml(m.otherContent.description)}: ${m.otherContent.types.map(code).join(' or ')}.</p>`
    : ''
  const limited = answerCodes(m)[503]
    ? '; <code>Retry-After</code> with a 429 or a 503'
    : '; <code>Retry-After</code> with a 429'
  return `<section class="method" id="${escapeHtml(id)}" aria-labelledby="${escapeHtml(id)}-h">
<h3 id="${escapeHtml(id)}-h"><span class="verb">${m.verb}</span> <code>${escapeHtml(m.path)}</code></h3>
<p>${inlineMarkdown(m.summary)} <span class="muted">(${key}${m.scope ? `, scope <code>${m.scope}</code>` : ''}${m.marketplace ? ', marketplace route' : ''})</span></p>
${m.description ? `<p>${inlineMarkdown(m.description)}</p>` : ''}<h4>Parameters</h4>${table}
<h4>Example</h4>${copyable(`${id}-curl`, 'curl', curlExample(m), `Example request of ${m.path}`)}
${(m.moreExamples ?? []).map((x, i) => `<p>${inlineMarkdown(x.title)}:</p>${copyable(`${id}-curl-${i + 2}`, 'curl-more', curlExample(m, x.with), `Example request of ${m.path}: ${x.title.replaceAll('`', '')}`)}`).join('\n')}
<h4>Answer</h4>${block('answer', json(exampleAnswer(m)), `Example answer of ${m.path}`)}${returnHtml(m.returns)}${other}
<h4>Errors</h4>${errorsHtml(m)}
<p class="muted headers">Headers: <code>RateLimit-Limit</code>, <code>RateLimit-Remaining</code>, <code>RateLimit-Reset</code> on every answer while a limit applies${limited} (see <a href="#rate-limits">Rate limits</a>).</p></section>`
}

function eventHtml(e: WebhookEventDoc): string {
  const id = eventAnchor(e)
  const data = e.data as Schema
  return `<section class="event" id="${escapeHtml(id)}" aria-labelledby="${escapeHtml(id)}-h">
<h3 id="${escapeHtml(id)}-h"><code>${escapeHtml(e.type)}</code> <span class="muted">${escapeHtml(e.summary)}</span></h3>
<p>${inlineMarkdown(e.description)}</p>
<p><code>data</code> is ${data.title ? `a ${escapeHtml(String(data.title))}` : 'an object'}:</p>${fieldsHtml(data)}
${block('event-body', json(exampleEvent(e)), `Example body of ${e.type}`)}</section>`
}

/** The table of contents: the overview sections, each group of methods, the webhook events. */
function tocHtml(groups: [string, ApiMethod[]][], events: WebhookEventDoc[]): string {
  const link = (href: string, html: string) => `<a href="#${escapeHtml(href)}">${html}</a>`
  const methods = groups.map(
    ([tag, list]) =>
      `<li>${link(groupAnchor(tag), escapeHtml(groupTitle(tag)))}<ul>${list.map((m) => `<li>${link(methodAnchor(m), `<span class="verb">${m.verb}</span> <code>${escapeHtml(m.path.replace(/^\/api\//, ''))}</code>`)}</li>`).join('')}</ul></li>`,
  )
  const eventItems = events
    .map((e) => `<li>${link(eventAnchor(e), `<code>${escapeHtml(e.type)}</code>`)}</li>`)
    .join('')
  return `<ol class="toc-list">
<li>${link('start', 'Getting started')}</li>
<li>${link('answers', 'Answers and errors')}</li>
<li>${link('rate-limits', 'Rate limits')}</li>
<li>${link('signed-links', 'Signed links')}</li>
${methods.join('\n')}
<li>${link('webhook-events', 'Webhook events')}<ul>${eventItems}<li>${link('verify-signatures', 'Verifying a signature')}</li></ul></li>
</ol>`
}

/** Methods by their tag, in the order the tags first appear. */
function grouped(methods: ApiMethod[]): [string, ApiMethod[]][] {
  const out = new Map<string, ApiMethod[]>()
  for (const m of methods) out.set(m.tag ?? 'other', [...(out.get(m.tag ?? 'other') ?? []), m])
  return [...out]
}

function statusRows(): string {
  return Object.entries(STATUS_TEXT)
    .map(([status, text]) => `<tr><td>${status}</td><td>${escapeHtml(text)}</td></tr>`)
    .join('')
}

/** Verifying a webhook by hand (Node.js, no package); test/e2e/docs-webhooks.test.ts runs this very text. */
export const VERIFY_BY_HAND = `import { createHmac, timingSafeEqual } from 'node:crypto'

// secret: the whsec_… value that create showed once.
// headers: the request's headers (lower-case names); body: the body exactly as received, as text.
function verifyWebhook(secret, headers, body) {
  const id = headers['webhook-id']
  const timestamp = headers['webhook-timestamp']
  if (!id || !timestamp) return false
  // Refuse old and future messages: a replayed request carries an old timestamp.
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 5 * 60) return false
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64')
  const mac = createHmac('sha256', key).update(id + '.' + timestamp + '.' + body).digest('base64')
  const expected = Buffer.from('v1,' + mac)
  return (headers['webhook-signature'] ?? '').split(' ').some((given) => {
    const g = Buffer.from(given)
    return g.length === expected.length && timingSafeEqual(g, expected)
  })
}`

/** The two shell variables every example uses. */
const SETUP = (baseUrl: string) => `LINKBOX=${baseUrl}\nKEY=paste-your-api-key-here`

const VERIFY_WITH_PACKAGE = `import { Webhook } from 'standardwebhooks'

// Throws when the signature does not match or the timestamp is more than 5 minutes off.
const event = new Webhook(secret).verify(body, headers)`

export interface DocsDeps extends OpenApiOptions {
  methods: ApiMethod[]
  /** The configured limits (read on every request: SIGHUP changes them in place). */
  rate: { key_per_minute: number; anon_per_minute: number }
  /** media.link_ttl, in seconds. */
  mediaLinkTtl: number
  /** Who is signed in to the dashboard, for the header (as on the home page). */
  session?: (request: Request) => Promise<{ accountName: string; csrf: string } | null>
}

/** "600 requests a minute per key and 60 a minute per address without a key" (0: no limit). */
function limitsText(rate: DocsDeps['rate']): string {
  const key =
    rate.key_per_minute === 0 ? 'any number of requests per key' : `${rate.key_per_minute} requests a minute per key`
  const anon = rate.anon_per_minute === 0 ? 'any number' : `${rate.anon_per_minute} a minute`
  return `${key} and ${anon} per address without a key`
}

/** "1 hour", "90 minutes", "45 seconds". */
function duration(seconds: number): string {
  if (seconds % 3600 === 0) return seconds === 3600 ? '1 hour' : `${seconds / 3600} hours`
  if (seconds % 60 === 0) return `${seconds / 60} minutes`
  return `${seconds} seconds`
}

export function createDocsRoutes(deps: DocsDeps) {
  // Made with the first request for them, not at start-up (tens of ms before `serve` could answer).
  let openapi: string | undefined
  let body: Record<string, string> | undefined
  const events = deps.webhooks ?? []
  const render = () => {
    const groups = grouped(deps.methods)
    return {
      toc: tocHtml(groups, events),
      statuses: statusRows(),
      media_ttl: duration(deps.mediaLinkTtl),
      mail_ttl: duration(MAIL_LINK_TTL_MS / 1000),
      methods: groups
        .map(
          ([tag, list]) =>
            `<section class="group" id="${groupAnchor(tag)}" aria-labelledby="${groupAnchor(tag)}-h"><h2 id="${groupAnchor(tag)}-h">${escapeHtml(groupTitle(tag))}</h2>\n${list.map(methodHtml).join('\n')}</section>`,
        )
        .join('\n'),
      events: events.map(eventHtml).join('\n'),
      event_types: events.map((e) => code(e.type)).join(', '),
      setup: copyable('setup', 'setup', SETUP(deps.baseUrl), 'Setting the variables the examples use'),
      verify_by_hand: copyable('verify-by-hand', 'verify', VERIFY_BY_HAND, 'Verifying a webhook by hand, in Node.js'),
      verify_with_package: copyable(
        'verify-with-package',
        'verify-package',
        VERIFY_WITH_PACKAGE,
        'Verifying a webhook with the standardwebhooks package',
      ),
    }
  }
  return new Elysia({ name: 'docs' })
    .get('/api/docs', async ({ request }) => {
      const s = (await deps.session?.(request)) ?? null
      const vars = {
        ...(body ??= render()),
        limits: limitsText(deps.rate),
      }
      return page(docsTpl as unknown as string, vars, {
        title: 'API',
        // The script: the theme chosen on the other pages (and its switch), and the copy buttons.
        script: true,
        brand: 'wide',
        nav: [
          ['/api/docs', 'API'],
          ['/dashboard', s ? 'Dashboard' : 'Sign in'],
        ],
        user: s ? { name: s.accountName, csrf: s.csrf } : undefined,
        // The sign-out button posts to this origin: under no-referrer a browser would send "Origin: null".
        ...(s ? { referrer: 'same-origin' as const } : {}),
      })
    })
    .get(
      '/api/docs/openapi.json',
      () =>
        new Response((openapi ??= JSON.stringify(openApiDocument(deps.methods, deps), null, 2)), {
          headers: { 'content-type': 'application/json; charset=utf-8', 'access-control-allow-origin': '*' },
        }),
    )
}
