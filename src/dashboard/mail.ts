// The dashboard's Mailboxes section: the account's temporary addresses and the messages in each, through the mail
// service with the session's caller (another account's mailbox is a 404); deleting and "mark unread" are forms.
import { Elysia } from 'elysia'
import { AppError } from '../kernel/errors'
import { escapeHtml as h, isoTimeHtml } from '../web/render'
import type { DashboardDeps } from './deps'
import type { Session } from './sessions'
import {
  LOCAL_PART,
  MAILBOXES_SHOWN,
  mailboxTitle,
  messageRow,
  MESSAGES_SHOWN,
  messagesText,
  missing,
  notFoundPage,
  ttlText,
  whenIso,
} from './mail-view'
import { createMailEvents } from './mail-events'
import { createMessagePages } from './mail-message'

export function createMailSection(deps: DashboardDeps) {
  const { shell, mail, config } = deps
  const domains = config.mail.domains
  const events = createMailEvents(deps)
  const { messagePage, htmlPart } = createMessagePages(deps)

  // ---------------------------------------------------------------------------------------------------
  // The list and the form

  interface FormState {
    local?: string
    domain?: string
    error?: string
  }

  /** The list and the form; with ?form=ID, the refused form as it was sent, with its error. */
  async function listPage(request: Request, s: Session, draft: FormState = {}) {
    // A refused form (?form=ID) as it was sent, or what was typed before the session ended (shell.requireForm).
    const form = (await shell.refusedState<FormState>(request, shell.ownerOf(s))) ?? draft
    const { mailboxes, total } = await mail.mailboxesOf(s.caller, MAILBOXES_SHOWN)
    const err = form.error
    const options = domains
      .map((d) => `<option value="${h(d)}"${d === (form.domain ?? domains[0]) ? ' selected' : ''}>@${h(d)}</option>`)
      .join('')
    const formHtml = `<section class="card" aria-labelledby="new-mailbox">
<h2 id="new-mailbox">Get an address</h2>
<form method="post" action="/dashboard/mail" class="form-grid mail-new">
<input type="hidden" name="_csrf" value="${h(s.csrf)}">
<div class="field">
<label for="mail-local">Name <span class="muted">(optional)</span></label>
<input id="mail-local" name="local" value="${h(form.local ?? '')}" maxlength="64" autocomplete="off" spellcheck="false" autocapitalize="off" aria-describedby="${err ? 'mail-local-error ' : ''}mail-local-hint"${err ? ' aria-invalid="true"' : ''}>
${err ? `<span class="error" id="mail-local-error">${h(err)}</span>` : ''}
</div>
<div class="field">
<label for="mail-domain">Domain</label>
<select id="mail-domain" name="domain">${options}</select>
</div>
<div class="actions"><button type="submit">Get address</button></div>
</form>
<p class="hint muted" id="mail-local-hint">Leave the name empty for a random one; a name is letters, digits, ".", "_" and "-". An address you already have is renewed. Each one and its mail are deleted ${h(ttlText(config.mail.mailbox_ttl))} after it was last used.</p>
</section>`
    let listHtml: string
    if (mailboxes.length === 0) {
      listHtml = '<p class="empty">No mailboxes yet. Get an address above, then send mail to it.</p>'
    } else {
      const rows = mailboxes
        .map((m, i) => {
          const href = `/dashboard/mail/${h(m.address)}`
          return `<tr>
<td class="wide"><div class="mail-addr"><a href="${href}" id="mb-${i}">${h(m.address)}</a><button type="button" class="copy secondary small" data-copy="mb-${i}" aria-label="Copy ${h(m.address)}" hidden>Copy</button></div></td>
<td data-label="Created">${isoTimeHtml(m.created, { never: '' })}</td>
<td data-label="Expires">${isoTimeHtml(m.expires, { never: '' })}</td>
<td class="n" data-label="Messages">${m.messages}</td>
<td class="n" data-label="Unread">${m.unread ? `<span class="badge count">${m.unread}</span>` : '0'}</td>
</tr>`
        })
        .join('')
      const more =
        total > mailboxes.length ? `<p class="muted">Showing the newest ${mailboxes.length} of ${total}.</p>` : ''
      listHtml = `<div class="table-wrap"><table class="mail-boxes stack">
<caption class="visually-hidden">Your mailboxes, newest first</caption>
<thead><tr><th scope="col">Address</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col" class="n">Messages</th><th scope="col" class="n">Unread</th></tr></thead>
<tbody>${rows}</tbody></table></div>${more}`
    }
    return shell.render(request, s, {
      section: 'mail',
      title: 'Mailboxes',
      content: `<h1>Mailboxes</h1>${formHtml}<section class="card" aria-labelledby="your-mailboxes"><h2 id="your-mailboxes">Your addresses</h2>${listHtml}</section>`,
    })
  }

  async function create(request: Request, s: Session) {
    const fields = await shell.form(request, s)
    const local = (fields.get('local') ?? '').trim().toLowerCase()
    const domain = fields.get('domain') ?? domains[0]!
    const again = (error: string) =>
      shell.refused(shell.ownerOf(s), '/dashboard/mail', {
        local: (fields.get('local') ?? '').slice(0, 200),
        domain: domain.slice(0, 300),
        error,
      } satisfies FormState)
    if (!domains.includes(domain)) return again(`Choose one of the domains listed.`)
    if (local && !LOCAL_PART.test(local))
      return again('The name must be 1 to 64 characters: letters, digits, ".", "_" and "-".')
    try {
      const box = await mail.getOrCreate(s.caller, local ? `${local}@${domain}` : undefined, domain)
      return shell.seeOther(`/dashboard/mail/${box.address}`, {
        kind: 'ok',
        text: `${box.address} is ready until ${whenIso(box.expires)}.`,
      })
    } catch (err) {
      if (err instanceof AppError && err.status < 500) return again(err.message)
      throw err
    }
  }

  // ---------------------------------------------------------------------------------------------------
  // One mailbox

  async function mailboxPage(request: Request, s: Session, address: string) {
    let box, list, unread
    try {
      box = await mail.mailbox(s.caller, address)
      list = await mail.listMessages(s.caller, { address: box.address, limit: MESSAGES_SHOWN })
      unread = await mail.unread(s.caller, box.address)
    } catch (err) {
      if (missing(err)) return notFoundPage(shell, request, s)
      throw err
    }
    const base = `/dashboard/mail/${h(list.address)}`
    const rows = list.messages.map((m) => messageRow(list.address, m)).join('')
    const empty = list.messages.length === 0
    // The table is there even when empty (hidden): the live view fills it when the first message arrives.
    const table = `<form method="post" action="${base}/delete-messages" id="mail-select"${empty ? ' hidden' : ''}>
<input type="hidden" name="_csrf" value="${h(s.csrf)}">
<div class="table-wrap"><table class="mail-messages">
<caption class="visually-hidden">Messages, newest first</caption>
<thead><tr><th scope="col"><span class="visually-hidden">Select</span></th><th scope="col"><span class="visually-hidden">Read or unread</span></th><th scope="col">From</th><th scope="col">Subject</th><th scope="col">Received</th><th scope="col" class="n">Size</th><th scope="col" class="n" title="Attachments">Files</th></tr></thead>
<tbody id="mail-rows">${rows}</tbody></table></div>
<div class="actions mail-select-bar"><label class="mail-pick-all" hidden><input type="checkbox" id="mail-pick-all"> Select all</label><button type="submit" class="secondary danger-outline">Delete selected</button></div>
</form>
<p class="empty" id="mail-empty"${empty ? '' : ' hidden'}>No mail yet. Messages sent to this address appear here as they arrive (without a script: reload the page to look again).</p>`
    const latest = list.messages[0]?.id ?? 0
    const content = `<p class="crumbs"><a href="/dashboard/mail">Mailboxes</a> /</p>
<h1 class="mail-title"><span id="mb-address">${h(list.address)}</span></h1>
<div class="actions mail-bar">
<button type="button" class="copy secondary" data-copy="mb-address" hidden>Copy address</button>
<a class="button secondary" href="${base}">Reload</a>
<a class="button secondary danger-outline" href="${base}/delete">Delete mailbox…</a>
<span class="muted"><span id="mb-count">${messagesText(box.messages)}</span> · expires ${isoTimeHtml(box.expires, { never: '' })}</span>
</div>
<section class="card" aria-labelledby="messages-h" id="mail-live" data-events="${base}/events" data-after="${latest}" data-title="${h(list.address)}">
<h2 id="messages-h">Messages</h2>
<p class="visually-hidden" id="mail-live-status" role="status" aria-live="polite"></p>
${table}</section>`
    return shell.render(request, s, { section: 'mail', title: mailboxTitle(list.address, unread), content })
  }

  /** The confirmation page before a mailbox is deleted (a form: it works without a script). */
  async function confirmDeletePage(request: Request, s: Session, address: string) {
    let box
    try {
      box = await mail.mailbox(s.caller, address)
    } catch (err) {
      if (missing(err)) return notFoundPage(shell, request, s)
      throw err
    }
    const base = `/dashboard/mail/${h(box.address)}`
    const content = `<p class="crumbs"><a href="/dashboard/mail">Mailboxes</a> / <a href="${base}">${h(box.address)}</a> /</p>
<h1>Delete this mailbox?</h1>
<section class="card">
<p class="mail-addr"><strong>${h(box.address)}</strong></p>
<p>Its ${h(messagesText(box.messages))} and their attachments are deleted now, and mail sent to the address is refused. The address is free again: anyone may take it. This cannot be undone.</p>
<form method="post" action="${base}/delete" class="actions">
<input type="hidden" name="_csrf" value="${h(s.csrf)}">
<button type="submit" class="danger">Delete mailbox</button>
<a class="button secondary" href="${base}">Cancel</a>
</form>
</section>`
    return shell.render(request, s, { section: 'mail', title: 'Delete mailbox', content })
  }

  /** Mailbox gone (deleted, expired) or another account's: the same answer, back to the list. */
  const noMailbox = (address: string) =>
    shell.seeOther('/dashboard/mail', {
      kind: 'error',
      text: `There is no mailbox ${address.slice(0, 200)} in your account: it was deleted or has expired.`,
    })

  /** A form on one mailbox: the form's checks, then `act`; a mailbox that is not the caller's → back to the list. */
  async function onMailbox(
    request: Request,
    s: Session,
    address: string,
    act: (fields: URLSearchParams) => Promise<Response> | Response,
  ) {
    const fields = await shell.form(request, s)
    try {
      return await act(fields)
    } catch (err) {
      if (missing(err)) return noMailbox(address)
      throw err
    }
  }

  async function deleteMailbox(s: Session, address: string) {
    const box = await mail.mailbox(s.caller, address)
    await mail.deleteMailbox(s.caller, { address: box.address })
    return shell.seeOther('/dashboard/mail', {
      kind: 'ok',
      text: `${box.address} is deleted, with its ${messagesText(box.messages)}.`,
    })
  }

  async function deleteSelected(s: Session, address: string, fields: URLSearchParams) {
    const box = await mail.mailbox(s.caller, address)
    const base = `/dashboard/mail/${box.address}`
    const ids = fields
      .getAll('id')
      .filter((v) => /^[1-9][0-9]{0,14}$/.test(v))
      .map(Number)
    if (ids.length === 0) return shell.seeOther(base, { kind: 'error', text: 'Select the messages to delete first.' })
    const gone = await mail.deleteMessages(s.caller, { address: box.address, ids })
    const text = gone.length === 0 ? 'Those messages were deleted already.' : `${messagesText(gone.length)} deleted.`
    return shell.seeOther(base, { kind: 'ok', text })
  }

  /** Delete or mark unread one message; back to its mailbox (its own page would mark it read again). */
  async function onMessage(s: Session, address: string, idText: string, action: 'delete' | 'unseen') {
    const box = await mail.mailbox(s.caller, address)
    const base = `/dashboard/mail/${box.address}`
    const id = /^[1-9][0-9]{0,14}$/.test(idText) ? Number(idText) : 0
    if (action === 'delete') {
      const gone = id ? await mail.deleteMessages(s.caller, { address: box.address, ids: [id] }) : []
      return shell.seeOther(
        base,
        gone.length
          ? { kind: 'ok', text: 'The message is deleted.' }
          : { kind: 'ok', text: 'That message was deleted already.' },
      )
    }
    try {
      await mail.setSeen(s.caller, { address: box.address, id, seen: false })
    } catch (err) {
      if (err instanceof AppError && err.status === 404)
        return shell.seeOther(base, { kind: 'error', text: 'That message is no longer there.' })
      throw err
    }
    return shell.seeOther(base, { kind: 'ok', text: 'The message is marked unread.' })
  }

  const signedIn = async (request: Request, then: (s: Session) => Response | Promise<Response>, page?: string) => {
    const s = await shell.require(request, page)
    return s instanceof Response ? s : then(s)
  }

  return new Elysia({ name: 'dashboard-mail' })
    .get('/dashboard/mail', ({ request }) =>
      signedIn(request, (s) => {
        // Typed before the session ended (see shell.requireForm): the form shows it again.
        const d = shell.draft(request)
        return listPage(request, s, d ? { local: d.get('local') ?? '', domain: d.get('domain') ?? undefined } : {})
      }),
    )
    .post('/dashboard/mail', async ({ request }) => {
      const s = await shell.requireForm(request, { keep: ['local', 'domain'] })
      return s instanceof Response ? s : create(request, s)
    })
    .get('/dashboard/mail/:address', ({ request, params }) =>
      signedIn(request, (s) => mailboxPage(request, s, params.address)),
    )
    .get('/dashboard/mail/:address/events', ({ request, params }) => events(request, params.address))
    .get('/dashboard/mail/:address/delete', ({ request, params }) =>
      signedIn(request, (s) => confirmDeletePage(request, s, params.address)),
    )
    .post('/dashboard/mail/:address/delete', ({ request, params }) =>
      signedIn(
        request,
        (s) => onMailbox(request, s, params.address, () => deleteMailbox(s, params.address)),
        `/dashboard/mail/${params.address}/delete`,
      ),
    )
    .post('/dashboard/mail/:address/delete-messages', ({ request, params }) =>
      signedIn(
        request,
        (s) => onMailbox(request, s, params.address, (fields) => deleteSelected(s, params.address, fields)),
        `/dashboard/mail/${params.address}`,
      ),
    )
    .get('/dashboard/mail/:address/:id', ({ request, params }) =>
      signedIn(request, (s) => messagePage(request, s, params.address, params.id)),
    )
    .post('/dashboard/mail/:address/:id/delete', ({ request, params }) =>
      signedIn(
        request,
        (s) => onMailbox(request, s, params.address, () => onMessage(s, params.address, params.id, 'delete')),
        `/dashboard/mail/${params.address}/${params.id}`,
      ),
    )
    .post('/dashboard/mail/:address/:id/unseen', ({ request, params }) =>
      signedIn(
        request,
        (s) => onMailbox(request, s, params.address, () => onMessage(s, params.address, params.id, 'unseen')),
        `/dashboard/mail/${params.address}/${params.id}`,
      ),
    )
    .get('/dashboard/mail/:address/:id/html', ({ request, params }) => htmlPart(request, params.address, params.id))
}
