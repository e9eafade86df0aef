// Public routes of a short link: /<code> (redirect, preview, frame, password), /<code>+ (statistics page); the
// redirect is the hot path, answered by `hot` before any router (web/pipeline.ts).
import { Elysia } from 'elysia'
import { isbot } from 'isbot'
import continueTpl from '../../assets/continue.html' with { type: 'text' }
import previewTpl from '../../assets/preview.html' with { type: 'text' }
import type { Config } from '../kernel/config'
import { AppError } from '../kernel/errors'
import { readBodyLimited } from '../web/params'
import { rateKeyOf } from '../web/client-ip'
import { pathOf } from '../web/path'
import { createRateLimiter } from '../web/rate-limit'
import { page } from '../web/render'
import { messagePage, notFoundPage } from '../web/error-pages'
import { afterExpiry } from './after-expiry'
import { createFrameCheck, type FrameCheck } from './frame-check'
import { NOT_PLAIN } from './hot-cache'
import { hasPreview } from './preview'
import { cardPage, previewImageRoutes, wantsCard } from './preview-card'
import { createPasswordGate, type Verifier, wrongPasswordLocation, wrongPasswordShown } from './password-gate'
import type { LinkService } from './service'
import type { LinkRow } from './storage/contract'
import { isReserved, MAX_PASSWORD_LENGTH } from './validate'
import { createVisitPages, reportPath } from './visit-pages'
import { codeOf, decodePasswordHeader, isBrowserNavigation } from './visit-request'
import { createStatsPage } from './visit-stats'
import type { VisitGate, VisitOutcome } from './visit-types'

export type { VisitGate, VisitOutcome }

const tpl = (t: unknown) => t as string
const FORM_LIMIT = 8 * 1024
const PASSWORD_ATTEMPTS_PER_MINUTE = 10
/** Per client across all links: guessing on many links at once is still guessing. */
const PASSWORD_ATTEMPTS_PER_CLIENT_PER_MINUTE = 30
const WRONG_PASSWORD = 'That password is not right.'
// The period links of the statistics page, and ?days= (tests import them from here as before).
export { rangeOf, STATS_RANGES } from './stats-view'
export { decodePasswordHeader } from './visit-request'

