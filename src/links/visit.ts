// Public routes of a short link: /<code> (redirect, preview, frame, password), /<code>+ (statistics page).
// The redirect is the hot path: one indexed lookup, one push into the click buffer, one small response.
import { Elysia } from 'elysia'
import frameTpl from '../../assets/frame.html' with { type: 'text' }
import messageTpl from '../../assets/message.html' with { type: 'text' }
import passwordTpl from '../../assets/password.html' with { type: 'text' }
import previewTpl from '../../assets/preview.html' with { type: 'text' }
import statsTpl from '../../assets/stats.html' with { type: 'text' }
import type { Config } from '../config'
import { AppError } from '../errors'
import { readBodyLimited } from '../http/params'
import { rateKeyOf } from '../http/client-ip'
import { createRateLimiter } from '../http/rate-limit'
import { countTable, dayChart, page } from '../pages/render'
import type { LinkService } from './service'
import type { LinkRow } from './store'
import { MAX_PASSWORD_LENGTH } from './validate'

const tpl = (t: unknown) => t as string
const FORM_LIMIT = 8 * 1024
const PASSWORD_ATTEMPTS_PER_MINUTE = 10

export function messagePage(status: number, heading: string, text: string, headers?: Record<string, string>) {
  return page(tpl(messageTpl), { heading, text }, { status, title: heading, headers })
}
const HEADINGS: Record<number, string> = {
  408: 'Request timed out',
  413: 'Request too large',
  429: 'Too many requests',
  503: 'Busy: try again in a moment',
}
/** A page for an AppError thrown on a public route: its status, message and headers (Retry-After). */
export const errorPage = (err: AppError) =>
  messagePage(err.status, HEADINGS[err.status] ?? 'Request refused', err.message, err.headers)
export const notFoundPage = () =>
  messagePage(404, 'Link not found', 'There is no short link at this address. Check that it was copied in full — codes are case-sensitive.')

export type VisitOutcome =
  | 'redirect' | 'preview' | 'frame' | 'password_form' | 'password_wrong' | 'password_limited'
  | 'expired' | 'not_found' | 'stats_page'

export function createVisitRoutes(deps: {
  config: Config
  links: LinkService
  clientIp: (r: Request) => string
  /** Told of every visit's outcome (for metrics). */
  count?: (outcome: VisitOutcome) => void
}) {
  const { config, links, clientIp } = deps
  const count = deps.count ?? (() => {})
  const base = config.server.base_url
  const redirectStatus = config.links.redirect_status
  const attempts = createRateLimiter()

  function reachDestination(row: LinkRow, request: Request, via: 'get' | 'post', referer: string): Response {
    if (request.method !== 'HEAD') links.recordClick(row, request.headers.get('user-agent') ?? '', referer)
    count(row.mode)
    const short = `${base}/${row.code}`
    if (row.mode === 'preview') {
      const u = new URL(row.long_url)
      return page(
        tpl(previewTpl),
        {
          short_url: short,
          long_url: row.long_url,
          scheme: u.protocol,
          host: u.host,
          rest: u.pathname + u.search + u.hash,
        },
        { title: `Leaving for ${u.host}` },
      )
    }
    if (row.mode === 'frame') {
      return page(
        tpl(frameTpl),
        { short_url: short, long_url: row.long_url },
        { title: short, bodyClass: 'frame', frameSrc: new URL(row.long_url).origin },
      )
    }
    // After a password form, 303 turns the POST into a GET of the destination.
    const status = via === 'post' ? 303 : redirectStatus
    return new Response(null, {
      status,
      headers: { location: row.long_url, 'cache-control': 'private, no-cache' },
    })
  }

  function passwordForm(row: LinkRow, referer: string, error = '', status = 200, headers?: Record<string, string>) {
    count(status === 200 ? 'password_form' : status === 429 ? 'password_limited' : 'password_wrong')
    return page(
      tpl(passwordTpl),
      { short_url: `${base}/${row.code}`, action: `/${row.code}`, ref: referer, error },
      { status, title: 'Password required', headers },
    )
  }

  /** Shared gate for every visit: unknown → 404, expired → 410. */
  function lookup(code: string): LinkRow | Response {
    const row = links.resolve(code)
    if (!row) {
      count('not_found')
      return notFoundPage()
    }
    if (links.isExpired(row)) {
      count('expired')
      return messagePage(410, 'This link has expired', 'The owner of this short link set it to stop working, and that time has passed.')
    }
    return row
  }

  async function checkPassword(row: LinkRow, given: string, request: Request, referer: string): Promise<Response> {
    const bucket = `${rateKeyOf(clientIp(request))}|${row.code}`
    const d = attempts.hit(bucket, PASSWORD_ATTEMPTS_PER_MINUTE)
    if (!d.allowed)
      return passwordForm(row, referer, `Too many attempts: wait ${d.reset} s and try again.`, 429, { 'retry-after': String(d.reset) })
    if (given.length > 0 && [...given].length <= MAX_PASSWORD_LENGTH && (await Bun.password.verify(given, row.password_hash!)))
      return reachDestination(row, request, request.method === 'POST' ? 'post' : 'get', referer)
    return passwordForm(row, referer, 'That password is not right.', 401)
  }

  function statsPage(code: string): Response {
    const row = links.resolve(code)
    if (!row) return notFoundPage()
    count('stats_page')
    const s = links.stats({ code }, null)
    return page(
      tpl(statsTpl),
      {
        short_url: s.url,
        long_url: s.long_url ?? '(hidden: the link is password-protected)',
        clicks: s.clicks,
        bots: s.bots,
        created: s.created!.slice(0, 10),
        from: s.from,
        to: s.to,
        days: dayChart(s.days),
        sources: countTable(s.sources, 'Source'),
        devices: countTable(s.devices, 'Device'),
        browsers: countTable(s.browsers, 'Browser'),
        os: countTable(s.os, 'System'),
      },
      { title: `Statistics of ${s.url}` },
    )
  }

  return new Elysia({ name: 'visit' })
    // Not async: the common case answers synchronously, without a promise per redirect.
    .get('/:code', ({ params, request }) => {
      const code = params.code
      if (code.endsWith('+')) return statsPage(code.slice(0, -1))
      const found = lookup(code)
      if (found instanceof Response) return found
      const referer = request.headers.get('referer') ?? ''
      if (found.password_hash) {
        const header = request.headers.get('x-link-password')
        if (header !== null) return checkPassword(found, header, request, referer)
        return passwordForm(found, referer)
      }
      return reachDestination(found, request, 'get', referer)
    }, { parse: 'none' })
    .post('/:code', async ({ params, request }) => {
      const found = lookup(params.code)
      if (found instanceof Response) return found
      // Too large (413) or stalled (408): the app's error handler turns the AppError into a page.
      const form = new URLSearchParams(new TextDecoder().decode(await readBodyLimited(request, FORM_LIMIT)))
      const referer = form.get('ref') ?? ''
      if (!found.password_hash) return reachDestination(found, request, 'post', referer)
      const given = request.headers.get('x-link-password') ?? form.get('password') ?? ''
      return checkPassword(found, given, request, referer)
    }, { parse: 'none' })
}
