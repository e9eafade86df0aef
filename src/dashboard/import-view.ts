// The import page's markup (no I/O): the upload form, the preview of a file's first rows with what each will
// become, and the summary after the import. Routes and storage: import.ts.
import type { ImportResult, PreviewRow } from '../links'
import { escapeHtml as e } from '../web/render'
import { shortDestination } from './links-view'
import type { Session } from './sessions'

/** The formats as the form offers them; "auto" lets the header row decide (links' detectFormat). */
export const FORMAT_CHOICES: [string, string][] = [
  ['auto', 'Recognise from the header row'],
  ['csv', 'linkbox CSV (its own export)'],
  ['shlink', 'Shlink (web client export)'],
  ['kutt', 'Kutt (GET /api/v2/links, JSON)'],
  ['yourls', 'YOURLS (yourls_url table as CSV)'],
  ['bitly', 'Bitly (links export)'],
]
export const formatName = (format: string) =>
  ({ csv: 'linkbox CSV', shlink: 'Shlink', kutt: 'Kutt', yourls: 'YOURLS', bitly: 'Bitly' })[format] ?? format

/** What the upload form shows again after a refusal: the chosen format and the file's error. */
export interface UploadState {
  format: string
  errors: { file?: string; format?: string }
}

const PASSWORD_NOTE =
  'Passwords are never exported (only whether a link had one), so a link that had a password is created without one: set it again on the link’s page.'

export function uploadCard(s: Session, state: UploadState, maxBytes: number): string {
  const fileErr = state.errors.file
  const options = FORMAT_CHOICES.map(
    ([value, label]) => `<option value="${value}"${value === state.format ? ' selected' : ''}>${e(label)}</option>`,
  ).join('')
  return `<section class="card" aria-labelledby="upload-heading">
<h2 id="upload-heading">Choose a file</h2>
<p class="muted">Nothing is created yet: the next page shows what the first rows will become, and you confirm there.</p>
<form method="post" action="/dashboard/import" enctype="multipart/form-data" class="stack import-form">
<input type="hidden" name="_csrf" value="${e(s.csrf)}">
<div class="field"><label for="import-file">File</label>
<input id="import-file" name="file" type="file" accept=".csv,.json,.txt,text/csv,application/json,text/plain" required aria-describedby="import-file-hint${fileErr ? ' import-file-error' : ''}"${fileErr ? ' aria-invalid="true"' : ''}>
<span class="hint" id="import-file-hint">CSV (or Kutt’s JSON), UTF-8, at most ${maxBytes / 1048576} MiB.</span>${fileErr ? `<span class="error" id="import-file-error">${e(fileErr)}</span>` : ''}</div>
<div class="field"><label for="import-format">Format</label>
<select id="import-format" name="format" aria-describedby="import-format-hint">${options}</select>
<span class="hint" id="import-format-hint">Which tool the file comes from. Recognised: linkbox, Shlink, Kutt, YOURLS and Bitly exports.</span></div>
<div class="actions"><button type="submit">Show a preview</button> <a href="/dashboard">Cancel</a></div>
</form>
<p class="muted import-note">Codes already taken are skipped, never overwritten. ${PASSWORD_NOTE}</p>
</section>`
}

const FIELDS: Record<string, string> = {
  url: 'The destination',
  alias: 'The code',
  tags: 'The tags',
  title: 'The title',
  mode: 'The mode',
  max_visits: 'The visit limit',
  rules: 'The rules',
  split: 'The split',
}
/** The link service's message in the page's words: "The parameter "url"" is the destination. */
export const plain = (message: string) =>
  message.replace(/^The parameter "(\w+)([^"]*)"/, (all, name: string, path: string) =>
    FIELDS[name] ? `${FIELDS[name]}${path ? ` (${name}${path})` : ''}` : all,
  )

function outcome(r: PreviewRow): string {
  if (r.skip)
    return `<span class="tag off">Skipped</span> <span class="skip-why">${e(plain(r.skip.message))}</span> <code class="muted">${e(r.skip.reason)}</code>`
  const pw = r.hadPassword ? ' <span class="skip-why">— without its password</span>' : ''
  return `<span class="tag ok">Will be created</span>${pw}`
}

function previewRow(r: PreviewRow): string {
  const code = r.code ? `<code>${e(r.code)}</code>` : '<span class="muted">a new random code</span>'
  const extra = [r.title ? e(r.title) : '', r.tags ? `<span class="muted">tags: ${e(r.tags)}</span>` : '']
    .filter(Boolean)
    .join('<br>')
  return `<tr${r.skip ? ' class="skipped"' : ''}>
<td data-label="Line" class="n">${r.line}</td>
<td data-label="Code">${code}</td>
<td data-label="Destination" class="wide import-dest" title="${e(r.long_url)}">${r.long_url ? e(shortDestination(r.long_url)) : '<span class="muted">none</span>'}</td>
<td data-label="Title and tags" class="wide">${extra || '<span class="muted">—</span>'}</td>
<td data-label="What happens" class="wide">${outcome(r)}</td>
</tr>`
}

