// The dashboard's Mailboxes section: the account's temporary addresses, the messages in each, and one
// message read in full. It calls the mail service with the session's caller, so the API's ownership rules
// hold here too; another account's mailbox or message is a 404 (never "it exists, but is not yours").
// A message's HTML is untrusted: it is only ever shown from its own route, inside <iframe sandbox> (no
// scripts, an opaque origin) and under a CSP that fetches nothing from anywhere (no tracking pixels).
// Deleting (a message, a selection, the whole mailbox after a confirmation page) and "mark unread" are
// forms answered with a redirect. An open mailbox page hears of new mail over Server-Sent Events
// (/dashboard/mail/<address>/events): the rows it inserts are the markup messageRow() renders for the page.
import { Elysia } from 'elysia'
import { AppError } from '../kernel/errors'
import { escapeHtml as h } from '../web/render'
import type { DashboardDeps } from './deps'
import { when } from './shell'
import type { Session } from './sessions'

/** Mailboxes listed on the section's page (newest first); the page says when there are more. */
export const MAILBOXES_SHOWN = 200
/** Messages listed on a mailbox's page (newest first); a mailbox holds mail.max_messages at most anyway. */
export const MESSAGES_SHOWN = 200

/**
 * The headers of a message's HTML: nothing it names is fetched (no remote images, fonts or styles: no
 * tracking), no script runs (CSP sandbox, besides the iframe's own), and only our pages may frame it.
 */
export const MAIL_HTML_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; frame-ancestors 'self'; sandbox",
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
}

const LOCAL_PART = /^[a-z0-9._-]{1,64}$/
/** The most of a message's source the page shows (the rest is in the .eml download). */
export const SOURCE_SHOWN = 256 * 1024
/** The headers view reads at most this much of the source. */
const HEADERS_READ = 64 * 1024
/** A comment on an open event stream this often keeps proxies and the browser from taking it for dead. */
export const KEEPALIVE_MS = 15_000
/** What a message page shows: ?view=text|html|headers|source (the tabs are links: they work without a script). */
const VIEWS = ['text', 'html', 'headers', 'source'] as const
type View = (typeof VIEWS)[number]
const VIEW_LABELS: Record<View, string> = { text: 'Text', html: 'HTML', headers: 'Headers', source: 'Raw source' }

/** "2026-11-23 14:05 UTC" from an ISO time the service answered with ("" for none). */
const whenIso = (iso: string | null) => (iso ? when(Date.parse(iso)) : '')

export function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

const person = (p: { address: string; name: string }) =>
  p.name && p.address ? `${h(p.name)} <span class="muted">&lt;${h(p.address)}&gt;</span>` : h(p.name || p.address || '(unknown)')

/** Not found, or another account's: the same answer, so a guess learns nothing. */
const missing = (err: unknown) =>
  err instanceof AppError && (err.status === 404 || err.code === 'not_owner' || err.code === 'invalid_parameter')

type Summary = Awaited<ReturnType<DashboardDeps['mail']['listMessages']>>['messages'][number]

/**
 * One row of a mailbox's list, escaped throughout: the page renders it, and the event stream sends the
 * same markup for a message that arrives while the page is open. Its checkbox belongs to the selection
 * form (#mail-select).
 */
export function messageRow(address: string, m: Summary): string {
  const base = `/dashboard/mail/${h(address)}`
  const subject = m.subject.trim() || '(no subject)'
  return `<tr class="${m.seen ? 'seen' : 'unread'}">
<td class="m-pick"><input type="checkbox" name="id" value="${m.id}" form="mail-select" aria-label="Select: ${h(subject)}"></td>
<td class="m-dot"><span class="dot" aria-hidden="true"></span><span class="visually-hidden">${m.seen ? 'Read' : 'Unread'}</span></td>
<td class="m-from">${person(m.from)}</td>
<td class="m-subject"><a href="${base}/${m.id}">${h(subject)}</a>${m.intro ? `<div class="muted intro">${h(m.intro.slice(0, 120))}</div>` : ''}</td>
<td class="m-when">${h(whenIso(m.received))}</td>
<td class="n m-size">${h(size(m.size))}</td>
<td class="n m-files">${m.attachments ? `${m.attachments}<span class="visually-hidden"> attachment${m.attachments === 1 ? '' : 's'}</span>` : ''}</td>
</tr>`
}

