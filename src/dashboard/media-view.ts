// The Download page's markup (media.ts has the routes): the form, what download.json found (formats grouped,
// subtitles, a playlist's entries), the progress region assets/app-media.js fills, the account's recent downloads.
// Everything from the answer is escaped; links are kept only when they are this service's own signed /dl links.
import type { StartedDownload } from '../media'
import { escapeHtml as h, timeHtml } from '../web/render'
import { bytes } from './admin-figures'

/** A format as download.json answers it (the fields the page shows). */
export interface AnswerFormat {
  id: string
  ext: string
  kind: string
  width: number | null
  height: number | null
  fps?: number | null
  vcodec: string | null
  acodec: string | null
  filesize: number | null
  note: string
  url: string
}

/** download.json's answer: one video's (formats, subtitles) or, with playlist=1, a playlist's (entries). */
export interface Answer {
  title: string
  kind?: string
  duration?: number | null
  thumbnail?: string | null
  expires: string
  formats?: AnswerFormat[]
  subtitles?: { lang: string; name: string; ext: string; auto: boolean; url: string }[]
  entries?: { index: number; title: string; duration: number | null; formats: AnswerFormat[] }[]
  count?: number
  truncated?: boolean
}

export interface FormState {
  url: string
  playlist: boolean
  /** Why the address could not be read (names the field). */
  error?: string
}

/** 61.5 → "1:02"; 3725 → "1:02:05". */
export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return ''
  const s = Math.round(seconds)
  const two = (n: number) => String(n).padStart(2, '0')
  const [hh, mm, ss] = [Math.floor(s / 3600), Math.floor((s % 3600) / 60), s % 60]
  return hh > 0 ? `${hh}:${two(mm)}:${two(ss)}` : `${mm}:${two(ss)}`
}

/**
 * A link of this service's own (base URL + path) as a path of this origin, or null: the page never links
 * elsewhere from what an answer says, and works on whatever origin the browser reached it by.
 */
