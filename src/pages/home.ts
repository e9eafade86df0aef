// The home page at /: a form that shortens a link, anonymously or for the signed-in account, answered with a
// redirect to its result shown once (or in JSON for assets/app.js); an anonymous POST costs what an API call does.
import { Elysia } from 'elysia'
import homeTpl from '../../assets/home.html' with { type: 'text' }
import homeClosedTpl from '../../assets/home-closed.html' with { type: 'text' }
import type { Caller } from '../kernel/caller'
import type { Config } from '../kernel/config'
import { cookiesOf, RepeatedForm, type Session, type Shell } from '../dashboard'
import { AppError } from '../kernel/errors'
import { sameSecret } from '../web/api'
import { rateKeyOf } from '../web/client-ip'
import { isCrossSite } from '../web/cross-site'
import { readBodyLimited } from '../web/params'
import type { RateLimiter } from '../web/rate-limit'
import { messagePage } from '../web/error-pages'
import type { AnonymousCreations, LinkRecord, LinkService } from '../links'
import { escapeHtml, isoTimeHtml, page } from '../web/render'

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

/** An error as the form shows it (an AppError, or one carried across a redirect). */
export interface FormError {
  code: string
  message: string
}

/** The form field an error is about (shown next to it), or null for the form as a whole (429, 503…). */
export function fieldOf(err: FormError): HomeField | null {
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
    .map(
      ([value, text]) =>
        `<option value="${escapeHtml(value)}"${value === chosen ? ' selected' : ''}>${escapeHtml(text)}</option>`,
    )
    .join('')

/**
 * The result of a creation: the short link to copy, its QR with downloads, its statistics page. app.js
 * builds the same elements with DOM methods (keep the two in step). Paths are relative: the page is on
 * this origin even when base_url names another address of it.
 */
export function resultHtml(rec: LinkRecord, owned = false): string {
  const code = escapeHtml(rec.hex)
  const facts = [
    `<dt>Goes to</dt><dd>${escapeHtml(rec.long_url)}</dd>`,
    `<dt>Statistics</dt><dd><a href="/${code}+">${escapeHtml(rec.stats)}</a></dd>`,
    rec.expires ? `<dt>Expires</dt><dd>${isoTimeHtml(rec.expires)}</dd>` : '',
    `<dt>QR code</dt><dd class="actions"><a class="button secondary small" href="/qr/${code}.png" download="${code}-qr.png">PNG</a><a class="button secondary small" href="/qr/${code}.svg" download="${code}-qr.svg">SVG</a></dd>`,
  ].join('')
  return (
    `<section class="result" aria-labelledby="result-title"><h2 id="result-title">Your short link is ready</h2>` +
    `<label class="visually-hidden" for="short">Short link</label>` +
    `<div class="inline"><input id="short" type="text" readonly value="${escapeHtml(rec.url)}">` +
    `<button type="button" class="copy" data-copy="short" hidden>Copy</button></div>` +
    `<div class="result-body"><img class="qr" src="/qr/${code}.svg" alt="QR code of ${escapeHtml(rec.url)}" width="144" height="144">` +
    `<dl class="facts">${facts}</dl></div>` +
    (owned
      ? `<p class="owned">It is in <a href="/dashboard?new=${encodeURIComponent(rec.hex)}">your dashboard</a>, where you can <a href="/dashboard/links/${code}">change</a> or delete it.</p>`
      : '') +
    `</section>`
  )
}

export interface HomeState {
  /** The signed-in person, when the browser has a dashboard session. */
  session?: Session | null
  /** The form's one-time token (form-tokens.ts). */
  formField: string
  values?: Partial<Record<HomeField, string>>
  /** A password was typed when the form was refused (it is never kept, nor written back). */
  passwordTyped?: boolean
  error?: FormError
  result?: LinkRecord
  /** The URL named a result that is not here (shown once already, expired, another browser's). */
  resultGone?: boolean
  status?: number
  headers?: Record<string, string>
}

export function homePage(state: HomeState): Response {
  const v = state.values ?? {}
  const s = state.session ?? null
  const field = state.error ? fieldOf(state.error) : null
  const message = state.error ? humanMessage(state.error.message) : ''
  const gone = !state.resultGone
    ? ''
    : s
      ? `<p class="notice callout" role="status">Your new link was shown here once; <a href="/dashboard">your dashboard</a> lists it with your other links.</p>`
      : `<p class="notice callout" role="status">Your short link was shown here once, and is not shown again: a link made without signing in is listed nowhere. It keeps working.</p>`
  const vars: Record<string, string> = {
    url: v.url ?? '',
    alias: v.alias ?? '',
    mode_options: options(MODE_CHOICES, v.mode ?? 'redirect'),
    expire_options: options(EXPIRE_CHOICES, v.expire ?? '0'),
    // A password is never written back into a page; when one was typed and the form comes back, say so.
    password_hint: state.passwordTyped
      ? 'Type the password again: it is not sent back for safety.'
      : 'Visitors must enter it first.',
    form_error: field === null ? message : '',
    result: gone + (state.result ? resultHtml(state.result, !!s) : ''),
    // The options stay open when one of them was set or is in error: nothing typed is out of sight.
    options_open:
      (field !== null && field !== 'url') ||
      v.alias ||
      state.passwordTyped ||
      (v.mode && v.mode !== 'redirect') ||
      (v.expire && v.expire !== '0')
        ? ' open'
        : '',
    hidden: (s ? `<input type="hidden" name="_csrf" value="${escapeHtml(s.csrf)}">` : '') + state.formField,
    account_line: s
      ? `<p class="account-line">Links you shorten here are <strong>${escapeHtml(s.accountName)}</strong>'s: they are listed in the dashboard, where you can change or delete them.</p>`
      : '',
    more: s
      ? '<a href="/api/docs">API documentation</a><a href="/dashboard">Your links in the dashboard</a>'
      : '<a href="/api/docs">API documentation</a><a href="/dashboard">Dashboard (sign in)</a>',
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
    nav: s
      ? [
          ['/api/docs', 'API'],
          ['/dashboard', 'Dashboard'],
        ]
      : [
          ['/api/docs', 'API'],
          ['/dashboard', 'Sign in'],
        ],
    user: s ? { name: s.accountName, csrf: s.csrf } : undefined,
    referrer: 'same-origin',
    // Never kept: the page carries a one-time form token (and may carry a result shown once).
    headers: { 'cache-control': 'no-store', ...state.headers },
  })
}
const tpl = (t: unknown) => t as string

