// The Webhooks section's views: endpoint states, the endpoint form's fields, the delivery log's rows and table.
import { escapeHtml as h, isoTimeHtml } from '../web/render'
import { EVENT_TYPES } from '../kernel/outbox'
import type { DashboardDeps } from './deps'
import type { Session } from './sessions'
import { when } from './page-helpers'
import type { Shell } from './shell'

/** Deliveries shown in an endpoint's log, newest event first (the log keeps 7 days). */
export const LOG_SHOWN = 100

export const EVENT_HELP: Record<string, string> = {
  'link.created': 'a link is created',
  'link.updated': 'a link is edited (or gets its title from its page)',
  'link.deleted': 'a link is deleted',
  'link.clicked': 'a link is visited (busy: one event per click)',
  'link.reported': 'a visitor reports one of your links',
  'links.imported': 'an import of links ends (one event for all its links)',
  'mail.received': 'a mailbox receives a message',
}

export const whenIso = (iso: string | null) => (iso ? when(Date.parse(iso)) : '')

/** The service's messages speak of API parameters; on a form they are about its fields. */
export const forForm = (message: string) =>
  message.replace('The parameter "url"', 'The URL').replace('The parameter "events"', 'The events')

export type Endpoint = Awaited<ReturnType<DashboardDeps['webhooks']['overview']>>[number]

/** An endpoint's state in words (the colour only repeats them): what the list, its page and the live log show. */
export interface EndpointState {
  label: 'Active' | 'Failing' | 'Disabled'
  tone: 'good' | 'warn' | 'bad'
  note: string
}

/** Failing as soon as a delivery's last attempt failed (a retry is due), not only once one used up its retries. */
export function stateOf(w: Pick<Endpoint, 'enabled' | 'disabled_reason' | 'failing' | 'retrying'>): EndpointState {
  if (!w.enabled) return { label: 'Disabled', tone: 'bad', note: w.disabled_reason ?? '' }
  const why = [
    w.retrying > 0 ? `${w.retrying} pending ${w.retrying === 1 ? 'retry' : 'retries'}` : '',
    w.failing ? 'A delivery used up its retries' : '',
  ].filter(Boolean)
  if (why.length) return { label: 'Failing', tone: 'warn', note: why.join(' · ') }
  return { label: 'Active', tone: 'good', note: '' }
}

export function status(w: Endpoint): string {
  const st = stateOf(w)
  return `<span class="state ${st.tone}">${st.label}</span>${st.note ? `<div class="muted">${h(st.note)}</div>` : ''}`
}

export const counts = (w: Endpoint) =>
  `<span class="wh-counts"><span title="Delivered">${w.deliveries.ok} ok</span> · <span title="Failed">${w.deliveries.failed} failed</span> · <span title="Pending">${w.deliveries.pending} pending</span></span>`

/** One row of the log as it is shown: the page's table and the live log's JSON (which app.js puts in the same cells). */
export function logRow(d: Awaited<ReturnType<DashboardDeps['webhooks']['deliveries']>>['deliveries'][number]) {
  return {
    event_id: d.event_id,
    type: d.type,
    state: d.state,
    tone: d.state === 'ok' ? 'good' : d.state === 'failed' ? 'bad' : 'wait',
    attempts: d.attempts,
    status: d.last_status === null ? '—' : String(d.last_status),
    error: d.last_error ?? '—',
    time: d.last_ms === null ? '—' : `${d.last_ms} ms`,
    when: d.state === 'pending' ? `due ${whenIso(d.next_at)}` : whenIso(d.last_at),
    /** The same time for a <time datetime> (assets/app-times.js shows it in the viewer's zone). */
    at: (d.state === 'pending' ? d.next_at : d.last_at) ?? null,
    due: d.state === 'pending',
  }
}
export const eventList = (events: string) =>
  events
    .split(',')
    .map((e) => `<code>${h(e)}</code>`)
    .join(' ')

/** A new endpoint's secret, kept for the one page that shows it; after a rotation, what became of the old ones. */
export interface NewEndpoint {
  secret: string
  /** ISO: until when the secret before it still verifies; null: not at all. */
  previousUntil?: string | null
  /** A secret kept from the rotation before stopped verifying. */
  dropped?: boolean
}

export const LIST = '/dashboard/webhooks'

export interface FormState {
  url?: string
  events?: string[]
  error?: { field: 'url' | 'events'; text: string }
}

