// The home page at /: what the box does, and a form that shortens a link anonymously. It works without
// JavaScript (the form POSTs here and the answer is this page with the result or the errors); with
// assets/app.js the same form goes to /api/getLink.json and the result is drawn in place with the same markup.
// The POST costs what an anonymous API call costs: the same per-address bucket, the same 8 KiB body bound.
import { Elysia } from 'elysia'
import homeTpl from '../../assets/home.html' with { type: 'text' }
import type { Config } from '../config'
import { AppError } from '../errors'
import { rateKeyOf } from '../http/client-ip'
import { isCrossSite } from '../http/cross-site'
import { readBodyLimited } from '../http/params'
import type { RateLimiter } from '../http/rate-limit'
import { messagePage } from '../links/visit'
import type { LinkRecord, LinkService } from '../links/service'
import { escapeHtml, page } from './render'

const FORM_LIMIT = 8 * 1024
export const HOME_FIELDS = ['url', 'alias', 'mode', 'expire', 'password'] as const
export type HomeField = (typeof HOME_FIELDS)[number]

export const MODE_CHOICES: [string, string][] = [
  ['redirect', 'Redirect at once'],
  ['preview', 'Show a preview first'],
  ['frame', 'Show inside a frame'],
]
export const EXPIRE_CHOICES: [string, string][] = [
  ['0', 'Never'],
  ['3600', 'In 1 hour'],
  ['86400', 'In 1 day'],
  ['604800', 'In 1 week'],
  ['2592000', 'In 30 days'],
]
const LABELS: Record<HomeField, string> = {
  url: 'The URL',
  alias: 'The alias',
  mode: 'The mode',
  expire: 'The expiry',
  password: 'The password',
}

/** The form field an error is about (shown next to it), or null for the form as a whole (429, 503…). */
export function fieldOf(err: AppError): HomeField | null {
  if (err.code === 'invalid_url') return 'url'
  if (err.code === 'invalid_alias' || err.code === 'alias_taken' || err.code === 'alias_reserved') return 'alias'
  if (err.code === 'invalid_mode') return 'mode'
  if (err.code === 'invalid_expire') return 'expire'
  const named = /^The parameter "(\w+)"/.exec(err.message)?.[1]
  return (HOME_FIELDS as readonly string[]).includes(named ?? '') ? (named as HomeField) : null
}

/** The API's message in words for people: "The parameter "url" must…" → "The URL must…". */
export function humanMessage(message: string): string {
  return message.replace(/^The parameter "(\w+)"/, (whole, name: string) => LABELS[name as HomeField] ?? whole)
}

const options = (choices: [string, string][], chosen: string) =>
  choices
    .map(([value, text]) => `<option value="${escapeHtml(value)}"${value === chosen ? ' selected' : ''}>${escapeHtml(text)}</option>`)
    .join('')

/**
 * The result of a creation: the short link to copy, its QR with downloads, its statistics page. app.js
 * builds the same elements with DOM methods (keep the two in step). Paths are relative: the page is on
 * this origin even when base_url names another address of it.
 */
export function resultHtml(rec: LinkRecord): string {
  const code = escapeHtml(rec.hex)
  const facts = [
    `<dt>Goes to</dt><dd>${escapeHtml(rec.long_url)}</dd>`,
    `<dt>Statistics</dt><dd><a href="/${code}+">${escapeHtml(rec.stats)}</a></dd>`,
    rec.expires ? `<dt>Expires</dt><dd>${escapeHtml(rec.expires.slice(0, 16).replace('T', ' '))} UTC</dd>` : '',
    `<dt>QR code</dt><dd class="actions"><a class="button secondary small" href="/qr/${code}.png" download="${code}-qr.png">PNG</a><a class="button secondary small" href="/qr/${code}.svg" download="${code}-qr.svg">SVG</a></dd>`,
  ].join('')
  return (
    `<section class="result" aria-labelledby="result-title"><h2 id="result-title">Your short link is ready</h2>` +
    `<label class="visually-hidden" for="short">Short link</label>` +
    `<div class="inline"><input id="short" type="text" readonly value="${escapeHtml(rec.url)}">` +
    `<button type="button" class="copy" data-copy="short" hidden>Copy</button></div>` +
    `<div class="result-body"><img class="qr" src="/qr/${code}.svg" alt="QR code of ${escapeHtml(rec.url)}" width="144" height="144">` +
    `<dl class="facts">${facts}</dl></div></section>`
  )
}

