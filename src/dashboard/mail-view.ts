// The Mailboxes section's views and limits: message rows (the page's and the live view's), sizes, headers.
import { AppError } from '../kernel/errors'
import { escapeHtml as h, isoTimeHtml } from '../web/render'
import type { DashboardDeps } from './deps'
import { when } from './page-helpers'
import type { Session } from './sessions'
import type { Shell } from './shell'

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
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; frame-ancestors 'self'; sandbox",
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
}

export const LOCAL_PART = /^[a-z0-9._-]{1,64}$/
/** The most of a message's source the page shows (the rest is in the .eml download). */
export const SOURCE_SHOWN = 256 * 1024
/** The headers view reads at most this much of the source. */
export const HEADERS_READ = 64 * 1024
/** A comment on an open event stream this often keeps proxies and the browser from taking it for dead. */
export const KEEPALIVE_MS = 15_000
/** What a message page shows: ?view=text|html|headers|source (the tabs are links: they work without a script). */
export const VIEWS = ['text', 'html', 'headers', 'source'] as const
export type View = (typeof VIEWS)[number]
export const VIEW_LABELS: Record<View, string> = {
  text: 'Text',
  html: 'HTML',
  headers: 'Headers',
  source: 'Raw source',
}

/** "2026-11-23 14:05 UTC" from an ISO time the service answered with ("" for none). */
export const whenIso = (iso: string | null) => (iso ? when(Date.parse(iso)) : '')

export function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

export const person = (p: { address: string; name: string }) =>
  p.name && p.address
    ? `${h(p.name)} <span class="muted">&lt;${h(p.address)}&gt;</span>`
    : h(p.name || p.address || '(unknown)')

/** Not found, or another account's: the same answer, so a guess learns nothing. */
export const missing = (err: unknown) =>
  err instanceof AppError && (err.status === 404 || err.code === 'not_owner' || err.code === 'invalid_parameter')

export type Summary = Awaited<ReturnType<DashboardDeps['mail']['listMessages']>>['messages'][number]

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
<td class="m-when">${isoTimeHtml(m.received, { never: '' })}</td>
<td class="n m-size">${h(size(m.size))}</td>
<td class="n m-files">${m.attachments ? `${m.attachments}<span class="visually-hidden"> attachment${m.attachments === 1 ? '' : 's'}</span>` : ''}</td>
</tr>`
}

export const messagesText = (n: number) => `${n} message${n === 1 ? '' : 's'}`
/** The page's title: the address, after the unread count when there is one ("(2) box@example.com"). */
export const mailboxTitle = (address: string, unread: number) => (unread > 0 ? `(${unread}) ${address}` : address)

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
export function localPath(url: string): string {
  const u = new URL(url)
  return u.pathname + u.search
}

export function ttlText(seconds: number): string {
  if (seconds % 86400 === 0) return `${seconds / 86400} day${seconds === 86400 ? '' : 's'}`
  if (seconds % 3600 === 0) return `${seconds / 3600} hour${seconds === 3600 ? '' : 's'}`
  if (seconds % 60 === 0) return `${seconds / 60} minute${seconds === 60 ? '' : 's'}`
  return `${seconds} seconds`
}

/** A mailbox or message that is not there, or another account's: the same page. */
export const notFoundPage = (shell: Shell, request: Request, s: Session) =>
  shell.render(request, s, {
    section: 'mail',
    title: 'Not found',
    status: 404,
    content: `<h1>Not found</h1><div class="card"><p>There is no such mailbox or message in your account. Mailboxes are deleted with their mail when they expire.</p>
<p><a href="/dashboard/mail">Back to your mailboxes</a></p></div>`,
  })
