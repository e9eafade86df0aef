// The dashboard's import page (/dashboard/import): a file and its format, a preview of its first rows checked as
// the import checks them, a confirmation, then the summary with the skipped rows as CSV. The uploaded file
// waits in the database (pending_imports: any node, bounded, expiring) under an unguessable id; a confirmation
// takes it once (pending → running in one statement), so a second one imports nothing.
import { createHash, randomBytes } from 'node:crypto'
import { Elysia } from 'elysia'
import { AppError } from '../kernel/errors'
import {
  csvField,
  csvLine,
  csvRecords,
  IMPORT_FORMATS,
  importLinks,
  MAX_IMPORT_BYTES,
  previewImport,
  recognisedFormat,
  type ImportFormat,
  type ImportResult,
} from '../links'
import { sameSecret } from '../web/api'
import { readBodyLimited } from '../web/params'
import type { DashboardDeps } from './deps'
import { type Outcome, previewCard, runningCard, summaryCard, type UploadState, uploadCard } from './import-view'
import type { Session } from './sessions'
import type { PendingImportRow } from './storage/contract'

/** Rows a preview shows. */
export const PREVIEW_ROWS = 20
/** Files an account may have waiting (a new one drops its oldest), and all of them together in bytes. */
export const IMPORTS_PER_ACCOUNT = 3
export const IMPORTS_MAX_BYTES = 256 * 1024 * 1024
/** How long a file waits for its confirmation, and a summary stays after its import. */
export const IMPORT_TTL_MS = 60 * 60_000
const ID = /^[A-Za-z0-9_-]{22}$/
const UPLOAD_SLACK = 64 * 1024

const hashId = (id: string) => createHash('sha256').update(`linkbox import\u0000${id}`).digest('base64url')
/** The file's name as shown: its last part, printable, at most 100 characters. */
const fileName = (name: string) =>
  [...(name.split(/[\\/]/).pop() ?? '').replace(/[\p{C}]/gu, '')].slice(0, 100).join('') || 'the file'

/** The upload's fields: a multipart body of at most the file and a form's worth more, from this site, with the session's token. */
async function uploadForm(request: Request, s: Session, crossSite: boolean, csrfRefused: () => AppError) {
  if (crossSite) throw csrfRefused()
  let form: FormData
  try {
    const bytes = await readBodyLimited(request, MAX_IMPORT_BYTES + UPLOAD_SLACK)
    form = await new Response(bytes as Uint8Array<ArrayBuffer>, {
      headers: { 'content-type': request.headers.get('content-type') ?? '' },
    }).formData()
  } catch (err) {
    if (err instanceof AppError && err.status === 413) return { tooLarge: true as const }
    throw csrfRefused()
  }
  const token = form.get('_csrf')
  if (typeof token !== 'string' || !sameSecret(token, s.csrf)) throw csrfRefused()
  return { form }
}