/** A refused form, kept for the page it is sent back to: what was typed but the password, and the error. */
interface Refused {
  values: Partial<Record<HomeField, string>>
  passwordTyped: boolean
  error: FormError
}

/** The cookie that binds a visitor's (not signed in) result and refused form to the browser that sent it. */
const VISITOR_COOKIE = 'lb_home'
const VISITOR_VALUE = /^[A-Za-z0-9_-]{22}$/
/** How long a visitor's binding lives: the flash's own lifetime. */
const VISITOR_MAX_AGE_S = 300

/** A fetch from app.js (it asks for JSON), not a form a browser navigates with. */
const wantsJson = (request: Request) => (request.headers.get('accept') ?? '').includes('application/json')

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      ...headers,
    },
  })
}

export function createHomeRoutes(deps: {
  config: Config
  links: LinkService
  limiter: RateLimiter
  clientIp: (r: Request) => string
  /** The dashboard's shell: its sessions, flash stores and form tokens. */
  shell: Shell
  /** Creations without a key: links.anonymous and rate.anon_per_day, counted with the API's. */
  anonymous?: AnonymousCreations
}) {
  const { config, links, limiter, clientIp, shell } = deps
  const { tokens } = shell
  const secure = config.server.base_url.startsWith('https:')

  /** A visitor's flash owner, from the cookie (null: none). */
  function visitorOf(request: Request): string | null {
    const v = cookiesOf(request).get(VISITOR_COOKIE)
    return v && VISITOR_VALUE.test(v) ? `v${v}` : null
  }

  return new Elysia({ name: 'home' })
    .get('/', async ({ request }) => {
      // A domain's own root_redirect (SPEC §13) goes before anything of the home page.
      const domains = links.domains
      const to = domains.rootRedirect(domains.multi ? domains.ofHost(request.headers.get('host')) : '')
      if (to !== '') return new Response(null, { status: 302, headers: { location: to, 'cache-control': 'no-store' } })
      const s = await shell.session(request)
      // links.anonymous = false: a visitor is asked to sign in instead of being shown a form that cannot work.
      if (!s && !config.links.anonymous)
        return page(
          tpl(homeClosedTpl),
          {},
          {
            title: 'Sign in to shorten a link',
            brand: true,
            nav: [
              ['/api/docs', 'API'],
              ['/dashboard', 'Sign in'],
            ],
          },
        )
      const owner = s ? shell.ownerOf(s) : visitorOf(request)
      const url = new URL(request.url)
      const refused = owner ? await shell.refusedState<Refused>(request, owner) : null
      const madeId = url.searchParams.get('made')
      const result = madeId !== null && owner ? await shell.flash.take<LinkRecord>(owner, 'home result', madeId) : null
      return homePage({
        session: s,
        formField: tokens.field(),
        values: refused?.values,
        passwordTyped: refused?.passwordTyped,
        error: refused?.error,
        result: result ?? undefined,
        resultGone: madeId !== null && !result,
      })
    })
    .post(
      '/',
      async ({ request }) => {
        if (isCrossSite(request, config.server.base_url))
          return messagePage(
            403,
            'Request refused',
            'This form can only be sent from the linkbox home page itself. Open the home page and shorten the link there.',
          )
        // Too large (413) or stalled (408): the app's error handler turns the AppError into a page.
        const form = new URLSearchParams(new TextDecoder().decode(await readBodyLimited(request, FORM_LIMIT)))
        const values: Partial<Record<HomeField, string>> = {}
        for (const name of HOME_FIELDS) {
          const value = form.get(name)
          if (value !== null) values[name] = value
        }
        const inPlace = wantsJson(request)
        const s = await shell.session(request)
        const sent = tokens.of(form)
        // Whose the answer's flash is: the session's, or the visitor's — bound to a cookie whose value is the
        // form's token, so that the same form sent twice (both answers setting it) finds the same result.
        const binding = !s && sent ? sent.token : tokens.issue()
        const owner = s ? shell.ownerOf(s) : `v${binding}`
        const headers: Record<string, string> = s
          ? {}
          : {
              'set-cookie': `${VISITOR_COOKIE}=${binding}; Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}; Max-Age=${VISITOR_MAX_AGE_S}`,
            }

        // Refused: in JSON for app.js; else back to the form with what was typed (never the password).
        const refuse = (err: FormError & { status: number; headers?: Record<string, string> }) => {
          if (inPlace) return json(err.status, { status: 'error', message: err.message, code: err.code }, err.headers)
          const { password, ...kept } = values
          const state: Refused = {
            values: kept,
            passwordTyped: !!password,
            error: { code: err.code, message: err.message },
          }
          return shell.refused(owner, '/', state, { ...headers, ...err.headers })
        }

        // A form shown to a signed-in person carries the session's CSRF token; one shown to a visitor does not.
        let caller: Caller | null = null
        const csrf = form.get('_csrf')
        if (csrf !== null) {
          if (!s)
            return refuse({
              status: 401,
              code: 'signed_out',
              message: `You are signed out, so the link was not made: sign in again to shorten links into your account, or ${inPlace ? 'reload this page' : 'send the form again'} to make it without an account.`,
            })
          if (!sameSecret(csrf, s.csrf)) {
            const refused = shell.csrfRefused()
            if (inPlace) return json(refused.status, { status: 'error', message: refused.message, code: refused.code })
            throw refused
          }
          caller = s.caller
        } else if (s) {
          return refuse({
            status: 409,
            code: 'signed_in',
            message: `You are signed in as ${s.accountName} now: ${inPlace ? 'reload this page and send the form' : 'send the form again'} to make the link in your account.`,
          })
        }

        // Sent before (a double click, back and send again): no second link; the first answer's page.
        const before = await tokens.used(sent, s?.id ?? null)
        if (before !== undefined) {
          if (inPlace)
            return json(409, {
              status: 'error',
              message: 'This form was sent already: the link was made the first time.',
              code: 'form_repeated',
              form_token: tokens.issue(),
            })
          return shell.repeated(before ?? '/')
        }

        if (!caller) {
          // The same bucket as an anonymous /api call from this address: the form is no way around the limit.
          const decision = limiter.hit(`ip:${rateKeyOf(clientIp(request))}`, config.rate.anon_per_minute)
          if (!decision.allowed)
            return refuse({
              status: 429,
              code: 'rate_limited',
              message: `Too many links from your address: wait ${decision.reset} s and try again.`,
              headers: { 'retry-after': String(decision.reset) },
            })
          // Closed to visitors (links.anonymous = false), or the address's links of the day used up.
          try {
            await deps.anonymous?.check(clientIp(request))
          } catch (err) {
            if (!(err instanceof AppError)) throw err
            const message =
              err.status === 401
                ? 'This linkbox makes short links for its accounts only: sign in to shorten a link.'
                : err.message
            return refuse({ status: err.status, code: err.code, message, headers: err.headers })
          }
        }
        const madeId = shell.flash.newId()
        const shown = `/?made=${madeId}`
        let result: LinkRecord
        try {
          result = await links.create({ ...values, url: values.url ?? '' }, caller, {
            within: (tx) => tokens.claim(tx, sent, s?.id ?? null, shown),
          })
        } catch (err) {
          if (err instanceof RepeatedForm) {
            if (inPlace)
              return json(409, {
                status: 'error',
                message: 'This form was sent already: the link was made the first time.',
                code: 'form_repeated',
                form_token: tokens.issue(),
              })
            return shell.repeated(err.result ?? '/')
          }
          if (!(err instanceof AppError)) throw err
          return refuse({ status: err.status, code: err.code, message: err.message, headers: err.headers })
        }
        // In place: the result, and a new token for the next link (this one is used).
        if (inPlace) return json(200, { status: 'success', return: result, form_token: tokens.issue() })
        await shell.flash.put(owner, 'home result', result, madeId)
        return shell.seeOther(shown, undefined, headers)
      },
      { parse: 'none' },
    )
}
