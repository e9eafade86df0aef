// The dashboard's Download page (issue 41): paste an address, see what download.json finds (asked of the media
// service directly, with the session's caller), pick a format; the account's recent downloads below. The lookup
// is a GET form (it changes nothing), so reload and back show the same. A format's link goes through
// /dashboard/download/start/<ticket>, which records the download (in the database: SPEC §11) and goes on to its
// signed /dl link; with the script (assets/app-media.js) the page shows the preparation's progress first.
import { Elysia } from 'elysia'
import type { Caller } from '../kernel/caller'
import { AppError } from '../kernel/errors'
import { MAX_URL_LENGTH } from '../links'
import { errorResponse } from '../web/api'
import { queryParams } from '../web/params'
import type { DashboardDeps } from './deps'
import { type Answer, type FormState, formHtml, PROGRESS_HTML, recentHtml, resultHtml } from './media-view'
import type { Session } from './sessions'

/** download.json as the service answers it (media.download), or with playlist=1 (media.playlist). */
type Lookup = (caller: Caller, url: string) => Promise<Answer>

/** The service's message about its parameter, said of the page's field. */
const aboutField = (message: string) => message.replace(/^The parameter "url"/, 'The address')

export function createDownloadSection({ shell, media, config, limiter }: DashboardDeps) {
  const base = config.server.base_url
  const single = media.download as unknown as Lookup
  // The playlist answer is issue 41's playlist slice's (media.playlist); without it, the first entry, as the API does.
  const whole = (media as unknown as { playlist?: Lookup }).playlist

  const noScope = () => new AppError(403, 'missing_scope', 'This page is for accounts with the media scope.')

  /** What the address gives, or why not (the message names the field). */
  async function find(caller: Caller, state: FormState): Promise<Answer | null> {
    const url = state.url.trim()
    if (url.length > MAX_URL_LENGTH) state.error = `The address must be at most ${MAX_URL_LENGTH} characters.`
    else if (!/^https?:\/\//i.test(url)) state.error = 'The address must start with http:// or https://.'
    if (state.error) return null
    // A lookup costs what download.json costs: a call against the account's per-minute allowance.
    const allowance = limiter.hit(`acct:${caller.accountId}`, config.rate.key_per_minute)
    if (!allowance.allowed) {
      state.error = `Too many lookups this minute: try again in ${allowance.reset} s.`
      return null
    }
    try {
      return await (state.playlist && whole ? whole : single)(caller, url)
    } catch (err) {
      if (!(err instanceof AppError) || err.status === 500) throw err
      // Busy, unavailable, upstream failures and timeouts are said beside the field too: they are about it.
      state.error = aboutField(err.message)
      return null
    }
  }

  async function page(request: Request, s: Session): Promise<Response> {
    if (!s.caller.scopes.has('media')) throw noScope()
    const q = new URL(request.url).searchParams
    const state: FormState = {
      url: (q.get('url') ?? '').slice(0, MAX_URL_LENGTH + 1),
      playlist: q.get('playlist') === '1',
    }
    const answer = state.url.trim() ? await find(s.caller, state) : null
    const recent = await media.history.recent(s.caller)
    const content = `<div class="dl-page" id="dl-page">
<h1>Download</h1>
${formHtml(state)}
${answer ? resultHtml(answer, base) : ''}
${PROGRESS_HTML}
<section class="card" aria-labelledby="dl-recent-h" id="dl-recent">
<h2 id="dl-recent-h">Your recent downloads</h2>
${recentHtml(recent)}
</section>
</div>`
    const title = answer ? `${answer.title.slice(0, 80)} · Download` : 'Download'
    return shell.render(request, s, { section: 'download', title, content })
  }

  /**
   * GET /dashboard/download/start/<id>?exp=&sig=: records the download (one of the account's own tickets) and
   * goes on to its /dl link; asked for JSON (the script), answers the link and its progress stream instead.
   */
  async function start(request: Request, s: Session, id: string): Promise<Response> {
    if (!s.caller.scopes.has('media')) throw noScope()
    const query = queryParams(request.url)
    const text = (v: unknown) => (typeof v === 'string' ? v : null)
    const json = (request.headers.get('accept') ?? '').includes('application/json')
    try {
      const links = await media.history.start(s.caller, id, text(query.exp), text(query.sig))
      if (json)
        return Response.json(links, { headers: { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' } })
      return new Response(null, { status: 303, headers: { location: links.file, 'cache-control': 'no-store' } })
    } catch (err) {
      if (!(err instanceof AppError)) throw err
      if (json) return errorResponse(err) // the API's envelope: the script says its message
      if (err.status >= 500) throw err
      return shell.seeOther('/dashboard/download', { kind: 'error', text: `That download: ${err.message}` })
    }
  }

  const signedIn = async (request: Request, then: (s: Session) => Promise<Response>) => {
    const s = await shell.require(request)
    return s instanceof Response ? s : then(s)
  }

  return new Elysia({ name: 'dashboard-download' })
    .get('/dashboard/download', ({ request }) => signedIn(request, (s) => page(request, s)))
    .get('/dashboard/download/start/:id', ({ request, params }) =>
      signedIn(request, (s) => start(request, s, params.id)),
    )
}