/** The skipped rows as CSV: the file's own columns (where it has them), then why each was skipped. */
function skippedCsv(row: PendingImportRow, result: ImportResult): string {
  const why = new Map(result.skipped.map((r) => [r.line, r]))
  const added = ['skipped_line', 'skipped_reason', 'skipped_message']
  const reasons = (line: number) => {
    const r = why.get(line)!
    return [csvField(line, true), csvField(r.reason), csvField(r.message)]
  }
  const format = row.format.split(' ')[0]
  if (format === 'kutt' && /^\s*[[{]/.test(row.body.replace(/^\uFEFF/, '')))
    return (
      csvLine(['code', ...added]) + result.skipped.map((r) => csvLine([csvField(r.code), ...reasons(r.line)])).join('')
    )
  let header: string[] | null = null
  let out = ''
  for (const rec of csvRecords(row.body)) {
    if (header === null) {
      // A YOURLS table without its header (no "url" column): its first row is a link, the columns the table's.
      const headless = format === 'yourls' && !rec.fields.some((f) => f.trim().toLowerCase() === 'url')
      header = headless ? ['keyword', 'url', 'title', 'timestamp', 'ip', 'clicks'] : rec.fields
      out += csvLine([...header.map((f) => csvField(f)), ...added])
      if (!headless) continue
    }
    if (!why.has(rec.line)) continue
    const cells = header.map((_, i) => csvField(rec.fields[i] ?? ''))
    out += csvLine([...cells, ...reasons(rec.line)])
  }
  return out
}

export function createImportPage(deps: DashboardDeps) {
  const { shell, links, clock } = deps
  const rows = deps.storages.pendingImports
  const maxRows = () => deps.config.links.import_max_rows
  const PAGE = '/dashboard/import'

  const page = (request: Request, s: Session, title: string, content: string, notice?: string) =>
    shell.render(request, s, {
      section: 'links',
      title,
      content: `<div class="links-page import-page"><p class="crumbs"><a href="/dashboard">Links</a> › Import</p><h1>Import links</h1>${content}</div>`,
      notice: notice ? { kind: 'error', text: notice } : undefined,
    })

  /** The account's waiting file of the id in the path, or null (unknown, expired, another account's). */
  async function pendingOf(s: Session, id: string) {
    return ID.test(id) ? rows.get(hashId(id), s.caller.accountId, clock()) : null
  }

  const refusedUpload = (s: Session, state: UploadState) => shell.refused(shell.ownerOf(s), PAGE, state)

  return new Elysia({ name: 'dashboard-import' })
    .get(PAGE, async ({ request }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      const state = (await shell.refusedState<UploadState>(request, shell.ownerOf(s))) ?? { format: 'auto', errors: {} }
      return page(request, s, 'Import links', uploadCard(s, state, MAX_IMPORT_BYTES))
    })
    .post(
      PAGE,
      async ({ request }) => {
        const s = await shell.require(request, PAGE)
        if (s instanceof Response) return s
        const sent = await uploadForm(request, s, shell.crossSite(request), shell.csrfRefused)
        const tooLarge = `The file is larger than ${MAX_IMPORT_BYTES / 1048576} MiB: split it into several files.`
        if ('tooLarge' in sent) return refusedUpload(s, { format: 'auto', errors: { file: tooLarge } })
        const asked = String(sent.form.get('format') ?? 'auto')
        const format = asked === 'auto' || IMPORT_FORMATS.includes(asked as ImportFormat) ? asked : 'auto'
        const file = sent.form.get('file')
        // The body may hold a form's worth more than the file: the file itself is held to the API's bound.
        if (file instanceof Blob && file.size > MAX_IMPORT_BYTES)
          return refusedUpload(s, { format, errors: { file: tooLarge } })
        if (!(file instanceof Blob) || file.size === 0)
          return refusedUpload(s, { format, errors: { file: 'Choose a file to import: this one is empty.' } })
        let text: string
        try {
          text = new TextDecoder('utf-8', { fatal: true }).decode(await file.arrayBuffer())
        } catch {
          return refusedUpload(s, { format, errors: { file: 'The file is not UTF-8 text: save it as UTF-8 CSV.' } })
        }
        let chosen: ImportFormat
        try {
          chosen = format === 'auto' ? recognisedFormat(text) : (format as ImportFormat)
          // The file as a whole, refused here as the import would refuse it (not its format, too many rows, empty).
          await previewImport(links, text, chosen, { maxRows: maxRows(), first: 0 })
        } catch (err) {
          if (!(err instanceof AppError) || err.status >= 500) throw err
          return refusedUpload(s, { format, errors: { file: err.message.replace('The parameter "file"', 'The file') } })
        }
        const id = randomBytes(16).toString('base64url')
        const now = clock()
        const stored = await rows.put(
          {
            id: hashId(id),
            account_id: s.caller.accountId,
            name: fileName((file as File).name ?? ''),
            format: `${chosen}${format === 'auto' ? ' auto' : ''}`,
            body: text,
            size: file.size,
            created: now,
            expires: now + IMPORT_TTL_MS,
          },
          { perAccount: IMPORTS_PER_ACCOUNT, bytes: IMPORTS_MAX_BYTES },
          now,
        )
        if (!stored)
          return refusedUpload(s, {
            format,
            errors: { file: 'The server holds too many files waiting to be imported: try again in a few minutes.' },
          })
        return shell.seeOther(`${PAGE}/${id}`)
      },
      { parse: 'none' },
    )
    .get(`${PAGE}/:id`, async ({ request, params }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      const row = await pendingOf(s, params.id)
      if (!row)
        return shell.seeOther(PAGE, {
          kind: 'warn',
          text: 'That import is no longer here (files wait an hour for their confirmation): choose the file again.',
        })
      if (row.state === 'running') return page(request, s, 'Import under way', runningCard(params.id))
      if (row.state === 'done') {
        const outcome = JSON.parse(row.result!) as Outcome
        return page(request, s, 'Import summary', summaryCard(params.id, row.name, outcome))
      }
      const [format, asked = format] = row.format.split(' ') as [ImportFormat, string?]
      try {
        const preview = await previewImport(links, row.body, format, { maxRows: maxRows(), first: PREVIEW_ROWS })
        const view = { id: params.id, name: row.name, format, asked, ...preview }
        return page(request, s, 'Import preview', previewCard(s, view))
      } catch (err) {
        if (!(err instanceof AppError) || err.status >= 500) throw err
        return page(request, s, 'Import preview', '', err.message.replace('The parameter "file"', 'The file'))
      }
    })
    .post(
      `${PAGE}/:id`,
      async ({ request, params }) => {
        const s = await shell.require(request, `${PAGE}/${params.id}`)
        if (s instanceof Response) return s
        await shell.form(request, s)
        const here = `${PAGE}/${ID.test(params.id) ? params.id : ''}`
        const row = await pendingOf(s, params.id)
        // Taken once, on any node: a second confirmation (a double click, back and send) finds it running or done.
        if (!row || !(await rows.start(row.id, s.caller.accountId, clock()))) {
          const now = row && (await rows.get(row.id, s.caller.accountId, clock()))
          const text =
            now?.state === 'running'
              ? 'This file is being imported already (it was confirmed once): reload in a moment for its summary.'
              : 'This file was imported already: here is what happened.'
          return shell.seeOther(here, { kind: 'ok', text })
        }
        const [format] = row.format.split(' ') as [ImportFormat]
        let outcome: Outcome
        try {
          outcome = await importLinks(links, s.caller, row.body, format, { maxRows: maxRows() })
        } catch (err) {
          if (err instanceof AppError && err.status === 429) {
            await rows.settle(row.id, s.caller.accountId, null, row.expires)
            return shell.seeOther(here, { kind: 'error', text: err.message })
          }
          if (!(err instanceof AppError)) {
            // The database may be failing: the summary says so if it can be written, and the error goes on.
            const error = 'The import stopped on a server error. The links made before it stay.'
            await rows
              .settle(row.id, s.caller.accountId, JSON.stringify({ error }), clock() + IMPORT_TTL_MS)
              .catch(() => {})
            throw err
          }
          outcome = { error: err.message }
        }
        await rows.settle(row.id, s.caller.accountId, JSON.stringify(outcome), clock() + IMPORT_TTL_MS)
        const text =
          'error' in outcome
            ? 'The import stopped before the end.'
            : `Imported: ${outcome.created} created, ${outcome.skipped_total} skipped.`
        return shell.seeOther(here, { kind: 'error' in outcome ? 'error' : 'ok', text })
      },
      { parse: 'none' },
    )
    .get(`${PAGE}/:id/skipped.csv`, async ({ request, params }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      const row = await pendingOf(s, params.id)
      if (row?.state !== 'done') return shell.seeOther(row ? `${PAGE}/${params.id}` : PAGE)
      const outcome = JSON.parse(row.result!) as Outcome
      const body = 'error' in outcome ? '' : skippedCsv(row, outcome)
      return new Response(body, {
        headers: {
          'content-type': 'text/csv; charset=utf-8',
          'content-disposition': 'attachment; filename="skipped-rows.csv"',
          'cache-control': 'no-store',
          'x-content-type-options': 'nosniff',
        },
      })
    })
}
