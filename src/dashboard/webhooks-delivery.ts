// One delivery of a webhook's log, opened: its newest attempt's request as sent (headers, signature included, and
// the body), the answer (status, headers, the first 4 KiB), timing and attempt number; "Send again" (PRG).
import { Elysia } from 'elysia'
import type { DashboardDeps } from './deps'
import { AppError } from '../kernel/errors'
import { escapeHtml as h, timeHtml } from '../web/render'
import type { Session } from './sessions'
import { type Endpoint, endpointOf, LIST, notFoundPage } from './webhooks-view'
import { type DeliveryDetail, RETRY_SCHEDULE_MS } from '../webhooks'

/** The path of the delivery of event `eventId` to endpoint `id`. */
export const deliveryPath = (id: number, eventId: number) => `${LIST}/${id}/deliveries/${eventId}`

/** The first attempt and its retries (SPEC §9): the eighth failure is final. */
const ATTEMPTS_PLANNED = RETRY_SCHEDULE_MS.length + 1

/** Header pairs as a list of names and values (the values wrap: a signature is one long word). */
function headerList(pairs: [string, string][], id: string): string {
  if (pairs.length === 0) return '<p class="muted">No headers.</p>'
  const rows = pairs.map(([n, v]) => `<dt>${h(n)}</dt><dd><code>${h(v)}</code></dd>`).join('')
  return `<dl class="wh-headers" id="${id}">${rows}</dl>`
}

const stateWords = (d: DeliveryDetail) =>
  d.state === 'ok'
    ? 'Delivered'
    : d.state === 'failed'
      ? 'Failed: no more retries'
      : d.attempts > 0
        ? `Waiting for a retry, due ${timeHtml(d.next_at)}`
        : `Waiting to be sent, due ${timeHtml(d.next_at)}`

const tone = (d: DeliveryDetail) => (d.state === 'ok' ? 'good' : d.state === 'failed' ? 'bad' : 'wait')

function attemptSections(w: Pick<Endpoint, 'url'>, d: DeliveryDetail): string {
  const a = d.last_attempt
  if (!a)
    return `<section class="card" aria-labelledby="request-h"><h2 id="request-h">Request</h2>
<p class="empty">Not sent yet: nothing to show until its first attempt.</p>
<h3>Body</h3><pre class="wh-body" tabindex="0">${h(d.payload)}</pre></section>`
  const answered = a.response_status !== null
  return `<section class="card" aria-labelledby="request-h"><h2 id="request-h">Request</h2>
<p><code>POST</code> <span class="wh-url" id="wh-request-url">${h(a.url)}</span>${a.url !== w.url ? ' <span class="muted">(the endpoint\'s URL then)</span>' : ''}</p>
<h3>Headers</h3>${headerList(a.request_headers, 'wh-request-headers')}
<p class="hint muted">The signature was made with the endpoint's secret (and, during a rotation's overlap, the old one too); the secret itself is never shown.</p>
<h3>Body</h3><pre class="wh-body" tabindex="0">${h(d.payload)}</pre>
</section>
<section class="card" aria-labelledby="response-h"><h2 id="response-h">Response</h2>
${
  answered
    ? `<dl class="wh-meta"><dt>Status</dt><dd id="wh-response-status">${a.response_status}</dd></dl>
<h3>Headers</h3>${headerList(a.response_headers, 'wh-response-headers')}
<h3>Body${a.response_truncated ? ' <span class="muted">(the first 4 KiB)</span>' : ''}</h3>
${a.response_body ? `<pre class="wh-body" tabindex="0">${h(a.response_body)}</pre>` : '<p class="muted">Empty.</p>'}
${a.response_truncated ? '<p class="hint muted">The answer went on: only its first 4 KiB (and at most 50 headers, 8 KiB) are kept.</p>' : ''}`
    : `<p>No answer: ${h(a.error ?? 'the request failed')}.</p>`
}
</section>`
}