export function ownPath(url: string, base: string): string | null {
  if (!url.startsWith(`${base}/`)) return null
  const path = url.slice(base.length)
  return /^\/[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*$/.test(path) ? path : null
}

/** The dashboard's link that records a download and goes on to its /dl link (a signed ticket), or null. */
export function startPath(dlPath: string): string | null {
  const m = /^\/dl\/([1-9][0-9]{0,15})\?(exp=[0-9]{1,12}&sig=[A-Za-z0-9_-]{43})$/.exec(dlPath)
  return m ? `/dashboard/download/start/${m[1]}?${m[2]}` : null
}

const GROUPS: { id: string; title: string; kinds: string[] }[] = [
  { id: 'video', title: 'Video', kinds: ['video+audio', 'video'] },
  { id: 'audio', title: 'Audio', kinds: ['audio'] },
  { id: 'photo', title: 'Photo', kinds: ['photo'] },
]

function formatFacts(f: AnswerFormat): string {
  const facts = [f.ext]
  if (f.width && f.height) facts.push(`${f.width}×${f.height}`)
  if (f.kind === 'video') facts.push('no sound')
  const codecs = [f.vcodec, f.acodec].filter(Boolean).join(' + ')
  if (codecs) facts.push(codecs)
  if (f.filesize) facts.push(bytes(f.filesize))
  return facts.join(' · ')
}

/** One format: what it is, and a link that downloads it (with the script: after its progress, see app-media.js). */
function formatItem(f: AnswerFormat, title: string, base: string): string {
  const dl = ownPath(f.url, base)
  const start = dl && startPath(dl)
  const label = f.note || f.id
  const name = `${label}, ${formatFacts(f)}`
  const link = start
    ? `<a class="button secondary small" href="${h(start)}" data-dl-start data-dl-name="${h(`${title}: ${label} (${f.ext})`)}">Download<span class="visually-hidden"> ${h(name)}</span></a>`
    : '<span class="muted">no link</span>'
  return `<li><span class="dl-format"><strong>${h(label)}</strong> <span class="muted">${h(formatFacts(f))}</span></span>${link}</li>`
}

function formatGroups(formats: AnswerFormat[], title: string, base: string, level: 3 | 4): string {
  return GROUPS.map((g) => {
    // yt-dlp orders formats worst first: the best is shown first.
    const list = formats.filter((f) => g.kinds.includes(f.kind)).reverse()
    if (list.length === 0) return ''
    return `<h${level}>${g.title}</h${level}><ul class="dl-formats">${list.map((f) => formatItem(f, title, base)).join('')}</ul>`
  }).join('')
}

function subtitlesList(subs: NonNullable<Answer['subtitles']>, base: string): string {
  if (subs.length === 0) return ''
  const items = subs
    .map((s) => {
      const path = ownPath(s.url, base)
      const what = `${s.name || s.lang} (${s.lang}${s.auto ? ', automatic' : ''}) · ${s.ext}`
      return `<li><span class="dl-format">${h(what)}</span>${path ? `<a class="button secondary small" href="${h(path)}" download>Download<span class="visually-hidden"> subtitles ${h(what)}</span></a>` : ''}</li>`
    })
    .join('')
  return `<h3>Subtitles</h3><ul class="dl-formats">${items}</ul>`
}

function entriesList(a: Answer, base: string): string {
  const entries = a.entries ?? []
  const items = entries
    .map((e) => {
      const d = duration(e.duration)
      return `<li class="dl-entry"><details><summary><span class="dl-index">${e.index}.</span> ${h(e.title)}${d ? ` <span class="muted">(${d})</span>` : ''}</summary>${formatGroups(e.formats, e.title, base, 4)}</details></li>`
    })
    .join('')
  const more = a.truncated
    ? `<p class="muted">The playlist has more entries than the ${entries.length} shown (the server's limit).</p>`
    : ''
  return `<h3>Playlist: ${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}</h3><ol class="dl-entries">${items}</ol>${more}`
}

/** What the address gave: title, duration, and its formats (or a playlist's entries). */
export function resultHtml(a: Answer, base: string): string {
  const d = duration(a.duration)
  const facts = [a.kind, d && `${d} long`, `links valid until ${timeHtml(Date.parse(a.expires))}`].filter(Boolean)
  const body = a.entries
    ? entriesList(a, base)
    : formatGroups(a.formats ?? [], a.title, base, 3) + subtitlesList(a.subtitles ?? [], base)
  return `<section class="card dl-result" aria-labelledby="dl-title">
<h2 id="dl-title">${h(a.title)}</h2>
<p class="muted">${facts.join(' · ')}</p>
${body || '<p class="empty">No formats were found.</p>'}
</section>`
}

/** The form: GET, so a lookup is an address the browser can reload and go back to (it changes nothing). */
export function formHtml(state: FormState): string {
  const err = state.error
  return `<section class="card" aria-labelledby="dl-form-h">
<h2 id="dl-form-h">Find a video or audio</h2>
<form method="get" action="/dashboard/download" class="dl-form">
<div class="field">
<label for="dl-url">Address of the page</label>
<input id="dl-url" name="url" type="url" inputmode="url" value="${h(state.url)}" maxlength="2048" required autocomplete="off" spellcheck="false" autocapitalize="off" placeholder="https://" aria-describedby="${err ? 'dl-url-error ' : ''}dl-url-hint"${err ? ' aria-invalid="true"' : ''}>
${err ? `<span class="error" id="dl-url-error">${h(err)}</span>` : ''}
<span class="hint" id="dl-url-hint">A page with a video or audio (1000+ sites), or a media file.</span>
</div>
<label class="choice"><input type="checkbox" name="playlist" value="1"${state.playlist ? ' checked' : ''}> Whole playlist</label>
<div class="actions"><button type="submit">Look up</button></div>
</form>
</section>`
}

/** Where assets/app-media.js shows a download's preparation: the step, a bar, bytes and speed; announced sparingly. */
export const PROGRESS_HTML = `<section class="card dl-progress" id="dl-progress" tabindex="-1" aria-labelledby="dl-progress-h" hidden>
<h2 id="dl-progress-h">Your download</h2>
<p class="dl-progress-name" id="dl-progress-name"></p>
<progress id="dl-bar" max="100" aria-labelledby="dl-progress-h dl-progress-name"></progress>
<p id="dl-progress-text"></p>
<p class="visually-hidden" id="dl-live" role="status" aria-live="polite"></p>
<p class="error" id="dl-failed" role="alert"></p>
</section>`

/** The account's recent downloads, newest first: the link while it is valid, else "expired". */
export function recentHtml(list: StartedDownload[]): string {
  if (list.length === 0)
    return '<p class="empty">None yet. A format you download from this page is listed here, with its link while it works.</p>'
  const rows = list
    .map((d) => {
      const dot = d.filename.lastIndexOf('.')
      const [title, ext] = dot > 0 ? [d.filename.slice(0, dot), d.filename.slice(dot + 1)] : [d.filename, '']
      const link = d.link
        ? `<a href="${h(d.link)}">Download<span class="visually-hidden"> ${h(d.filename)}</span></a> <span class="muted">until ${timeHtml(d.linkExpires)}</span>`
        : `<span class="muted">Expired ${timeHtml(d.linkExpires)}: look the address up again</span>`
      return `<tr>
<td class="wide" data-label="Title">${h(title)}</td>
<td data-label="Format">${h(ext)}${d.formatId !== ext ? ` <span class="muted">${h(d.formatId)}</span>` : ''}</td>
<td data-label="Started">${timeHtml(d.started)}</td>
<td data-label="Link">${link}</td>
</tr>`
    })
    .join('')
  return `<div class="table-wrap"><table class="dl-recent stack">
<caption class="visually-hidden">Your recent downloads, newest first</caption>
<thead><tr><th scope="col">Title</th><th scope="col">Format</th><th scope="col">Started</th><th scope="col">Link</th></tr></thead>
<tbody>${rows}</tbody></table></div>`
}
