// The Webhooks section's one endpoint: its page and live log, editing, a new secret, deletion, the test event and
// redelivery (the log.json poll keeps the page up to date: assets/app.js).
import { Elysia } from 'elysia'
import type { DashboardDeps } from './deps'
import { AppError } from '../kernel/errors'
import { escapeHtml as h, isoTimeHtml, utcText } from '../web/render'
import { EVENT_TYPES } from '../kernel/outbox'
import { RepeatedForm } from './form-tokens'
import { byAccount } from '../audit'
import type { Session } from './sessions'
import { withParam } from './page-helpers'
import { overlapWords, secretPage } from './webhooks-secret'
import {
  counts,
  type Endpoint,
  endpointFields,
  endpointOf,
  eventList,
  forForm,
  type FormState,
  LIST,
  LOG_SHOWN,
  logRow,
  logTable,
  type NewEndpoint,
  notFoundPage,
  stateOf,
  status,
} from './webhooks-view'

export function createWebhookEndpointPages({ shell, webhooks, clientIp, config }: DashboardDeps) {
  const { flash, tokens } = shell

  // ---------------------------------------------------------------------------------------------------
  // One endpoint: its log, the test event, redelivery, editing, a new secret, deletion

  /** What the live log polls: the endpoint's state, counts and log rows, as the page shows them. */
  async function liveLog(s: Session, w: Endpoint) {
    return {
      id: w.id,
      state: stateOf(w),
      counts: { ok: w.deliveries.ok, failed: w.deliveries.failed, pending: w.deliveries.pending },
      deliveries: (await webhooks.deliveries(s.caller, { id: w.id, limit: LOG_SHOWN })).deliveries.map(logRow),
      more: LOG_SHOWN,
    }
  }

  /**
   * An endpoint's page; with ?created=ID (or ?rotated=ID), the secret just made, once (then a note that it
   * was). The state, counts and log are marked for app.js, which keeps them up to date from log.json.
   */
  async function endpointPage(request: Request, s: Session, idText: string) {
    const w = await endpointOf(webhooks, s, idText)
    if (!w) return notFoundPage(shell, request, s)
    const query = new URL(request.url).searchParams
    const createdId = query.get('created')
    const rotatedId = query.get('rotated')
    const shownId = createdId ?? rotatedId
    const made =
      shownId === null ? null : await flash.take<NewEndpoint>(shell.ownerOf(s), `webhook secret ${w.id}`, shownId)
    if (made) return secretPage(shell, request, s, w, made, createdId === null)
    const live = await liveLog(s, w)
    const csrf = `<input type="hidden" name="_csrf" value="${h(s.csrf)}">`
    const toggle = w.enabled
      ? `<form method="post" action="/dashboard/webhooks/${w.id}/enabled">${csrf}<input type="hidden" name="enabled" value="0"><button type="submit" class="secondary">Disable</button></form>`
      : `<form method="post" action="/dashboard/webhooks/${w.id}/enabled">${csrf}<input type="hidden" name="enabled" value="1"><button type="submit">Enable</button></form>`
    const content = `<p class="crumbs"><a href="/dashboard/webhooks">Webhooks</a> /</p>
<h1 class="wh-title">${h(w.url)}</h1>
<section class="card">
<dl class="wh-meta"><dt>Status</dt><dd id="wh-state">${status(w)}</dd><dt>Events</dt><dd>${eventList(w.events)}</dd><dt>Deliveries</dt><dd id="wh-counts">${counts(w)}</dd><dt>Created</dt><dd>${isoTimeHtml(w.created, { never: '' })}</dd>${
      w.previous_secret_expires
        ? `<dt>Old secret</dt><dd id="wh-old-secret">Still valid until ${isoTimeHtml(w.previous_secret_expires)}: deliveries carry both signatures until then</dd>`
        : ''
    }</dl>
${w.enabled ? '' : '<p class="muted">Disabled: nothing is sent to it, and events meanwhile are not kept for it. Deliveries already queued wait, and go out once it is enabled.</p>'}
<div class="actions">
<form method="post" action="/dashboard/webhooks/${w.id}/test">${csrf}<button type="submit">Send a test event</button></form>
<a class="button secondary" href="/dashboard/webhooks/${w.id}/edit">Edit</a>
${toggle}
<a class="button secondary" href="/dashboard/webhooks/${w.id}/rotate">New secret…</a>
<a class="button secondary danger-outline" href="/dashboard/webhooks/${w.id}/delete">Delete…</a>
</div>
</section>
<section class="card" aria-labelledby="log-h"><h2 id="log-h">Delivery log</h2>
<div class="actions wh-log-actions">
<form method="post" action="/dashboard/webhooks/${w.id}/redeliver-failed">${csrf}<button type="submit" class="secondary">Redeliver all failed</button></form>
<a class="button secondary" href="/dashboard/webhooks/${w.id}">Reload</a>
</div>
<div id="wh-log" data-live-log="/dashboard/webhooks/${w.id}/log.json" data-endpoint="${w.id}">${logTable(s, w, live.deliveries)}</div>
<p class="hint muted" id="wh-log-live" aria-live="polite"></p>
<p class="hint muted">Failed deliveries are retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h. The log keeps 7 days.</p></section>`
    const notice =
      shownId === null
        ? undefined
        : ({
            kind: 'ok',
            text:
              createdId !== null
                ? "This endpoint's signing secret was shown once, and is not shown again. If it was not copied, delete the endpoint and add it again."
                : `This endpoint's new signing secret was shown once, and is not shown again. If it was not copied, make another new one.${w.previous_secret_expires ? ` The old secret stays valid until ${utcText(Date.parse(w.previous_secret_expires))}.` : ''}`,
          } as const)
    return shell.render(request, s, { section: 'webhooks', title: `Webhook ${w.id}`, content, notice })
  }

  /** The edit form: the URL and the events, as they are or as a refused edit sent them (?form=ID). */
  async function editPage(request: Request, s: Session, idText: string) {
    const w = await endpointOf(webhooks, s, idText)
    if (!w) return notFoundPage(shell, request, s)
    const form = (await shell.refusedState<FormState>(request, shell.ownerOf(s))) ?? {
      url: w.url,
      events: w.events.split(','),
    }
    const content = `<p class="crumbs"><a href="/dashboard/webhooks">Webhooks</a> / <a href="/dashboard/webhooks/${w.id}">${h(w.url)}</a> /</p>
<h1>Edit this endpoint</h1>
<section class="card" aria-labelledby="edit-h">
<h2 id="edit-h">URL and events</h2>
<p class="muted">Its secret and its delivery log stay. Later events are sent to the new URL, and only those of the events chosen; deliveries already queued still go out, to the new URL.</p>
<form method="post" action="/dashboard/webhooks/${w.id}/edit" class="wh-form">
<input type="hidden" name="_csrf" value="${h(s.csrf)}">
${endpointFields(form, form.events ?? [])}
<div class="actions"><button type="submit">Save changes</button><a class="button secondary" href="/dashboard/webhooks/${w.id}">Cancel</a></div>
</form>
</section>`
    return shell.render(request, s, { section: 'webhooks', title: 'Edit endpoint', content })
  }

  /** "A new secret?": what it does, and a form with a one-time token (sent twice, it makes one secret). */
  async function rotatePage(request: Request, s: Session, idText: string) {
    const w = await endpointOf(webhooks, s, idText)
    if (!w) return notFoundPage(shell, request, s)
    const overlap = config.webhooks.rotation_overlap
    const content = `<p class="crumbs"><a href="/dashboard/webhooks">Webhooks</a> / <a href="/dashboard/webhooks/${w.id}">${h(w.url)}</a> /</p>
<h1>Make a new signing secret?</h1>
<section class="card">
<p class="wh-url"><strong>${h(w.url)}</strong></p>
<p>The new secret is shown once, on the next page. ${
      overlap > 0
        ? `The current one stays valid for ${h(overlapWords(overlap))} more: until then every delivery, retries of queued ones included, is signed with both, so your receiver keeps verifying while you give it the new one. After that, only the new one verifies.`
        : 'From then on every delivery, retries of queued ones included, is signed with it only: your receiver must have it before it can verify them again.'
    }${
      w.previous_secret_expires
        ? ` <strong>The secret before the current one (valid until ${isoTimeHtml(w.previous_secret_expires)}) stops verifying at once:</strong> only the newest two are ever valid.`
        : ''
    }</p>
<form method="post" action="/dashboard/webhooks/${w.id}/rotate" class="actions">
<input type="hidden" name="_csrf" value="${h(s.csrf)}">
${tokens.field()}
<button type="submit">Make a new secret</button>
<a class="button secondary" href="/dashboard/webhooks/${w.id}">Cancel</a>
</form>
</section>`
    return shell.render(request, s, { section: 'webhooks', title: 'New signing secret', content })
  }

  async function confirmPage(request: Request, s: Session, idText: string) {
    const w = await endpointOf(webhooks, s, idText)
    if (!w) return notFoundPage(shell, request, s)
    const content = `<p class="crumbs"><a href="/dashboard/webhooks">Webhooks</a> / <a href="/dashboard/webhooks/${w.id}">${h(w.url)}</a> /</p>
<h1>Delete this endpoint?</h1>
<section class="card">
<p class="wh-url"><strong>${h(w.url)}</strong></p>
<p>It will get no more events, and its delivery log goes with it. This cannot be undone.</p>
<form method="post" action="/dashboard/webhooks/${w.id}/delete" class="actions">
<input type="hidden" name="_csrf" value="${h(s.csrf)}">
<button type="submit" class="danger">Delete endpoint</button>
<a class="button secondary" href="/dashboard/webhooks/${w.id}">Cancel</a>
</form>
</section>`
    return shell.render(request, s, { section: 'webhooks', title: 'Delete endpoint', content })
  }

  /**
   * A POST on one endpoint: the form's checks, then `act`; another account's (or none) → the 404 page.
   * `goneIs404`: an act that awaits (the enabled switch) may find the endpoint deleted meanwhile → the 404 page too.
   */
  async function onEndpoint(
    request: Request,
    s: Session,
    idText: string,
    act: (w: Endpoint, fields: URLSearchParams) => Promise<Response>,
    goneIs404 = false,
  ) {
    const fields = await shell.form(request, s)
    const w = await endpointOf(webhooks, s, idText)
    if (!w) return notFoundPage(shell, request, s)
    try {
      return await act(w, fields)
    } catch (err) {
      if (goneIs404 && err instanceof AppError && err.status === 404) return notFoundPage(shell, request, s)
      // The endpoint is the caller's (checked above): what is left is about the request (an unknown event).
      if (err instanceof AppError && err.status < 500)
        return shell.seeOther(`${LIST}/${idText}`, { kind: 'error', text: err.message })
      throw err
    }
  }

  /** The edit form sent: the service's update (its SSRF check and rules); a refusal goes back to the form with its message. */
  async function saveEdit(request: Request, s: Session, idText: string) {
    const fields = await shell.form(request, s)
    const w = await endpointOf(webhooks, s, idText)
    if (!w) return notFoundPage(shell, request, s)
    const page = `${LIST}/${w.id}/edit`
    const url = (fields.get('url') ?? '').trim()
    const events = fields.getAll('events').filter((e) => (EVENT_TYPES as readonly string[]).includes(e))
    const again = (field: 'url' | 'events', text: string) =>
      shell.refused(shell.ownerOf(s), page, { url, events, error: { field, text } } satisfies FormState)
    if (!url) return again('url', 'Enter the URL events are sent to.')
    if (events.length === 0) return again('events', 'Choose at least one event.')
    try {
      const r = await webhooks.update(
        s.caller,
        { id: w.id, url, events: events.join(',') },
        byAccount(s.caller, clientIp(request)),
      )
      return shell.seeOther(`${LIST}/${w.id}`, {
        kind: 'ok',
        text: `Saved: events go to ${r.url} (${r.events.split(',').join(', ')}).`,
      })
    } catch (err) {
      if (err instanceof AppError && err.status === 404) return notFoundPage(shell, request, s)
      if (err instanceof AppError && err.status < 500)
        return again(
          err.code === 'invalid_parameter' && err.message.includes('"events"') ? 'events' : 'url',
          forForm(err.message),
        )
      throw err
    }
  }

  /** The new-secret form sent: once per form (its token), the secret kept for the one page that shows it. */
  async function rotate(request: Request, s: Session, idText: string) {
    const fields = await shell.form(request, s)
    const w = await endpointOf(webhooks, s, idText)
    if (!w) return notFoundPage(shell, request, s)
    const sent = tokens.of(fields)
    const before = await tokens.used(sent, s.id)
    if (before !== undefined) return shell.repeated(before ?? `${LIST}/${w.id}`)
    const shownId = flash.newId()
    const shown = withParam(`${LIST}/${w.id}`, 'rotated', shownId)
    let made
    try {
      made = await webhooks.rotate(
        s.caller,
        { id: w.id },
        { within: (_, tx) => tokens.claim(tx, sent, s.id, shown) },
        byAccount(s.caller, clientIp(request)),
      )
    } catch (err) {
      if (err instanceof RepeatedForm) return shell.repeated(err.result ?? `${LIST}/${w.id}`)
      if (err instanceof AppError && err.status === 404) return notFoundPage(shell, request, s)
      throw err
    }
    await flash.put(
      shell.ownerOf(s),
      `webhook secret ${made.id}`,
      {
        secret: made.secret,
        previousUntil: made.previous_secret_expires,
        dropped: made.earlier_secret_dropped,
      } satisfies NewEndpoint,
      shownId,
    )
    return shell.seeOther(shown)
  }

  /** The live log's JSON: for the signed-in owner only (401 and 404 answer JSON too, never a page). */
  async function logJson(request: Request, idText: string) {
    const json = (status: number, body: unknown) =>
      new Response(JSON.stringify(body), {
        status,
        headers: {
          'content-type': 'application/json; charset=utf-8',
          'cache-control': 'no-store',
          'x-content-type-options': 'nosniff',
        },
      })
    const s = await shell.session(request)
    if (!s) return json(401, { error: 'signed_out', message: 'Sign in again to see the log.' })
    const w = await endpointOf(webhooks, s, idText)
    if (!w) return json(404, { error: 'not_found', message: 'There is no such webhook in your account.' })
    return json(200, await liveLog(s, w))
  }

  /** `page`: where a form comes back to after signing in, when that is not its own path. */
  const signedIn = async (request: Request, then: (s: Session) => Response | Promise<Response>, page?: string) => {
    const s = await shell.require(request, page)
    return s instanceof Response ? s : then(s)
  }

  return new Elysia({ name: 'dashboard-webhook-endpoint' })
    .get('/dashboard/webhooks/:id', ({ request, params }) =>
      signedIn(request, (s) => endpointPage(request, s, params.id)),
    )
    .get('/dashboard/webhooks/:id/log.json', ({ request, params }) => logJson(request, params.id))
    .get('/dashboard/webhooks/:id/edit', ({ request, params }) =>
      signedIn(request, (s) => editPage(request, s, params.id)),
    )
    .post('/dashboard/webhooks/:id/edit', ({ request, params }) =>
      signedIn(request, (s) => saveEdit(request, s, params.id)),
    )
    .get('/dashboard/webhooks/:id/rotate', ({ request, params }) =>
      signedIn(request, (s) => rotatePage(request, s, params.id)),
    )
    .post('/dashboard/webhooks/:id/rotate', ({ request, params }) =>
      signedIn(request, (s) => rotate(request, s, params.id)),
    )
    .post('/dashboard/webhooks/:id/enabled', ({ request, params }) =>
      signedIn(
        request,
        (s) =>
          onEndpoint(
            request,
            s,
            params.id,
            async (w, fields) => {
              const on = fields.get('enabled') === '1'
              await webhooks.update(s.caller, { id: w.id, enabled: on }, byAccount(s.caller, clientIp(request)))
              const text = on
                ? `The endpoint is enabled: events are sent to it again, deliveries that waited first.`
                : `The endpoint is disabled: nothing is sent to it until it is enabled again.`
              return shell.seeOther(`${LIST}/${w.id}`, { kind: 'ok', text })
            },
            true,
          ),
        `/dashboard/webhooks/${params.id}`,
      ),
    )
    .post('/dashboard/webhooks/:id/redeliver-failed', ({ request, params }) =>
      signedIn(
        request,
        (s) =>
          onEndpoint(request, s, params.id, async ({ id }) => {
            const r = await webhooks.redeliverFailed(s.caller, { id }, byAccount(s.caller, clientIp(request)))
            const text =
              r.redelivered === 0
                ? 'No failed deliveries to send again.'
                : `${r.redelivered} failed ${r.redelivered === 1 ? 'delivery is' : 'deliveries are'} sent again, each under its event's webhook-id.${r.enabled ? '' : ' This endpoint is disabled: they wait until it is enabled.'}`
            return shell.seeOther(`${LIST}/${id}`, { kind: 'ok', text })
          }),
        `/dashboard/webhooks/${params.id}`,
      ),
    )
    .get('/dashboard/webhooks/:id/delete', ({ request, params }) =>
      signedIn(request, (s) => confirmPage(request, s, params.id)),
    )
    .post('/dashboard/webhooks/:id/delete', ({ request, params }) =>
      signedIn(request, (s) =>
        onEndpoint(request, s, params.id, async (w) => {
          await webhooks.delete(s.caller, { id: w.id }, byAccount(s.caller, clientIp(request)))
          return shell.seeOther('/dashboard/webhooks', { kind: 'ok', text: `The endpoint ${w.url} is deleted.` })
        }),
      ),
    )
    .post('/dashboard/webhooks/:id/test', ({ request, params }) =>
      signedIn(
        request,
        (s) =>
          onEndpoint(request, s, params.id, async ({ id }) => {
            const t = await webhooks.testOwned(s.caller, { id })
            const text = t.enabled
              ? `A test event (${t.webhook_id}) is on its way: it shows in the log below (Reload if it does not).`
              : `A test event (${t.webhook_id}) is queued, but this endpoint is disabled: it will not be sent.`
            return shell.seeOther(`/dashboard/webhooks/${id}`, { kind: 'ok', text })
          }),
        `/dashboard/webhooks/${params.id}`, // the endpoint's page, where these forms are
      ),
    )
    .post('/dashboard/webhooks/:id/redeliver', ({ request, params }) =>
      signedIn(
        request,
        (s) =>
          onEndpoint(request, s, params.id, async ({ id }, fields) => {
            const r = await webhooks.redeliver(s.caller, { id, event: fields.get('event') ?? '' })
            return shell.seeOther(`/dashboard/webhooks/${id}`, {
              kind: 'ok',
              text: `Event ${r.event_id} (${r.webhook_id}) will be sent again.`,
            })
          }),
        `/dashboard/webhooks/${params.id}`, // the endpoint's page, where these forms are
      ),
    )
}