export interface HomeState {
  values?: Partial<Record<HomeField, string>>
  error?: AppError
  result?: LinkRecord
  status?: number
  headers?: Record<string, string>
}

export function homePage(state: HomeState = {}): Response {
  const v = state.values ?? {}
  const field = state.error ? fieldOf(state.error) : null
  const message = state.error ? humanMessage(state.error.message) : ''
  const vars: Record<string, string> = {
    url: v.url ?? '',
    alias: v.alias ?? '',
    mode_options: options(MODE_CHOICES, v.mode ?? 'redirect'),
    expire_options: options(EXPIRE_CHOICES, v.expire ?? '0'),
    // A password is never written back into a page; when one was typed and the form comes back, say so.
    password_hint: v.password ? 'Type the password again: it is not sent back for safety.' : 'Visitors must enter it first.',
    form_error: field === null ? message : '',
    result: state.result ? resultHtml(state.result) : '',
    // The options stay open when one of them was set or is in error: nothing typed is out of sight.
    options_open: (field !== null && field !== 'url') || v.alias || v.password || (v.mode && v.mode !== 'redirect') || (v.expire && v.expire !== '0') ? ' open' : '',
  }
  for (const name of HOME_FIELDS) {
    vars[`${name}_error`] = field === name ? message : ''
    vars[`${name}_invalid`] = field === name ? ' aria-invalid="true"' : ''
  }
  return page(tpl(homeTpl), vars, {
    status: state.status ?? 200,
    title: 'Short links, QR codes, temporary mail',
    script: true,
    brand: true,
    nav: [
      ['/api/docs', 'API'],
      ['/dashboard', 'Sign in'],
    ],
    referrer: 'same-origin',
    headers: state.headers,
  })
}
const tpl = (t: unknown) => t as string

export function createHomeRoutes(deps: {
  config: Config
  links: LinkService
  limiter: RateLimiter
  clientIp: (r: Request) => string
}) {
  const { config, links, limiter, clientIp } = deps
  return new Elysia({ name: 'home' })
    .get('/', () => homePage())
    .post('/', async ({ request }) => {
      if (isCrossSite(request, config.server.base_url))
        return messagePage(403, 'Request refused', 'This form can only be sent from the linkbox home page itself. Open the home page and shorten the link there.')
      // Too large (413) or stalled (408): the app's error handler turns the AppError into a page.
      const form = new URLSearchParams(new TextDecoder().decode(await readBodyLimited(request, FORM_LIMIT)))
      const values: Partial<Record<HomeField, string>> = {}
      for (const name of HOME_FIELDS) {
        const value = form.get(name)
        if (value !== null) values[name] = value
      }
      // The same bucket as an anonymous /api call from this address: the form is no way around the limit.
      const decision = limiter.hit(`ip:${rateKeyOf(clientIp(request))}`, config.rate.anon_per_minute)
      if (!decision.allowed) {
        const err = new AppError(429, 'rate_limited', `Too many links from your address: wait ${decision.reset} s and try again.`)
        return homePage({ values, error: err, status: 429, headers: { 'retry-after': String(decision.reset) } })
      }
      try {
        const result = await links.create({ ...values, url: values.url ?? '' }, null)
        return homePage({ result })
      } catch (err) {
        if (!(err instanceof AppError)) throw err
        return homePage({ values, error: err, status: err.status, headers: err.headers })
      }
    }, { parse: 'none' })
}