export interface PreviewView {
  id: string
  name: string
  format: string
  /** "auto" when the format was recognised from the header row. */
  asked: string
  total: number
  rows: PreviewRow[]
}

export function previewCard(s: Session, v: PreviewView): string {
  const made = v.rows.filter((r) => !r.skip).length
  const skipped = v.rows.length - made
  const shown =
    v.rows.length < v.total
      ? `The first ${v.rows.length} of ${v.total} rows`
      : v.total === 1
        ? 'Its one row'
        : `All ${v.total} rows`
  const recognised = v.asked === 'auto' ? ' (recognised from its header row)' : ''
  const passwords = v.rows.some((r) => r.hadPassword) ? `<p class="notice warn">${PASSWORD_NOTE}</p>` : ''
  return `<section class="card" aria-labelledby="preview-heading">
<h2 id="preview-heading">Preview of ${e(v.name)}</h2>
<p>Format: <strong>${e(formatName(v.format))}</strong>${recognised}. ${v.total} ${v.total === 1 ? 'row' : 'rows'} in the file.</p>
<p class="import-counts">${shown}: <strong>${made}</strong> will be created, <strong>${skipped}</strong> skipped.${v.rows.length < v.total ? ' The other rows are checked the same way when you import.' : ''}</p>
${passwords}<div class="table-wrap">
<table class="stack import-preview">
<caption class="visually-hidden">${shown} of the file, and what the import will do with each</caption>
<thead><tr><th scope="col" class="n">Line</th><th scope="col">Code</th><th scope="col">Destination</th><th scope="col">Title and tags</th><th scope="col">What happens</th></tr></thead>
<tbody>
${v.rows.map(previewRow).join('\n')}
</tbody>
</table>
</div>
<form method="post" action="/dashboard/import/${e(v.id)}" class="actions import-confirm">
<input type="hidden" name="_csrf" value="${e(s.csrf)}">
<button type="submit">Import ${v.total} ${v.total === 1 ? 'row' : 'rows'}</button> <a href="/dashboard/import">Choose another file</a>
</form>
</section>`
}

export function runningCard(id: string): string {
  return `<section class="card" aria-labelledby="running-heading">
<h2 id="running-heading">The import is under way</h2>
<p>This file is being imported. <a href="/dashboard/import/${e(id)}">Reload</a> in a moment to see the summary. If it stays like this for minutes, the import was interrupted: the links made so far stay, and you can <a href="/dashboard/import">upload the file again</a> (what exists is skipped).</p>
</section>`
}

/** The summary's view of a done import: its result, or why it stopped. */
export type Outcome = ImportResult | { error: string }

export function summaryCard(id: string, name: string, o: Outcome): string {
  if ('error' in o)
    return `<section class="card" aria-labelledby="summary-heading">
<h2 id="summary-heading">The import of ${e(name)} stopped</h2>
<p class="notice error">${e(o.error)}</p>
<p>The links made before it stopped stay. <a href="/dashboard/import">Upload the file again</a> to go on: what exists now is skipped.</p>
</section>`
  const listed = o.skipped.slice(0, 100)
  const rows = listed
    .map(
      (r) =>
        `<tr><td data-label="Line" class="n">${r.line}</td><td data-label="Code">${r.code ? `<code>${e(r.code)}</code>` : '<span class="muted">none</span>'}</td><td data-label="Why" class="wide">${e(plain(r.message))} <code class="muted">${e(r.reason)}</code></td></tr>`,
    )
    .join('\n')
  const skippedPart =
    o.skipped_total === 0
      ? '<p>No row was skipped.</p>'
      : `<p><a class="button secondary small" href="/dashboard/import/${e(id)}/skipped.csv" download>Download the skipped rows (CSV)</a> <span class="muted">The file’s own columns, with the reason added: fix them and import that file again.</span></p>
<div class="table-wrap"><table class="stack import-skipped">
<caption class="visually-hidden">Skipped rows${o.skipped_total > listed.length ? `: the first ${listed.length} of ${o.skipped_total}` : ''}</caption>
<thead><tr><th scope="col" class="n">Line</th><th scope="col">Code</th><th scope="col">Why</th></tr></thead>
<tbody>
${rows}
</tbody></table></div>${o.skipped_total > listed.length ? `<p class="muted">${o.skipped_total - listed.length} more skipped rows are in the download${o.skipped_total > o.skipped.length ? ` (the first ${o.skipped.length})` : ''}.</p>` : ''}`
  const pw = o.without_password
    ? `<p class="notice warn">${o.without_password} ${o.without_password === 1 ? 'link was' : 'links were'} protected by a password in the file. ${PASSWORD_NOTE}</p>`
    : ''
  return `<section class="card" aria-labelledby="summary-heading">
<h2 id="summary-heading">Imported ${e(name)}</h2>
<p class="import-counts"><strong>${o.created}</strong> ${o.created === 1 ? 'link' : 'links'} created, <strong>${o.skipped_total}</strong> ${o.skipped_total === 1 ? 'row' : 'rows'} skipped.</p>
${pw}${skippedPart}
<p><a href="/dashboard">Go to your links</a> · <a href="/dashboard/import">Import another file</a></p>
</section>`
}