export function createVisitRoutes(deps: {
  config: Config
  links: LinkService
  clientIp: (r: Request) => string
  /** Told of every visit's outcome (for metrics). */
  count?: (outcome: VisitOutcome) => void
  /** Checks a password against its hash (tests wrap it to watch the bound on concurrent checks). */
  verifyPassword?: Verifier
  /** Asks a frame destination whether it may be framed (default: through the SSRF guard). */
  frameCheck?: FrameCheck
  /** The app's clock: the statistics page's window ends today (tests move time). */
  clock?: () => number
  /** Disabled, banned and listed links answer 451 (absent: none is). */
  gate?: VisitGate
}) {
  const { config, links, clientIp } = deps
  const clock = deps.clock ?? Date.now
  const count = deps.count ?? (() => {})
  const domains = links.domains
  // With one domain the host is never read (SPEC §13): every code is the default domain's.
  const multi = domains.multi
  const hostDomain = (request: Request) => (multi ? domains.ofHost(request.headers.get('host')) : '')
  const redirectStatus = config.links.redirect_status
  const attempts = createRateLimiter()
  const attemptsAcross = createRateLimiter()
  const gate = createPasswordGate({ verify: deps.verifyPassword })
  const frameCheck =
    deps.frameCheck ??
    createFrameCheck({ baseUrl: config.server.base_url, guard: { allowPrivate: config.media.allow_private_networks } })
  const { framePage, usedUpPage, passwordForm } = createVisitPages({ baseOf: domains.baseOf, count, frameCheck })
  const statsPage = createStatsPage({ links, clientIp, count, clock, gate: deps.gate })

  // The headers of a redirect but its Location and X-Request-Id, in the order they are sent.
  const CACHE_CONTROL = 'private, no-cache'

  /**
   * The hot path: GET or HEAD of /<code> for a plain redirect, and a code no link has; anything else is left
   * to `routes` (undefined). A code not in the link cache is read first (on PostgreSQL: a promise).
   */
  function hot(request: Request, id: string, path?: string): Response | Promise<Response | undefined> | undefined {
    const method = request.method
    if (method !== 'GET' && method !== 'HEAD') return undefined
    const code = codeOf(path ?? pathOf(request.url))
    if (code === null) return undefined
    // A link's code is never a reserved name (validate.ts, and random codes skip them), so a row found here
    // is what the router would find too; /healthz or /login (null, no read) go on to the router.
    // The compact cache's answer (hot-cache.ts): a plain link's row, to be read at once; NOT_PLAIN (a page, a
    // password, a limit, stopped by the gate) is the router's, which reads the whole row.
    const domain = multi ? domains.ofHost(request.headers.get('host')) : ''
    const row = links.hotLink(code, domain)
    if (row instanceof Promise)
      return row.then((read) =>
        read === null ? missing(code, id, domain) : read === NOT_PLAIN ? undefined : redirect(request, id, read),
      )
    if (row === null) return missing(code, id, domain)
    if (row === NOT_PLAIN) return undefined
    return redirect(request, id, row)
  }

  /** The 404 of a code no link has (or its domain's not_found_redirect); a reserved name (/healthz) is the router's. */
  function missing(code: string, id: string, domain: string): Response | undefined {
    if (isReserved(code)) return undefined
    const answer = unknownCode(domain)
    answer.headers.set('x-request-id', id)
    return answer
  }

  /** A code no link has on this domain: the domain's not_found_redirect when it has one, else the 404 page. */
  function unknownCode(domain: string): Response {
    count('not_found')
    const to = domains.notFoundRedirect(domain)
    if (to === '') return notFoundPage()
    return new Response(null, { status: 302, headers: { location: to, 'cache-control': CACHE_CONTROL } })
  }

  /**
   * The plain redirect of a link; undefined for any other (the router's visit answers it). The gate (disabled,
   * banned, listed: 451) was asked when the cache kept the code, again whenever its verdicts change.
   */
  function redirect(request: Request, id: string, row: LinkRow): Response | undefined {
    // A limited link takes a visit in the database: the router's path does that (reachDestination).
    if (row.mode !== 'redirect' || row.password_hash || row.max_visits !== null || links.isExpired(row))
      return undefined
    // A link with a social preview: its crawlers get the card, on the router's path (a plain link's view has none,
    // so the user agent is read only for previewed links).
    if (hasPreview(row) && wantsCard(row, request.headers.get('user-agent') ?? '')) return undefined
    const method = request.method
    let location = row.long_url
    if (row.rules !== null || row.split !== null) {
      const ua = request.headers.get('user-agent') ?? ''
      const address = clientIp(request)
      location = links.destination(row, { ua, address, acceptLanguage: request.headers.get('accept-language') ?? '' })
      if (method !== 'HEAD') links.recordClick(row, ua, request.headers.get('referer') ?? '', address, location)
    } else if (method !== 'HEAD')
      links.recordClick(
        row,
        request.headers.get('user-agent') ?? '',
        request.headers.get('referer') ?? '',
        clientIp(request),
      )
    count('redirect')
    return new Response(null, {
      status: redirectStatus,
      headers: { location, 'cache-control': CACHE_CONTROL, 'x-request-id': id },
    })
  }

  /** A limited link with no visit left: its expiry destination (after a password form, as arrive goes on), or the 410 page. */
  function usedUp(row: LinkRow, request: Request, via: 'get' | 'post'): Response {
    const after = afterExpiry(row, via === 'post' ? 303 : redirectStatus)
    if (!after) return usedUpPage(row)
    count('used_up')
    if (via === 'post' && isBrowserNavigation(request) && !request.headers.has('x-link-password'))
      return continuePage(row, row.expired_url!)
    return after
  }

  function reachDestination(
    row: LinkRow,
    request: Request,
    via: 'get' | 'post',
    referer: string,
  ): Response | Promise<Response> {
    const ua = request.headers.get('user-agent') ?? ''
    const address = clientIp(request)
    // A limited link: a person's visit takes one in the database, or finds none left. HEAD and bots take
    // none (SPEC §2a: previews never use a visit up); they only look whether any is left. Any other link
    // goes on at once, without waiting for anything.
    if (row.max_visits !== null) {
      const looking = request.method === 'HEAD' || isbot(ua)
      const allowed = looking ? links.visitsLeft(row).then((left) => left > 0) : links.takeVisit(row)
      return allowed.then((ok) => (ok ? arrive(row, request, via, referer, ua, address) : usedUp(row, request, via)))
    }
    return arrive(row, request, via, referer, ua, address)
  }

  /** The visit answered: the destination chosen, the click recorded, the page or redirect of the link's mode. */
  function arrive(
    row: LinkRow,
    request: Request,
    via: 'get' | 'post',
    referer: string,
    ua: string,
    address: string,
  ): Response | Promise<Response> {
    const routed = row.rules !== null || row.split !== null
    const destination = routed
      ? links.destination(row, { ua, address, acceptLanguage: request.headers.get('accept-language') ?? '' })
      : row.long_url
    if (request.method !== 'HEAD') links.recordClick(row, ua, referer, address, routed ? destination : '')
    count(row.mode)
    const short = `${domains.baseOf(row.domain)}/${row.code}`
    if (row.mode === 'preview') {
      const u = new URL(destination)
      return page(
        tpl(previewTpl),
        {
          short_url: short,
          long_url: destination,
          scheme: u.protocol,
          host: u.host,
          rest: u.pathname + u.search + u.hash,
          report: reportPath(row.code),
        },
        { title: `Leaving for ${u.host}`, brand: true },
      )
    }
    if (row.mode === 'frame') return framePage(destination, short)
    // A browser that POSTed the password form may not follow a redirect to another site: the page's
    // CSP (form-action 'self') also governs where a form's answer redirects. A small page sends it on
    // instead (a meta refresh, no script, so the CSP stays as it is), with a visible link as well.
    if (via === 'post' && isBrowserNavigation(request) && !request.headers.has('x-link-password')) {
      const host = new URL(destination).host
      return page(
        tpl(continueTpl),
        { short_url: short, long_url: destination, host },
        { title: `Continue to ${host}`, refreshTo: destination, brand: true },
      )
    }
    // Scripts: after a password form, 303 turns the POST into a GET of the destination.
    const status = via === 'post' ? 303 : redirectStatus
    return new Response(null, {
      status,
      headers: { location: destination, 'cache-control': CACHE_CONTROL },
    })
  }

  /** arrive's page after a browser's password form, for the expiry destination (see arrive). */
  function continuePage(row: LinkRow, destination: string): Response {
    const host = new URL(destination).host
    return page(
      tpl(continueTpl),
      { short_url: `${domains.baseOf(row.domain)}/${row.code}`, long_url: destination, host },
      { title: `Continue to ${host}`, refreshTo: destination, brand: true },
    )
  }

  /** Shared gate for every visit: unknown → 404, expired → 410. A promise of it when the link is not in the cache. */
  function lookup(code: string, request: Request): LinkRow | Response | Promise<LinkRow | Response> {
    const domain = hostDomain(request)
    const row = links.resolve(code, domain)
    if (row instanceof Promise) return row.then((r) => gateOf(r, domain))
    return gateOf(row, domain)
  }

  function gateOf(row: LinkRow | null, domain: string): LinkRow | Response {
    if (!row) return unknownCode(domain)
    if (links.isExpired(row)) {
      count('expired')
      // With an expiry destination (SPEC §2a), people go there, unless the gate stops the link (451).
      const after = afterExpiry(row, redirectStatus)
      if (after) return deps.gate?.unavailable(row) ?? after
      return messagePage(
        410,
        'This link has expired',
        'The owner of this short link set it to stop working, and that time has passed.',
      )
    }
    const stopped = deps.gate?.unavailable(row)
    if (stopped) {
      count('unavailable')
      return stopped
    }
    return row
  }

  async function checkPassword(row: LinkRow, given: string, request: Request, referer: string): Promise<Response> {
    const client = rateKeyOf(clientIp(request))
    const one = attempts.hit(`${client}|${row.code}`, PASSWORD_ATTEMPTS_PER_MINUTE)
    const all = attemptsAcross.hit(client, PASSWORD_ATTEMPTS_PER_CLIENT_PER_MINUTE)
    const blocked = !one.allowed ? one : !all.allowed ? all : null
    if (blocked)
      return passwordForm(row, referer, `Too many attempts: wait ${blocked.reset} s and try again.`, 429, {
        'retry-after': String(blocked.reset),
      })
    let right = false
    if (given.length > 0 && [...given].length <= MAX_PASSWORD_LENGTH) {
      try {
        right = await gate.verify(given, row.password_hash!)
      } catch (err) {
        if (err instanceof AppError && err.status === 503)
          return passwordForm(row, referer, err.message, 503, err.headers)
        throw err
      }
    }
    if (right) return reachDestination(row, request, request.method === 'POST' ? 'post' : 'get', referer)
    // A browser's form post: 303 to a GET that says so (no resubmission on Back); scripts get their 401.
    if (request.method === 'POST' && !request.headers.has('x-link-password') && isBrowserNavigation(request)) {
      count('password_wrong')
      return new Response(null, {
        status: 303,
        headers: { location: wrongPasswordLocation(row.code, referer), 'cache-control': 'no-store' },
      })
    }
    return passwordForm(row, referer, WRONG_PASSWORD, 401)
  }

  function checkHeaderPassword(row: LinkRow, header: string, request: Request, referer: string) {
    const given = decodePasswordHeader(header)
    if (given === null)
      return messagePage(
        400,
        'Request refused',
        'The X-Link-Password header is not valid: percent-encode the UTF-8 bytes of the password, and send a literal % as %25.',
      )
    return checkPassword(row, given, request, referer)
  }

  /** GET /<code> once the link is looked up: its password form, or on to its destination. */
  function visit(found: LinkRow | Response, request: Request): Response | Promise<Response> {
    if (found instanceof Response) return found
    const referer = request.headers.get('referer') ?? ''
    // A link-preview crawler gets the social preview's card (no password link has one): recorded as today,
    // a bot's visit, never a click; a limited link's visits are not taken.
    const ua = request.headers.get('user-agent') ?? ''
    if (wantsCard(found, ua)) {
      if (request.method !== 'HEAD') links.recordClick(found, ua, referer, clientIp(request))
      count('card')
      return cardPage(found, domains.baseOf(found.domain))
    }
    if (found.password_hash) {
      const header = request.headers.get('x-link-password')
      if (header !== null) return checkHeaderPassword(found, header, request, referer)
      const shown = wrongPasswordShown(request.url, referer)
      return passwordForm(found, shown.ref, shown.wrong ? WRONG_PASSWORD : '')
    }
    return reachDestination(found, request, 'get', referer)
  }

  const routes = new Elysia({ name: 'visit' })
    .use(
      previewImageRoutes({
        resolve: (code, request) => links.resolve(code, hostDomain(request)),
        image: links.previewImage,
        stopped: (row) => deps.gate?.stops(row) ?? false,
      }),
    )
    // Not async: the common case answers synchronously, without a promise per redirect.
    .get(
      '/:code',
      ({ params, request }) => {
        const code = params.code
        // A path that is not valid percent-encoding (/%ff) reaches here with no code at all.
        if (typeof code !== 'string') return notFoundPage()
        if (code.endsWith('+')) return statsPage(code.slice(0, -1), request)
        if (code.endsWith('+.csv')) return statsPage(code.slice(0, -5), request, true)
        const found = lookup(code, request)
        if (found instanceof Promise) return found.then((f) => visit(f, request))
        return visit(found, request)
      },
      { parse: 'none' },
    )
    .post(
      '/:code',
      async ({ params, request }) => {
        if (typeof params.code !== 'string') return notFoundPage() // /%ff, as above
        const found = await lookup(params.code, request)
        if (found instanceof Response) return found
        // Too large (413) or stalled (408): the app's error handler turns the AppError into a page.
        const form = new URLSearchParams(new TextDecoder().decode(await readBodyLimited(request, FORM_LIMIT)))
        const referer = form.get('ref') ?? ''
        if (!found.password_hash) return reachDestination(found, request, 'post', referer)
        const header = request.headers.get('x-link-password')
        if (header !== null) return checkHeaderPassword(found, header, request, referer)
        return checkPassword(found, form.get('password') ?? '', request, referer)
      },
      { parse: 'none' },
    )
  return { routes, hot }
}
