// The dashboard's Mailboxes section: the account's temporary addresses, the messages in each, and one
// message read in full. It calls the mail service with the session's caller, so the API's ownership rules
// hold here too; another account's mailbox or message is a 404 (never "it exists, but is not yours").
// A message's HTML is untrusted: it is only ever shown from its own route, inside <iframe sandbox> (no
// scripts, an opaque origin) and under a CSP that fetches nothing from anywhere (no tracking pixels).
import { Elysia } from 'elysia'
import { AppError } from '../errors'
import { escapeHtml as h } from '../pages/render'
import type { DashboardDeps } from './index'
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

/** A path of this site from one of the service's signed links (they name the configured base URL). */
function localPath(url: string): string {
  const u = new URL(url)
  return u.pathname + u.search
}

export function createMailSection({ shell, mail, config }: DashboardDeps) {
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
  function listPage(request: Request, s: Session, draft: FormState = {}) {
    // A refused form (?form=ID) as it was sent, or what was typed before the session ended (shell.requireForm).
    const form = shell.refusedState<FormState>(request, shell.ownerOf(s)) ?? draft
    const { mailboxes, total } = mail.mailboxesOf(s.caller, MAILBOXES_SHOWN)
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
      const box = mail.getOrCreate(s.caller, local ? `${local}@${domain}` : undefined, domain)
      return shell.seeOther(`/dashboard/mail/${box.address}`, { kind: 'ok', text: `${box.address} is ready until ${whenIso(box.expires)}.` })
    } catch (err) {
      if (err instanceof AppError && err.status < 500) return again(err.message)
      throw err
    }
  }

  // ---------------------------------------------------------------------------------------------------
  // One mailbox

  async function mailboxPage(request: Request, s: Session, address: string) {
    let box, list
    try {
      box = mail.mailbox(s.caller, address)
      list = await mail.listMessages(s.caller, { address: box.address, limit: MESSAGES_SHOWN })
    } catch (err) {
      if (missing(err)) return notFoundPage(request, s)
      throw err
    }
    const base = `/dashboard/mail/${h(list.address)}`
    const rows = list.messages
      .map((m) => {
        const subject = m.subject.trim() || '(no subject)'
        return `<tr class="${m.seen ? 'seen' : 'unread'}">
<td class="m-dot"><span class="dot" aria-hidden="true"></span><span class="visually-hidden">${m.seen ? 'Read' : 'Unread'}</span></td>
<td class="m-from">${person(m.from)}</td>
<td class="m-subject"><a href="${base}/${m.id}">${h(subject)}</a>${m.intro ? `<div class="muted intro">${h(m.intro.slice(0, 120))}</div>` : ''}</td>
<td class="m-when">${h(whenIso(m.received))}</td>
<td class="n m-size">${h(size(m.size))}</td>
<td class="n m-files">${m.attachments ? `${m.attachments}<span class="visually-hidden"> attachment${m.attachments === 1 ? '' : 's'}</span>` : ''}</td>
</tr>`
      })
      .join('')
    const table = list.messages.length
      ? `<div class="table-wrap"><table class="mail-messages">
<caption class="visually-hidden">Messages, newest first</caption>
<thead><tr><th scope="col"><span class="visually-hidden">Read or unread</span></th><th scope="col">From</th><th scope="col">Subject</th><th scope="col">Received</th><th scope="col" class="n">Size</th><th scope="col" class="n" title="Attachments">Files</th></tr></thead>
<tbody>${rows}</tbody></table></div>`
      : '<p class="empty">No mail yet. Messages sent to this address appear here: reload the page to look again.</p>'
    const content = `<p class="crumbs"><a href="/dashboard/mail">Mailboxes</a> /</p>
<h1 class="mail-title"><span id="mb-address">${h(list.address)}</span></h1>
<div class="actions mail-bar">
<button type="button" class="copy secondary" data-copy="mb-address" hidden>Copy address</button>
<a class="button secondary" href="${base}">Reload</a>
<span class="muted">${box.messages} message${box.messages === 1 ? '' : 's'} · expires ${h(whenIso(box.expires))}</span>
</div>
<section class="card" aria-labelledby="messages-h"><h2 id="messages-h">Messages</h2>${table}</section>`
    return shell.render(request, s, { section: 'mail', title: list.address, content })
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
    const subject = m.subject.trim() || '(no subject)'
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
    const html = m.html
      ? `<section class="card" aria-labelledby="html-h"><h2 id="html-h">As sent (HTML)</h2>
<p class="mail-note" id="html-note">Shown in a sandbox: scripts do not run, and remote content (images, fonts, styles from other sites) is blocked, so opening this message tells nobody you read it.</p>
<iframe class="mail-html" sandbox src="${base}/${m.id}/html" title="The message as sent: ${h(subject)}" aria-describedby="html-note"></iframe>
</section>`
      : ''
    const content = `<p class="crumbs"><a href="/dashboard/mail">Mailboxes</a> / <a href="${base}">${h(m.address)}</a> /</p>
<h1 class="mail-subject">${h(subject)}</h1>
<section class="card"><dl class="mail-meta">${meta}</dl>
<div class="actions"><a class="button secondary" href="${h(localPath(m.raw))}" download>Download .eml</a></div></section>
${html}
<section class="card" aria-labelledby="text-h"><h2 id="text-h">Text</h2>${
      m.text.trim() ? `<pre class="mail-text">${h(m.text)}</pre>` : '<p class="empty">This message has no text.</p>'
    }</section>
${links}${attachments}`
    return shell.render(request, s, { section: 'mail', title: subject, content })
  }

  async function htmlPart(request: Request, address: string, idText: string) {
    const s = shell.session(request)
    const m = s ? await read(s, address, idText) : null
    // No redirect to the sign-in page inside a frame: a plain 404 under the same strict headers.
    if (!m || m.html === null) return new Response('Not found', { status: 404, headers: { ...MAIL_HTML_HEADERS, 'content-type': 'text/plain; charset=utf-8' } })
    return new Response(m.html, { headers: MAIL_HTML_HEADERS })
  }

  const signedIn = (request: Request, then: (s: Session) => Response | Promise<Response>) => {
    const s = shell.require(request)
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
    .get('/dashboard/mail/:address/:id', ({ request, params }) => signedIn(request, (s) => messagePage(request, s, params.address, params.id)))
    .get('/dashboard/mail/:address/:id/html', ({ request, params }) => htmlPart(request, params.address, params.id))
}

function ttlText(seconds: number): string {
  if (seconds % 86400 === 0) return `${seconds / 86400} day${seconds === 86400 ? '' : 's'}`
  if (seconds % 3600 === 0) return `${seconds / 3600} hour${seconds === 3600 ? '' : 's'}`
  if (seconds % 60 === 0) return `${seconds / 60} minute${seconds === 60 ? '' : 's'}`
  return `${seconds} seconds`
}