export function createWebhookDeliveryPages({ shell, webhooks }: DashboardDeps) {
  async function deliveryPage(request: Request, s: Session, idText: string, eventText: string) {
    const w = await endpointOf(webhooks, s, idText)
    if (!w || !/^[1-9][0-9]{0,14}$/.test(eventText)) return notFoundPage(shell, request, s)
    let d: DeliveryDetail
    try {
      d = await webhooks.delivery(s.caller, { id: w.id, event: eventText })
    } catch (err) {
      if (err instanceof AppError && err.status === 404) return notFoundPage(shell, request, s)
      throw err
    }
    const a = d.last_attempt
    const csrf = `<input type="hidden" name="_csrf" value="${h(s.csrf)}">`
    const again =
      d.state === 'pending'
        ? '<p class="muted">It is queued: "Send again" is offered once it has been delivered or has failed.</p>'
        : `<form method="post" action="${deliveryPath(w.id, d.event_id)}/redeliver" class="actions">${csrf}<button type="submit"${d.state === 'ok' ? ' class="secondary"' : ''}>Send again</button></form>
<p class="hint muted">Sent again under the same webhook-id, from attempt 1; this page then shows the new attempt.</p>`
    const content = `<p class="crumbs"><a href="${LIST}">Webhooks</a> / <a href="${LIST}/${w.id}">${h(w.url)}</a> /</p>
<h1>Delivery of event ${d.event_id}</h1>
<section class="card" aria-labelledby="summary-h"><h2 id="summary-h" class="visually-hidden">Summary</h2>
<dl class="wh-meta">
<dt>Event</dt><dd><code>${h(d.type)}</code> · <code>${h(d.webhook_id)}</code></dd>
<dt>State</dt><dd id="wh-delivery-state"><span class="state ${tone(d)}">${h(d.state)}</span> ${stateWords(d)}</dd>
<dt>Attempt</dt><dd id="wh-attempt">${a ? `${a.attempt} of at most ${ATTEMPTS_PLANNED}` : 'none yet'}</dd>
${a ? `<dt>Sent</dt><dd>${timeHtml(a.at)}</dd><dt>Took</dt><dd>${a.ms} ms</dd>` : ''}
${a?.error ? `<dt>Error</dt><dd>${h(a.error)}</dd>` : ''}
<dt>Event made</dt><dd>${timeHtml(d.created)}</dd>
</dl>
${again}
</section>
${attemptSections(w, d)}`
    return shell.render(request, s, { section: 'webhooks', title: `Delivery of event ${d.event_id}`, content })
  }

  /** "Send again": the log's redelivery, then back to this page (Post/Redirect/Get). */
  async function sendAgain(request: Request, s: Session, idText: string, eventText: string) {
    await shell.form(request, s)
    const w = await endpointOf(webhooks, s, idText)
    if (!w || !/^[1-9][0-9]{0,14}$/.test(eventText)) return notFoundPage(shell, request, s)
    const page = deliveryPath(w.id, Number(eventText))
    try {
      const r = await webhooks.redeliver(s.caller, { id: w.id, event: eventText })
      const text = w.enabled
        ? `Event ${r.event_id} (${r.webhook_id}) is sent again: reload to see the new attempt.`
        : `Event ${r.event_id} is queued again, but this endpoint is disabled: it waits until it is enabled.`
      return shell.seeOther(page, { kind: 'ok', text })
    } catch (err) {
      if (err instanceof AppError && err.status === 404) return notFoundPage(shell, request, s)
      if (err instanceof AppError && err.status < 500) return shell.seeOther(page, { kind: 'error', text: err.message })
      throw err
    }
  }

  const signedIn = async (request: Request, then: (s: Session) => Response | Promise<Response>, page?: string) => {
    const s = await shell.require(request, page)
    return s instanceof Response ? s : then(s)
  }

  return new Elysia({ name: 'dashboard-webhook-delivery' })
    .get('/dashboard/webhooks/:id/deliveries/:event', ({ request, params }) =>
      signedIn(request, (s) => deliveryPage(request, s, params.id, params.event)),
    )
    .post('/dashboard/webhooks/:id/deliveries/:event/redeliver', ({ request, params }) =>
      signedIn(
        request,
        (s) => sendAgain(request, s, params.id, params.event),
        `/dashboard/webhooks/${params.id}/deliveries/${params.event}`,
      ),
    )
}
