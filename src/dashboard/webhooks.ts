// The dashboard's Webhooks section: the account's endpoints with their delivery counts and the form that adds one
// (its secret shown once; the one-time token makes a form sent twice make one), through the webhook service.
import { Elysia } from 'elysia'
import { AppError } from '../kernel/errors'
import { escapeHtml as h, isoTimeHtml } from '../web/render'
import { DEFAULT_EVENTS, EVENT_TYPES } from '../kernel/outbox'
import { MAX_ENDPOINTS } from '../webhooks'
import { RepeatedForm } from './form-tokens'
import type { DashboardDeps } from './deps'
import { byAccount } from '../audit'
import type { Session } from './sessions'
import { withParam } from './page-helpers'
import {
  counts,
  endpointFields,
  eventList,
  forForm,
  type FormState,
  LIST,
  type NewEndpoint,
  status,
} from './webhooks-view'
import { createWebhookEndpointPages } from './webhooks-endpoint'
import { createWebhookDeliveryPages } from './webhooks-delivery'

export function createWebhooksSection(deps: DashboardDeps) {
  const { shell, webhooks, clientIp } = deps
  const { flash, tokens } = shell

  // ---------------------------------------------------------------------------------------------------
  // The list and the form

  /** The list and the form: with ?form=ID, the refused form as it was sent, with its error; else what was typed before the session ended. */
  async function listPage(request: Request, s: Session, draft: FormState = {}) {
    const form = (await shell.refusedState<FormState>(request, shell.ownerOf(s))) ?? draft
    const list = await webhooks.overview(s.caller)
    const full = list.length >= MAX_ENDPOINTS
    const formHtml = `<section class="card" aria-labelledby="new-webhook">
<h2 id="new-webhook">Add an endpoint</h2>
${full ? `<p class="muted">You have ${MAX_ENDPOINTS} endpoints, the most an account can have: delete one to add another.</p>` : ''}
<form method="post" action="/dashboard/webhooks" class="wh-form">
<input type="hidden" name="_csrf" value="${h(s.csrf)}">
${tokens.field()}
${endpointFields(form, form.events ?? DEFAULT_EVENTS)}
<div class="actions"><button type="submit">Add endpoint</button></div>
</form>
</section>`
    let listHtml: string
    if (list.length === 0) {
      listHtml =
        '<p class="empty">No endpoints yet. <a href="#new-webhook">Add one below</a> to be told when links change or mail arrives.</p>'
    } else {
      const rows = list
        .map(
          (w) => `<tr>
<td class="wh-url wide"><a href="/dashboard/webhooks/${w.id}">${h(w.url)}</a><div class="muted">Created ${isoTimeHtml(w.created, { never: '' })}</div></td>
<td class="wide" data-label="Events">${eventList(w.events)}</td>
<td data-label="Status">${status(w)}</td>
<td data-label="Deliveries">${counts(w)}</td>
<td class="wide"><a href="/dashboard/webhooks/${w.id}/edit" aria-label="Edit the endpoint ${h(w.url)}">Edit</a> · <a href="/dashboard/webhooks/${w.id}/delete" class="danger-link" aria-label="Delete the endpoint ${h(w.url)}">Delete</a></td>
</tr>`,
        )
        .join('')
      listHtml = `<div class="table-wrap"><table class="wh-list stack">
<caption class="visually-hidden">Your webhook endpoints</caption>
<thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Status</th><th scope="col">Deliveries (7 days)</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${rows}</tbody></table></div>`
    }
    return shell.render(request, s, {
      section: 'webhooks',
      title: 'Webhooks',
      content: `<h1>Webhooks</h1><section class="card" aria-labelledby="your-webhooks"><h2 id="your-webhooks">Your endpoints</h2>${listHtml}</section>${formHtml}`,
    })
  }

  async function create(request: Request, s: Session) {
    const fields = await shell.form(request, s)
    // Sent before (a double click, back and send again): no second endpoint; the first answer's page.
    const sent = tokens.of(fields)
    const before = await tokens.used(sent, s.id)
    if (before !== undefined) return shell.repeated(before ?? LIST)
    const url = (fields.get('url') ?? '').trim()
    const events = fields.getAll('events').filter((e) => (EVENT_TYPES as readonly string[]).includes(e))
    const again = (field: 'url' | 'events', text: string) =>
      shell.refused(shell.ownerOf(s), LIST, { url, events, error: { field, text } } satisfies FormState)
    if (!url) return again('url', 'Enter the URL events are sent to.')
    // The service reads an empty list as "the default events": on this form nothing ticked means nothing chosen.
    if (events.length === 0) return again('events', 'Choose at least one event.')
    // The page that shows the secret once: its id is chosen now, so that the token's row can name it.
    const shownId = flash.newId()
    let shown = LIST
    let made
    try {
      made = await webhooks.create(
        s.caller,
        { url, events: events.join(',') },
        {
          within: (endpoint, tx) => {
            shown = withParam(`${LIST}/${endpoint.id}`, 'created', shownId)
            return tokens.claim(tx, sent, s.id, shown)
          },
        },
        byAccount(s.caller, clientIp(request)),
      )
    } catch (err) {
      if (err instanceof RepeatedForm) return shell.repeated(err.result ?? LIST)
      if (err instanceof AppError && err.status < 500)
        return again(
          err.code === 'invalid_parameter' && err.message.includes('"events"') ? 'events' : 'url',
          forForm(err.message),
        )
      throw err
    }
    await flash.put(
      shell.ownerOf(s),
      `webhook secret ${made.id}`,
      { secret: made.secret } satisfies NewEndpoint,
      shownId,
    )
    return shell.seeOther(shown)
  }

  /** `page`: where a form comes back to after signing in, when that is not its own path. */
  const signedIn = async (request: Request, then: (s: Session) => Response | Promise<Response>, page?: string) => {
    const s = await shell.require(request, page)
    return s instanceof Response ? s : then(s)
  }

  /** Typed before the session ended (see shell.requireForm): the form shows it again. */
  const drafted = (request: Request): FormState => {
    const d = shell.draft(request)
    return d
      ? {
          url: d.get('url') ?? '',
          events: d.getAll('events').filter((e) => (EVENT_TYPES as readonly string[]).includes(e)),
        }
      : {}
  }

  return new Elysia({ name: 'dashboard-webhooks' })
    .get('/dashboard/webhooks', ({ request }) => signedIn(request, (s) => listPage(request, s, drafted(request))))
    .post('/dashboard/webhooks', async ({ request }) => {
      const s = await shell.requireForm(request, { keep: ['url', 'events'] })
      return s instanceof Response ? s : create(request, s)
    })
    .use(createWebhookEndpointPages(deps))
    .use(createWebhookDeliveryPages(deps))
}