/** The URL field and the event boxes, with a refused form's error: the add form's and the edit form's. */
export function endpointFields(form: FormState, chosen: readonly string[]): string {
  const err = form.error
  const urlErr = err?.field === 'url'
  const evErr = err?.field === 'events'
  const boxes = EVENT_TYPES.map(
    (
      t,
    ) => `<label class="wh-event"><input type="checkbox" name="events" value="${h(t)}"${chosen.includes(t) ? ' checked' : ''}>
<span><code>${h(t)}</code> <span class="muted">when ${h(EVENT_HELP[t] ?? t)}</span></span></label>`,
  ).join('')
  return `<div class="field">
<label for="wh-url">URL</label>
<input id="wh-url" name="url" type="url" required maxlength="2048" value="${h(form.url ?? '')}" placeholder="https://hooks.example.com/linkbox" autocomplete="off" spellcheck="false" aria-describedby="${urlErr ? 'wh-url-error ' : ''}wh-url-hint"${urlErr ? ' aria-invalid="true"' : ''}>
<span class="hint" id="wh-url-hint">Events are POSTed here as JSON, signed with the endpoint's secret (Standard Webhooks).</span>
${urlErr ? `<span class="error" id="wh-url-error">${h(err!.text)}</span>` : ''}
</div>
<fieldset class="wh-events"${evErr ? ' aria-describedby="wh-events-error" aria-invalid="true"' : ''}>
<legend>Events</legend>
${boxes}
${evErr ? `<span class="error" id="wh-events-error">${h(err!.text)}</span>` : ''}
</fieldset>`
}

/** The log as a table (the same markup app.js builds from log.json), or a sentence when it is empty. */
export function logTable(s: Session, w: Endpoint, log: ReturnType<typeof logRow>[]): string {
  if (log.length === 0) return '<p class="empty">Nothing sent yet. Send a test event to see a delivery here.</p>'
  const csrf = `<input type="hidden" name="_csrf" value="${h(s.csrf)}">`
  const rows = log
    .map(
      (d) => `<tr>
<td class="n" data-label="Event"><a href="/dashboard/webhooks/${w.id}/deliveries/${d.event_id}" aria-label="Event ${d.event_id}: its delivery in detail">${d.event_id}</a></td>
<td data-label="Type"><code>${h(d.type)}</code></td>
<td data-label="State"><span class="state ${d.tone}">${h(d.state)}</span></td>
<td class="n" data-label="Attempts">${d.attempts}</td>
<td class="n" data-label="Status">${h(d.status)}</td>
<td class="wh-error" data-label="Last error">${h(d.error)}</td>
<td class="n" data-label="Time">${h(d.time)}</td>
<td data-label="When">${d.due ? 'due ' : ''}${isoTimeHtml(d.at, { never: '' })}</td>
<td class="wide"><form method="post" action="/dashboard/webhooks/${w.id}/redeliver">${csrf}<input type="hidden" name="event" value="${d.event_id}"><button type="submit" class="secondary small" aria-label="Redeliver event ${d.event_id}">Redeliver</button></form></td>
</tr>`,
    )
    .join('')
  return `<div class="table-wrap"><table class="wh-log stack">
<caption class="visually-hidden">Deliveries to this endpoint, newest event first</caption>
<thead><tr><th scope="col" class="n">Event</th><th scope="col">Type</th><th scope="col">State</th><th scope="col" class="n">Attempts</th><th scope="col" class="n">Status</th><th scope="col">Last error</th><th scope="col" class="n">Time</th><th scope="col">When</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${rows}</tbody></table></div>${log.length >= LOG_SHOWN ? `<p class="muted">The newest ${LOG_SHOWN} deliveries.</p>` : ''}`
}

/** Not there, or another account's: the same page. */
export const notFoundPage = (shell: Shell, request: Request, s: Session) =>
  shell.render(request, s, {
    section: 'webhooks',
    title: 'Not found',
    status: 404,
    content: `<h1>Not found</h1><div class="card"><p>There is no such webhook in your account.</p><p><a href="/dashboard/webhooks">Back to your webhooks</a></p></div>`,
  })

/** The account's endpoint of a path's id, or null. */
export const endpointOf = async (
  webhooks: DashboardDeps['webhooks'],
  s: Session,
  idText: string,
): Promise<Endpoint | null> =>
  /^[1-9][0-9]{0,14}$/.test(idText)
    ? ((await webhooks.overview(s.caller)).find((w) => w.id === Number(idText)) ?? null)
    : null
