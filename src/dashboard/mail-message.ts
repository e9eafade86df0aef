// The Mailboxes section's one message: read in full (text, sandboxed HTML, headers, source) and its HTML part.
import type { DashboardDeps } from './deps'
import { escapeHtml as h, isoTimeHtml } from '../web/render'
import type { Session } from './sessions'
import {
  headerFields,
  HEADERS_READ,
  localPath,
  MAIL_HTML_HEADERS,
  missing,
  notFoundPage,
  person,
  size,
  SOURCE_SHOWN,
  type View,
  VIEW_LABELS,
  VIEWS,
} from './mail-view'

export function createMessagePages({ shell, mail }: DashboardDeps) {
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
    if (!m) return notFoundPage(shell, request, s)
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
      ['Date', isoTimeHtml(m.date, { never: '(none given)' })],
      ['Received', isoTimeHtml(m.received, { never: '' })],
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
      .map(
        (v) => `<li><a href="${here}?view=${v}"${v === view ? ' aria-current="page"' : ''}>${VIEW_LABELS[v]}</a></li>`,
      )
      .join('')}</ul></nav>`
    let panel: string
    if (view === 'html') {
      panel = `<p class="mail-note" id="html-note">Shown in a sandbox: scripts do not run, and remote content (images, fonts, styles from other sites) is blocked, so opening this message tells nobody you read it.</p>
<iframe class="mail-html" sandbox src="${here}/html" title="The message as sent: ${h(subject)}" aria-describedby="html-note"></iframe>`
    } else if (view === 'text') {
      panel = m.text.trim()
        ? `<pre class="mail-text">${h(m.text)}</pre>`
        : '<p class="empty">This message has no text.</p>'
    } else {
      const source = await mail.source(
        s.caller,
        { address: m.address, id: m.id },
        view === 'headers' ? HEADERS_READ : SOURCE_SHOWN,
      )
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
    if (!m || m.html === null)
      return new Response('Not found', {
        status: 404,
        headers: { ...MAIL_HTML_HEADERS, 'content-type': 'text/plain; charset=utf-8' },
      })
    return new Response(m.html, { headers: MAIL_HTML_HEADERS })
  }
  return { messagePage, htmlPart }
}
