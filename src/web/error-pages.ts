// The service's own error pages (404, 429, 503, …): the pipeline's faults and every feature's public routes
// answer with these, in the site's layout.
import messageTpl from '../../assets/message.html' with { type: 'text' }
import type { AppError } from '../kernel/errors'
import { page } from './render'

export function messagePage(status: number, heading: string, text: string, headers?: Record<string, string>) {
  return page(
    messageTpl as unknown as string,
    { heading, text, kicker: `Error ${status}` },
    { status, title: heading, headers, brand: true },
  )
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
  messagePage(
    404,
    'Link not found',
    'There is no short link at this address. Check that it was copied in full — codes are case-sensitive.',
  )
