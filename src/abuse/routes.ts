// The visitor's side of abuse handling: "Report this link" (GET a form; POST, then a redirect so a reload never
// sends it twice) and the 451 page; reports are limited per client address, nothing of the client is stored.
import { Elysia } from 'elysia'
import reportSentTpl from '../../assets/report-sent.html' with { type: 'text' }
import reportTpl from '../../assets/report.html' with { type: 'text' }
import type { Config } from '../kernel/config'
import { AppError } from '../kernel/errors'
import { rateKeyOf } from '../web/client-ip'
import { isCrossSite } from '../web/cross-site'
import { readBodyLimited } from '../web/params'
import { createDailyLimiter } from '../web/daily-limit'
import { createRateLimiter } from '../web/rate-limit'
import { reportPath, type LinkService, type VisitGate } from '../links'
import { messagePage, notFoundPage } from '../web/error-pages'
import { escapeHtml, page } from '../web/render'
import { MAX_REPORT_CONTACT, MAX_REPORT_TEXT, type AbuseService } from './service'
import { verdictText, type Verdict } from './verdict'
import { REPORT_REASONS } from './storage/contract'

const tpl = (t: unknown) => t as string
const FORM_LIMIT = 16 * 1024
/** Reports one client address may send: a person reports a link or two, a flood is not a person. */
export const REPORTS_PER_MINUTE = 5
export const REPORTS_PER_DAY = 50

const REASON_LABELS: Record<(typeof REPORT_REASONS)[number], string> = {
  phishing: 'Phishing: it imitates a site to take passwords or payment details',
  malware: 'Malware: it downloads something harmful',
  spam: 'Spam: it was sent to me unasked',
  illegal: 'Illegal content',
  other: 'Something else',
}

/** The page a link answers while an admin, a ban or a blocklist stops it: 451, the reason, never the destination. */
export function unavailablePage(v: Verdict): Response {
  return messagePage(451, 'This link has been disabled', verdictText(v), { 'cache-control': 'private, no-cache' })
}

/** The visit gate over the abuse service: a verdict is one WeakMap lookup for a link already seen. */
export function visitGate(abuse: AbuseService): VisitGate {
  return {
    stops: (row) => abuse.verdict(row) !== null,
    generation: () => abuse.verdictGeneration(),
    unavailable(row) {
      const v = abuse.verdict(row)
      if (!v) return null
      return unavailablePage(v)
    },
  }
}

export function createReportRoutes(deps: {
  config: Config
  abuse: AbuseService
  links: LinkService
  clientIp: (r: Request) => string
}) {
  const { abuse, links, clientIp } = deps
  // The domain a request came to (SPEC §13): its links, its base URL, its own origin for the form's check.
  const domains = links.domains
  const domainOf = (request: Request) => (domains.multi ? domains.ofHost(request.headers.get('host')) : '')
  const perMinute = createRateLimiter()
  const perDay = createDailyLimiter()

  function form(code: string, base: string, url: URL, status = 200): Response {
    const q = url.searchParams
    const error = q.get('error')
    const chosen = q.get('reason') ?? ''
    const reasonError = error === 'reason'
    const textError = error === 'text'
    const reasons = REPORT_REASONS.map(
      (r) =>
        `<div class="field check"><input type="radio" id="reason-${r}" name="reason" value="${r}"${r === chosen ? ' checked' : ''}${reasonError ? ' aria-describedby="reason-error"' : ''}><label for="reason-${r}">${escapeHtml(REASON_LABELS[r])}</label></div>`,
    ).join('')
    return page(
      tpl(reportTpl),
      {
        short_url: `${base}/${code}`,
        action: reportPath(code),
        notice: error
          ? '<p class="callout warn" role="alert">The report was not sent: see the field marked below.</p>'
          : '',
        reasons,
        reason_invalid: reasonError ? ' aria-invalid="true"' : '',
        reason_error: reasonError
          ? '<span class="error" id="reason-error">Choose what is wrong with the link.</span>'
          : '',
        text: (q.get('text') ?? '').slice(0, MAX_REPORT_TEXT * 2),
        text_invalid: textError ? ' aria-invalid="true"' : '',
        text_error_id: textError ? ' report-text-error' : '',
        text_error: textError
          ? `<span class="error" id="report-text-error">At most ${MAX_REPORT_TEXT.toLocaleString('en-US')} characters.</span>`
          : '',
        contact: (q.get('contact') ?? '').slice(0, MAX_REPORT_CONTACT),
      },
      { status, title: `Report ${base}/${code}`, brand: true, referrer: 'same-origin' }, // no-referrer would make the POST's Origin "null": refused as cross-site
    )
  }

  const sent = (code: string, base: string) =>
    page(tpl(reportSentTpl), { short_url: `${base}/${code}` }, { title: 'Report sent', brand: true })

  const seeOther = (location: string) =>
    new Response(null, { status: 303, headers: { location, 'cache-control': 'no-store' } })

  return new Elysia({ name: 'abuse-report' })
    .get('/:code/report', async ({ params, request }) => {
      const row = await links.resolve(params.code, domainOf(request))
      if (!row) return notFoundPage()
      const url = new URL(request.url)
      const base = domains.baseOf(row.domain)
      return url.searchParams.get('sent') === '1' ? sent(row.code, base) : form(row.code, base, url)
    })
    .post(
      '/:code/report',
      async ({ params, request }) => {
        const domain = domainOf(request)
        if (isCrossSite(request, domains.baseOf(domain)))
          return messagePage(403, 'Request refused', 'This form can only be sent from this site.')
        const row = await links.resolve(params.code, domain)
        if (!row) return notFoundPage()
        const client = rateKeyOf(clientIp(request))
        const minute = perMinute.hit(client, REPORTS_PER_MINUTE)
        const d = minute.allowed ? perDay.hit(client, REPORTS_PER_DAY) : minute
        if (!d.allowed)
          return messagePage(
            429,
            'Too many reports',
            `Too many reports from your address: wait ${d.reset} s and try again.`,
            { 'retry-after': String(d.reset) },
          )
        const body = new URLSearchParams(new TextDecoder().decode(await readBodyLimited(request, FORM_LIMIT)))
        const fields = {
          reason: body.get('reason') ?? '',
          text: body.get('text') ?? '',
          contact: body.get('contact') ?? '',
        }
        try {
          await abuse.report({ code: row.code, domain, ...fields })
        } catch (err) {
          if (err instanceof AppError && err.status === 503)
            return messagePage(503, 'Reports are full', err.message, err.headers)
          if (!(err instanceof AppError) || err.status !== 400) throw err
          // Back to the form with what was typed (in this browser's own address bar, never stored) and the field.
          const field = /"text"/.test(err.message) ? 'text' : /"contact"/.test(err.message) ? 'contact' : 'reason'
          const q = new URLSearchParams({
            error: field,
            reason: fields.reason,
            text: fields.text.slice(0, MAX_REPORT_TEXT * 2),
            contact: fields.contact.slice(0, MAX_REPORT_CONTACT),
          })
          return seeOther(`${reportPath(row.code)}?${q}`)
        }
        return seeOther(`${reportPath(row.code)}?sent=1`)
      },
      { parse: 'none' },
    )
}
