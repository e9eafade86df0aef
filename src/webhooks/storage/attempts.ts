// A delivery's newest attempt (webhook_attempts, migration 24) between rows and the contract, the same on both engines.
import type { AttemptDetail, DeliveryDetail, DeliveryLogRow } from './contract'

/** A delivery with its event and its newest attempt, as both engines read it (columns a_*: the attempt's). */
export type AttemptRow = DeliveryLogRow & {
  payload: string
  created: number
  attempt: number | null
  url: string | null
  a_at: number | null
  a_ms: number | null
  a_error: string | null
  request_headers: string | null
  response_status: number | null
  response_headers: string | null
  response_body: string | null
  response_truncated: number | null
}

const pairs = (json: string | null): [string, string][] => (json ? (JSON.parse(json) as [string, string][]) : [])

/** The detail page's delivery from its row (both engines: numbers already numbers). */
export function detailOf(r: AttemptRow): DeliveryDetail {
  const { payload, created, attempt, a_at, a_ms, a_error, request_headers, response_status } = r
  const { event_id, webhook_id, type, state, attempts, last_status, last_error, last_ms, last_at, next_at } = r
  return {
    ...{ event_id, webhook_id, type, state, attempts, last_status, last_error, last_ms, last_at, next_at },
    payload,
    created,
    last_attempt:
      attempt === null
        ? null
        : {
            attempt,
            url: r.url ?? '',
            at: a_at!,
            ms: a_ms!,
            error: a_error,
            request_headers: pairs(request_headers),
            response_status,
            response_headers: pairs(r.response_headers),
            response_body: r.response_body ?? '',
            response_truncated: r.response_truncated === 1,
          },
  }
}

/** An attempt's detail as statement parameters (both engines). */
export const detailParams = (a: { id: number; at: number; ms: number; error: string | null }, d: AttemptDetail) => ({
  id: a.id,
  attempt: d.attempt,
  url: d.url,
  at: a.at,
  ms: a.ms,
  request: JSON.stringify(d.request_headers),
  status: d.response_status,
  headers: JSON.stringify(d.response_headers),
  body: d.response_body,
  truncated: d.response_truncated ? 1 : 0,
  error: a.error,
})
