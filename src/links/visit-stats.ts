// The public statistics page of a link (/<code>+) and its CSV downloads (/<code>+.csv), limited per client.
import { rateKeyOf } from '../web/client-ip'
import { createRateLimiter } from '../web/rate-limit'
import { page } from '../web/render'
import { messagePage, notFoundPage } from '../web/error-pages'
import type { LinkService } from './service'
import { csvTableOf, dayOf, statsBody, statsCsv, statsFor, windowOf } from './stats-view'
import type { VisitGate, VisitOutcome } from './visit-types'
import { reportPath } from './visit-pages'

const STATS_PAGES_PER_MINUTE = 60

export function createStatsPage(deps: {
  links: LinkService
  clientIp: (r: Request) => string
  count: (outcome: VisitOutcome) => void
  clock: () => number
  gate?: VisitGate
}) {
  const { links, clientIp, count, clock } = deps
  const statsViews = createRateLimiter()

  /** The statistics page (/<code>+), or with `csv` its downloads (/<code>+.csv?table=…): the same answer, as public. */
  async function statsPage(code: string, request: Request, csv = false): Promise<Response> {
    const d = statsViews.hit(rateKeyOf(clientIp(request)), STATS_PAGES_PER_MINUTE)
    if (!d.allowed) {
      count('stats_limited')
      return messagePage(
        429,
        'Too many requests',
        `Too many statistics pages from your address: wait ${d.reset} s and try again.`,
        {
          'retry-after': String(d.reset),
        },
      )
    }
    const domain = links.domains.multi ? links.domains.ofHost(request.headers.get('host')) : ''
    const row = await links.resolve(code, domain)
    if (!row) return notFoundPage()
    count('stats_page')
    // No flush for a page view: the page may be a second behind, and a view never costs a write.
    // No caller either: a password-protected link's destination stays hidden, in the page and the CSV.
    const window = windowOf(request.url)
    const now = clock()
    const { s, error } = await statsFor(
      (from, to) => links.stats({ code, domain, from, to }, null, { flush: false }),
      window,
      now,
    )
    if (csv) {
      if (error) return messagePage(400, 'Request refused', error.message)
      return statsCsv(s, csvTableOf(request.url))
    }
    const path = `/${encodeURIComponent(s.hex)}+`
    const body = statsBody(s, {
      path,
      csvPath: `${path}.csv`,
      window,
      error,
      today: dayOf(now),
      stopped: deps.gate?.stops(row),
    })
    return page(
      '<main class="wide stats">{{{body}}}<p class="report-link"><a href="{{report}}">Report this link</a></p></main>',
      { body, report: reportPath(s.hex) },
      // The script: the theme switch, and the theme this browser chose.
      { title: `Statistics of ${s.url}`, brand: 'wide', status: error ? 400 : 200, script: true },
    )
  }

  return statsPage
}
