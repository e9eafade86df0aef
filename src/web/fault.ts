// The last line of defence: whatever the request (a malformed Host header makes its URL unparseable), an
// error becomes the envelope (/api) or a page, never internals, and this must not throw itself.
import { AppError, internalError, notFound } from '../kernel/errors'
import { errorPage, messagePage, notFoundPage } from './error-pages'
import { errorResponse } from './api'
import type { FaultLog } from './fault-log'
import { pathOf } from './path'

/**
 * The answer for an error of a request; `code` NOT_FOUND is the router's "no route". Faults go to `faults`.
 * `unavailable` turns an error that says the database cannot be reached into its 503 (app.ts: the health's).
 */
export const faultAnswer =
  (faults: FaultLog, unavailable: (err: unknown) => AppError | null = () => null) =>
  (error: unknown, request: Request, code?: string): Response => {
    try {
      if (!(error instanceof AppError)) error = unavailable(error) ?? error
      const isApi = pathOf(request.url).startsWith('/api')
      if (code === 'NOT_FOUND') return isApi ? errorResponse(notFound()) : notFoundPage()
      // A page's route may throw an AppError too (a full QR queue: 503 with Retry-After): its status,
      // message and headers make the page. Anything else is a fault, logged (within bounds), not shown.
      if (error instanceof AppError) return isApi ? errorResponse(error) : errorPage(error)
      faults.fault(`internal error on ${request.method} ${pathOf(request.url).slice(0, 200)}`, error)
      return isApi
        ? errorResponse(internalError())
        : messagePage(500, 'Something went wrong', 'The request could not be completed. Try again in a moment.')
    } catch {
      return new Response('Internal error', { status: 500, headers: { 'content-type': 'text/plain; charset=utf-8' } })
    }
  }
