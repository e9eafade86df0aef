// What a visit can come to (the metrics' label) and what stops a link for its visitors: shared by the visit files.
import type { LinkRow } from './storage/contract'

export type VisitOutcome =
  | 'redirect'
  | 'preview'
  | 'frame'
  | 'password_form'
  | 'password_wrong'
  | 'password_limited'
  | 'password_busy'
  | 'expired'
  | 'not_found'
  | 'stats_page'
  | 'stats_limited'
  | 'unavailable'
  | 'used_up'
  /** A link-preview crawler shown a link's social preview (preview-card.ts). */
  | 'card'

/** What stops a link for its visitors (abuse handling, handed in by app.ts): null, or the 451 page to answer with. */
export interface VisitGate {
  /** Whether the link is stopped for visitors (the hot path's question). */
  stops(row: LinkRow): boolean
  /** Bumped whenever what stops links changes: an answer of stops() holds while this stays (absent: always). */
  generation?(): number
  unavailable(row: LinkRow): Response | null
}
