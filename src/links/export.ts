// Links out (SPEC §2a): every link of an account as CSV, streamed a page at a time by id as the client takes
// them (links.json?format=csv and the dashboard's "Export CSV").
import { csvField, csvLine } from './csv'
import type { LinkRecord } from './record'

// title came last (issue 36), then rules, split and has_password (issue 38): readers of the older columns keep
// working. Rules and split are the API's JSON; has_password says yes or no, never more (the hash stays here);
// domain (issue 40) is the link's short domain's host, base_url's for the default one; expired_url after it.
export const EXPORT_COLUMNS = [
  'code',
  'short_url',
  'long_url',
  'mode',
  'created',
  'expires',
  'clicks',
  'tags',
  'max_visits',
  'title',
  'rules',
  'split',
  'has_password',
  'domain',
  'expired_url',
] as const

/** One link as a CSV line. Clicks and max_visits are numbers linkbox writes: never neutralised. */
export function exportLine(r: LinkRecord): string {
  return csvLine([
    csvField(r.hex),
    csvField(r.url),
    csvField(r.long_url),
    csvField(r.mode),
    csvField(r.created),
    csvField(r.expires),
    csvField(r.clicks, true),
    csvField(r.tags.join(',')),
    csvField(r.max_visits, true),
    csvField(r.title),
    csvField(r.rules ? JSON.stringify(r.rules) : ''),
    csvField(r.split ? JSON.stringify(r.split) : ''),
    csvField(r.password ? 'yes' : 'no'),
    csvField(r.domain),
    csvField(r.expired_url),
  ])
}

/**
 * The export as a streamed answer: `nextPage` gives the following page of records each time it is called
 * (empty at the end). The file is named links-YYYY-MM-DD.csv after the day (UTC) of `now`.
 */
export function csvExportResponse(
  nextPage: () => Promise<LinkRecord[]>,
  now: number,
  headers: Record<string, string> = {},
): Response {
  const encoder = new TextEncoder()
  let started = false
  const body = new ReadableStream<Uint8Array>({
    // One page per pull: the stream asks for more only as the client reads.
    async pull(controller) {
      if (!started) {
        started = true
        controller.enqueue(encoder.encode(csvLine([...EXPORT_COLUMNS])))
      }
      const page = await nextPage()
      if (page.length === 0) return controller.close()
      controller.enqueue(encoder.encode(page.map(exportLine).join('')))
    },
  })
  const day = new Date(now).toISOString().slice(0, 10)
  return new Response(body, {
    status: 200,
    headers: {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="links-${day}.csv"`,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      ...headers,
    },
  })
}