const messagesText = (n: number) => `${n} message${n === 1 ? '' : 's'}`
/** The page's title: the address, after the unread count when there is one ("(2) box@example.com"). */
const mailboxTitle = (address: string, unread: number) => (unread > 0 ? `(${unread}) ${address}` : address)

/**
 * The header block of a message's source, unfolded: one [name, value] per field, in order (bytes that are
 * not UTF-8 shown as U+FFFD). Null when the source has no header block.
 */
export function headerFields(source: Uint8Array): [string, string][] {
  const text = new TextDecoder().decode(source)
  const end = text.search(/\r?\n\r?\n/)
  const block = end < 0 ? text : text.slice(0, end)
  const out: [string, string][] = []
  for (const line of block.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && out.length) out[out.length - 1]![1] += ` ${line.trim()}`
    else {
      const colon = line.indexOf(':')
      if (colon > 0) out.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()])
    }
  }
  return out
}

/** A path of this site from one of the service's signed links (they name the configured base URL). */
function localPath(url: string): string {
  const u = new URL(url)
  return u.pathname + u.search
}

export function createMailSection({ shell, mail, config, server }: DashboardDeps) {
  const domains = config.mail.domains

  const notFoundPage = (request: Request, s: Session) =>
    shell.render(request, s, {
      section: 'mail',
      title: 'Not found',
      status: 404,
      content: `<h1>Not found</h1><div class="card"><p>There is no such mailbox or message in your account. Mailboxes are deleted with their mail when they expire.</p>
<p><a href="/dashboard/mail">Back to your mailboxes</a></p></div>`,
    })

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
<td data-label="Created">${h(whenIso(m.created))}</td>
<td data-label="Expires">${h(whenIso(m.expires))}</td>
<td class="n" data-label="Messages">${m.messages}</td>
<td class="n" data-label="Unread">${m.unread ? `<span class="badge count">${m.unread}</span>` : '0'}</td>
</tr>`
        })
        .join('')
      const more = total > mailboxes.length ? `<p class="muted">Showing the newest ${mailboxes.length} of ${total}.</p>` : ''
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
      shell.refused(shell.ownerOf(s), '/dashboard/mail', { local: (fields.get('local') ?? '').slice(0, 200), domain: domain.slice(0, 300), error } satisfies FormState)
    if (!domains.includes(domain)) return again(`Choose one of the domains listed.`)
    if (local && !LOCAL_PART.test(local)) return again('The name must be 1 to 64 characters: letters, digits, ".", "_" and "-".')
    try {
      const box = await mail.getOrCreate(s.caller, local ? `${local}@${domain}` : undefined, domain)
      return shell.seeOther(`/dashboard/mail/${box.address}`, { kind: 'ok', text: `${box.address} is ready until ${whenIso(box.expires)}.` })
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
      if (missing(err)) return notFoundPage(request, s)
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
<span class="muted"><span id="mb-count">${messagesText(box.messages)}</span> · expires ${h(whenIso(box.expires))}</span>
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
      if (missing(err)) return notFoundPage(request, s)
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
    shell.seeOther('/dashboard/mail', { kind: 'error', text: `There is no mailbox ${address.slice(0, 200)} in your account: it was deleted or has expired.` })

  /** A form on one mailbox: the form's checks, then `act`; a mailbox that is not the caller's → back to the list. */
  async function onMailbox(request: Request, s: Session, address: string, act: (fields: URLSearchParams) => Promise<Response> | Response) {
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
    return shell.seeOther('/dashboard/mail', { kind: 'ok', text: `${box.address} is deleted, with its ${messagesText(box.messages)}.` })
  }

  async function deleteSelected(s: Session, address: string, fields: URLSearchParams) {
    const box = await mail.mailbox(s.caller, address)
    const base = `/dashboard/mail/${box.address}`
    const ids = fields.getAll('id').filter((v) => /^[1-9][0-9]{0,14}$/.test(v)).map(Number)
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
      return shell.seeOther(base, gone.length ? { kind: 'ok', text: 'The message is deleted.' } : { kind: 'ok', text: 'That message was deleted already.' })
    }
    try {
      await mail.setSeen(s.caller, { address: box.address, id, seen: false })
    } catch (err) {
      if (err instanceof AppError && err.status === 404) return shell.seeOther(base, { kind: 'error', text: 'That message is no longer there.' })
      throw err
    }
    return shell.seeOther(base, { kind: 'ok', text: 'The message is marked unread.' })
  }

  // ---------------------------------------------------------------------------------------------------
  // The live view: an event stream of the rows of new messages

  /**
   * GET /dashboard/mail/<address>/events: text/event-stream for the signed-in owner. On connecting (and
   * on reconnecting, from Last-Event-ID) it sends the messages newer than the page's newest, then each new
   * one as it is stored: `event: mail` with `{messages: [{id, html}], unread, count}` (html: messageRow's
   * markup). `event: gone` when the mailbox is deleted or expires; the stream ends then, when the session
   * ends, and when the server stops (the browser connects again by itself). Bounded by mail.watch.
   */
  async function events(request: Request, address: string): Promise<Response> {
    const plain = (status: number, text: string, headers: Record<string, string> = {}) =>
      new Response(text, { status, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers } })
    const s = await shell.session(request)
    if (!s) return plain(401, 'Sign in first.')
    const given = request.headers.get('last-event-id') ?? new URL(request.url).searchParams.get('after') ?? '0'
    let after = /^[0-9]{1,15}$/.test(given) ? Number(given) : 0
    const encoder = new TextEncoder()
    let controller: ReadableStreamDefaultController<Uint8Array> | null = null
    let closed = false
    let keepAlive: ReturnType<typeof setInterval> | undefined
    let queue = Promise.resolve()
    let watching: Awaited<ReturnType<typeof mail.watch>> | null = null

    const write = (text: string) => {
      if (closed || !controller) return
      try {
        controller.enqueue(encoder.encode(text))
      } catch {
        finish()
      }
    }
    const finish = () => {
      if (closed) return
      closed = true
      clearInterval(keepAlive)
      watching?.stop()
      request.signal.removeEventListener('abort', finish)
      try {
        controller?.close()
      } catch {}
    }
    const gone = () => {
      write('event: gone\ndata: {}\n\n')
      finish()
    }
    /** The messages newer than the last one sent (read again each time: nothing is missed or sent twice). */
    const sendNew = async () => {
      if (closed) return
      if (!(await shell.session(request))) return finish() // signed out meanwhile
      try {
        const list = await mail.listMessages(s.caller, { address, after, limit: MESSAGES_SHOWN })
        if (list.messages.length === 0) return
        after = list.messages[0]!.id
        const data = {
          messages: list.messages.map((m) => ({ id: m.id, html: messageRow(list.address, m) })),
          unread: await mail.unread(s.caller, list.address),
          count: (await mail.mailbox(s.caller, list.address)).messages,
        }
        write(`id: ${after}\nevent: mail\ndata: ${JSON.stringify(data)}\n\n`)
      } catch (err) {
        if (missing(err)) return gone()
        throw err
      }
    }
    const next = () => {
      queue = queue.then(sendNew).catch(() => finish())
    }
    try {
      watching = await mail.watch(s.caller, address, (e) => (e === 'mail' ? next() : e === 'gone' ? gone() : finish()))
    } catch (err) {
      if (missing(err)) return plain(404, 'Not found')
      if (err instanceof AppError && err.status === 503) return plain(503, err.message, err.headers)
      throw err
    }
    // Held open past the server's idle timeout (Bun's idle timer does not count what is written): the
    // keep-alive comments are for proxies and the browser, and a peer that is gone shows itself when one
    // cannot be written. The streams are bounded (mail.watch), so a dead one holds a slot, not the server.
    try {
      server?.()?.timeout(request, 0)
    } catch {} // a request that did not come through the listening server (tests' app.handle)
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        controller = c
        if (closed) return void c.close() // the request went away while its mailbox was being looked up
        write(': linkbox mail\nretry: 3000\n\n')
        next() // what arrived between the page and this stream
        keepAlive = setInterval(async () => {
          if (!(await shell.session(request).catch(() => null))) return finish()
          write(': keep-alive\n\n')
        }, KEEPALIVE_MS)
      },
      cancel: finish,
    })
    request.signal.addEventListener('abort', finish, { once: true })
    if (request.signal.aborted) finish()
    return new Response(stream, {
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        // No proxy buffering (nginx): each event is sent as it is written.
        'x-accel-buffering': 'no',
      },
    })
  }

  // ---------------------------------------------------------------------------------------------------
  // One message

  async function read(s: Session, address: string, idText: string) {
    if (!/^[1-9][0-9]{0,14}$/.test(idText)) return null
    try {
      return await mail.readMessage(s.caller, { address, id: Number(idText) })
    } catch (err) {
      if (missing(err)) return null
      throw err
    }
  }

  async function messagePage(request: Request, s: Session, address: string, idText: string) {
    const m = await read(s, address, idText)
    if (!m) return notFoundPage(request, s)
    const base = `/dashboard/mail/${h(m.address)}`
    const here = `${base}/${m.id}`
    const subject = m.subject.trim() || '(no subject)'
    const asked = new URL(request.url).searchParams.get('view')
    const views = VIEWS.filter((v) => v !== 'html' || m.html !== null)
    // The HTML as sent when there is one (what its sender meant people to see), else the text.
    const view: View = views.find((v) => v === asked) ?? (m.html !== null ? 'html' : 'text')
    const people = (list: { address: string; name: string }[]) => list.map(person).join(', ')
    const meta = [
      ['From', person(m.from)],
      ['To', people(m.to) || h(m.address)],
      ...(m.cc.length ? [['Cc', people(m.cc)]] : []),
      ['Date', h(whenIso(m.date) || '(none given)')],
      ['Received', h(whenIso(m.received))],
      ['Size', h(size(m.size))],
    ]
      .map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`)
      .join('')
    const attachments = m.attachments.length
      ? `<section class="card" aria-labelledby="att-h"><h2 id="att-h">Attachments</h2><ul class="mail-files">${m.attachments
          .map(
            (a) =>
              `<li><a href="${h(localPath(a.url))}" download>${h(a.filename)}</a> <span class="muted">${h(a.content_type)} · ${h(size(a.size))}</span></li>`,
          )
          .join('')}</ul><p class="hint muted">Download links work for an hour after this page was shown.</p></section>`
      : ''
    const links = m.links.length
      ? `<section class="card" aria-labelledby="links-h"><h2 id="links-h">Links in this message</h2><ul class="mail-links">${m.links
          .map((l) => `<li><a href="${h(l)}" rel="noopener noreferrer nofollow" target="_blank">${h(l)}</a></li>`)
          .join('')}</ul></section>`
      : ''
    // The views are links (?view=…): each is a page of its own, so reload, back and a bookmark show it again.
    const tabs = `<nav class="mail-tabs" aria-label="Show the message as"><ul>${views
      .map((v) => `<li><a href="${here}?view=${v}"${v === view ? ' aria-current="page"' : ''}>${VIEW_LABELS[v]}</a></li>`)
      .join('')}</ul></nav>`
    let panel: string
    if (view === 'html') {
      panel = `<p class="mail-note" id="html-note">Shown in a sandbox: scripts do not run, and remote content (images, fonts, styles from other sites) is blocked, so opening this message tells nobody you read it.</p>
<iframe class="mail-html" sandbox src="${here}/html" title="The message as sent: ${h(subject)}" aria-describedby="html-note"></iframe>`
    } else if (view === 'text') {
      panel = m.text.trim() ? `<pre class="mail-text">${h(m.text)}</pre>` : '<p class="empty">This message has no text.</p>'
    } else {
      const source = await mail.source(s.caller, { address: m.address, id: m.id }, view === 'headers' ? HEADERS_READ : SOURCE_SHOWN)
      if (view === 'headers') {
        const fields = headerFields(source.bytes)
        panel = fields.length
          ? `<div class="table-wrap"><table class="mail-headers"><caption class="visually-hidden">Header fields as received, in order</caption>
<thead><tr><th scope="col">Field</th><th scope="col">Value</th></tr></thead><tbody>${fields
              .map(([k, v]) => `<tr><th scope="row">${h(k)}</th><td>${h(v)}</td></tr>`)
              .join('')}</tbody></table></div>`
          : '<p class="empty">This message has no header fields.</p>'
      } else {
        const cut = source.truncated
          ? `<p class="hint muted">The first ${h(size(SOURCE_SHOWN))} of ${h(size(source.size))}: download the .eml for all of it.</p>`
          : ''
        panel = `${cut}<pre class="mail-text mail-source" tabindex="0" aria-label="Raw source">${h(new TextDecoder().decode(source.bytes))}</pre>`
      }
    }
    const content = `<p class="crumbs"><a href="/dashboard/mail">Mailboxes</a> / <a href="${base}">${h(m.address)}</a> /</p>
<h1 class="mail-subject">${h(subject)}</h1>
<section class="card"><dl class="mail-meta">${meta}</dl>
<div class="actions mail-actions">
<a class="button secondary" href="${h(localPath(m.raw))}" download>Download .eml</a>
<form method="post" action="${here}/unseen"><input type="hidden" name="_csrf" value="${h(s.csrf)}"><button type="submit" class="secondary">Mark unread</button></form>
<form method="post" action="${here}/delete"><input type="hidden" name="_csrf" value="${h(s.csrf)}"><button type="submit" class="secondary danger-outline">Delete</button></form>
</div></section>
<section class="card mail-view" aria-labelledby="view-h"><h2 id="view-h" class="visually-hidden">${VIEW_LABELS[view]}</h2>
${tabs}
<div class="mail-panel">${panel}</div>
</section>
${links}${attachments}`
    return shell.render(request, s, { section: 'mail', title: subject, content })
  }

  async function htmlPart(request: Request, address: string, idText: string) {
    const s = await shell.session(request)
    const m = s ? await read(s, address, idText) : null
    // No redirect to the sign-in page inside a frame: a plain 404 under the same strict headers.
    if (!m || m.html === null) return new Response('Not found', { status: 404, headers: { ...MAIL_HTML_HEADERS, 'content-type': 'text/plain; charset=utf-8' } })
    return new Response(m.html, { headers: MAIL_HTML_HEADERS })
  }

  /** `page`: where a form comes back to after signing in, when that is not its own path. */
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
    .get('/dashboard/mail/:address', ({ request, params }) => signedIn(request, (s) => mailboxPage(request, s, params.address)))
    .get('/dashboard/mail/:address/events', ({ request, params }) => events(request, params.address))
    .get('/dashboard/mail/:address/delete', ({ request, params }) => signedIn(request, (s) => confirmDeletePage(request, s, params.address)))
    .post('/dashboard/mail/:address/delete', ({ request, params }) =>
      signedIn(request, (s) => onMailbox(request, s, params.address, () => deleteMailbox(s, params.address)), `/dashboard/mail/${params.address}/delete`),
    )
    .post('/dashboard/mail/:address/delete-messages', ({ request, params }) =>
      signedIn(request, (s) => onMailbox(request, s, params.address, (fields) => deleteSelected(s, params.address, fields)), `/dashboard/mail/${params.address}`),
    )
    .get('/dashboard/mail/:address/:id', ({ request, params }) => signedIn(request, (s) => messagePage(request, s, params.address, params.id)))
    .post('/dashboard/mail/:address/:id/delete', ({ request, params }) =>
      signedIn(request, (s) => onMailbox(request, s, params.address, () => onMessage(s, params.address, params.id, 'delete')), `/dashboard/mail/${params.address}/${params.id}`),
    )
    .post('/dashboard/mail/:address/:id/unseen', ({ request, params }) =>
      signedIn(request, (s) => onMailbox(request, s, params.address, () => onMessage(s, params.address, params.id, 'unseen')), `/dashboard/mail/${params.address}/${params.id}`),
    )
    .get('/dashboard/mail/:address/:id/html', ({ request, params }) => htmlPart(request, params.address, params.id))
}

function ttlText(seconds: number): string {
  if (seconds % 86400 === 0) return `${seconds / 86400} day${seconds === 86400 ? '' : 's'}`
  if (seconds % 3600 === 0) return `${seconds / 3600} hour${seconds === 3600 ? '' : 's'}`
  if (seconds % 60 === 0) return `${seconds / 60} minute${seconds === 60 ? '' : 's'}`
  return `${seconds} seconds`
}
