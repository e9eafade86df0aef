// The answer pages of a visit that a link's state calls for: its frame page (or the page saying it may not be
// framed), the password form, the page of a link whose visits are used up; and where a code's report form lives.
import frameRefusedTpl from '../../assets/frame-refused.html' with { type: 'text' }
import frameTpl from '../../assets/frame.html' with { type: 'text' }
import passwordTpl from '../../assets/password.html' with { type: 'text' }
import { LOGO_SVG, page } from '../web/render'
import { messagePage } from '../web/error-pages'
import type { FrameCheck } from './frame-check'
import type { LinkRow } from './storage/contract'
import type { VisitOutcome } from './visit-types'

const tpl = (t: unknown) => t as string

/** Where the report form of a code lives (abuse/routes.ts). */
export const reportPath = (code: string) => `/${encodeURIComponent(code)}/report`

export function createVisitPages(deps: {
  /** The base URL of a domain's links (domains.ts). */
  baseOf: (domain: string) => string
  count: (outcome: VisitOutcome) => void
  frameCheck: FrameCheck
}) {
  const { baseOf, count, frameCheck } = deps

  async function framePage(destination: string, short: string): Promise<Response> {
    const u = new URL(destination)
    const verdict = await frameCheck.check(destination)
    if (verdict.framing === 'allowed')
      return page(
        tpl(frameTpl),
        { short_url: short, long_url: destination, host: u.host, logo: LOGO_SVG },
        { title: `${u.host} via ${short}`, bodyClass: 'frame', frame: true },
      )
    const reason =
      verdict.framing === 'refused'
        ? `${u.host} does not allow other sites to show its pages in a frame.`
        : `linkbox could not check whether ${u.host} allows that: ${verdict.why}.`
    return page(
      tpl(frameRefusedTpl),
      { short_url: short, long_url: destination, host: u.host, reason },
      { title: `Open ${u.host} directly`, brand: true },
    )
  }

  const usedUpPage = (row: LinkRow) => {
    count('used_up')
    const n = row.max_visits!
    return messagePage(
      410,
      'This link reached its limit',
      `The owner of this short link let it be visited ${n} ${n === 1 ? 'time' : 'times'}, and this link reached its limit of ${n} ${n === 1 ? 'visit' : 'visits'}.`,
    )
  }

  function passwordForm(row: LinkRow, referer: string, error = '', status = 200, headers?: Record<string, string>) {
    count(
      status === 200
        ? 'password_form'
        : status === 429
          ? 'password_limited'
          : status === 503
            ? 'password_busy'
            : 'password_wrong',
    )
    return page(
      tpl(passwordTpl),
      {
        short_url: `${baseOf(row.domain)}/${row.code}`,
        action: `/${row.code}`,
        ref: referer,
        error,
        invalid: error ? ' aria-invalid="true"' : '',
        report: reportPath(row.code),
      },
      { status, title: 'Password required', headers, brand: true },
    )
  }

  return { framePage, usedUpPage, passwordForm }
}
