// The links list's bulk actions (issue 38): the selected links (or every link the filter finds, at most
// BULK_MAX) deleted after one confirmation, tagged, untagged, exported as CSV, or (an admin) disabled and
// enabled; each link through the same service call as its own page, so its webhook event and audit row are
// the same. Every form is Post/Redirect/Get.
import { Elysia } from 'elysia'
import { byAccount } from '../audit'
import { AppError } from '../kernel/errors'
import { csvExportResponse, type LinkRecord, MAX_TAGS } from '../links'
import { escapeHtml as e } from '../web/render'
import type { DashboardDeps } from './deps'
import { listHref, listParams, listQuery, type ListQuery, parseRef, REF, searchInput } from './links-view'
import type { Session } from './sessions'

/** The most links one bulk action changes (the filter's first BULK_MAX, newest first: run it again for more). */
export const BULK_MAX = 1000
const ACTIONS = ['delete', 'add-tag', 'remove-tag', 'export', 'disable', 'enable'] as const
type Action = (typeof ACTIONS)[number]
const ADMIN_ONLY: readonly Action[] = ['disable', 'enable']
/** Codes named in a confirmation before "and N more". */
const NAMED = 10

/** What a bulk form or its confirmation names: the codes picked on a page, or every link the list's filter finds. */
interface Selection {
  all: boolean
  codes: string[]
  list: ListQuery
}

function selectionOf(params: URLSearchParams, hosts: readonly string[]): Selection {
  const list = listQuery(new URL(`http://x/dashboard?${params}`), hosts)
  const codes = [...new Set(params.getAll('code').filter((c) => REF.test(c)))].slice(0, BULK_MAX)
  return { all: params.get('scope') === 'all', codes, list }
}

/** The selection as a query string (the confirmation's and the export's URL). */
function selectionQuery(sel: Selection): string {
  const p = listParams(sel.list)
  if (sel.all) p.set('scope', 'all')
  else for (const c of sel.codes) p.append('code', c)
  return p.toString()
}

/** The selection as hidden fields of a form. */
const selectionFields = (sel: Selection) =>
  [...new URLSearchParams(selectionQuery(sel))]
    .map(([k, v]) => `<input type="hidden" name="${e(k)}" value="${e(v)}">`)
    .join('')

const plural = (n: number, one: string) => `${n.toLocaleString('en-US')} ${n === 1 ? one : `${one}s`}`

/** The bulk bar above the list's table: the action, its tag, Apply; the rows' checkboxes belong to its form. */
export function bulkBar(s: Session, list: ListQuery, total: number, onPage: number): string {
  const option = (value: Action, text: string) => `<option value="${value}">${text}</option>`
  const admin = s.admin ? option('disable', 'Disable') + option('enable', 'Enable') : ''
  const filter = selectionFields({ all: false, codes: [], list })
  return `<form id="bulk-form" class="bulk-bar" method="post" action="/dashboard/links-bulk" aria-label="Bulk actions" data-total="${total}" data-on-page="${onPage}">
<input type="hidden" name="_csrf" value="${e(s.csrf)}">${filter}<input type="hidden" name="scope" value="page" id="bulk-scope">
<p class="bulk-count" id="bulk-count" aria-live="polite">Tick links below, then choose what to do with them.</p>
<div class="bulk-controls">
<label for="bulk-action">With the selected links</label>
<select id="bulk-action" name="action">${option('delete', 'Delete…')}${option('add-tag', 'Add a tag')}${option('remove-tag', 'Remove a tag')}${option('export', 'Export as CSV')}${admin}</select>
<label for="bulk-tag" class="bulk-tag-label">Tag <span class="muted">(to add or remove)</span></label>
<input type="text" id="bulk-tag" name="bulk_tag" maxlength="32" autocomplete="off" spellcheck="false" class="bulk-tag">
<button type="submit" class="secondary">Apply</button>
</div>
<p class="bulk-all" id="bulk-all" hidden><span id="bulk-all-text"></span> <button type="button" class="link" id="bulk-all-button"></button></p>
</form>`
}

export function createBulkActions(deps: DashboardDeps) {
  const { shell, links, abuse, clientIp } = deps

  /** The codes the selection names now: the filter's (at most BULK_MAX) or the ones picked. */
  async function codesOf(sel: Selection, s: Session): Promise<string[]> {
    if (!sel.all) return sel.codes
    return links.matchingCodes(searchInput(sel.list), s.caller, BULK_MAX)
  }

  /** "(the first 1,000 of 1,234 that match: run it again for the rest)" when the filter finds more than BULK_MAX. */
  async function beyond(sel: Selection, s: Session): Promise<string> {
    if (!sel.all) return ''
    const { total, capped } = await links.search(searchInput(sel.list), s.caller)
    return total > BULK_MAX
      ? ` (the first ${BULK_MAX.toLocaleString('en-US')} of ${total.toLocaleString('en-US')}${capped ? '+' : ''} that match: run it again for the rest)`
      : ''
  }

  /** Runs `one` on each code in turn; what it could not do is named with its reason. */
  async function each(codes: string[], one: (code: string) => Promise<unknown>) {
    let done = 0
    const failed: string[] = []
    for (const code of codes) {
      try {
        await one(code)
        done++
      } catch (err) {
        if (!(err instanceof AppError) || err.status >= 500) throw err
        const why =
          err.status === 404 ? 'gone' : err.code === 'not_owner' ? 'not yours' : `it would have over ${MAX_TAGS} tags`
        failed.push(`${code} (${why})`)
      }
    }
    const notDone = failed.length
      ? ` ${plural(failed.length, 'link')} could not be: ${failed.slice(0, NAMED).join(', ')}${failed.length > NAMED ? ', …' : ''}.`
      : ''
    return { done, notDone, failed: failed.length }
  }

  /** The selection as a CSV file: the export's columns, the links in the order picked. */
  async function exportSelection(request: Request, s: Session) {
    const sel = selectionOf(new URL(request.url).searchParams, links.domains.hosts)
    const codes = await codesOf(sel, s)
    let sent = false
    return csvExportResponse(
      async (): Promise<LinkRecord[]> => {
        if (sent) return []
        sent = true
        const out: LinkRecord[] = []
        for (const code of codes)
          out.push(
            ...(await links
              .get(parseRef(code) ?? { code }, s.caller)
              .then((r) => [r])
              .catch(() => [])),
          )
        return out
      },
      links.now(),
      {
        'content-disposition': `attachment; filename="links-selected-${new Date(links.now()).toISOString().slice(0, 10)}.csv"`,
      },
    )
  }

  function confirmPage(request: Request, s: Session, sel: Selection, codes: string[], more: string) {
    const n = codes.length
    const back = listHref(sel.list)
    const named = codes.slice(0, NAMED).map((c) => `<li><code>${e(c)}</code></li>`)
    if (n > NAMED) named.push(`<li>and ${plural(n - NAMED, 'more link')}</li>`)
    const heading = n === 1 ? 'Delete 1 link?' : `Delete ${n.toLocaleString('en-US')} links?`
    const content = `<div class="links-page"><p class="back"><a href="${e(back)}">← All links</a></p>
<h1>${heading}</h1>
<section class="card confirm">
${n === 0 ? '<p>No link is selected any more: nothing to delete.</p>' : `<ul class="bulk-codes">${named.join('')}</ul>`}
${more ? `<p>${e(more.trim().replace(/^\(the|\)$/g, (m) => (m === ')' ? '' : 'The')))}.</p>` : ''}
<p class="warn-text">Their statistics and QR codes are deleted with them, and their codes become free for anyone. This cannot be undone.</p>
<form method="post" action="/dashboard/links-bulk/delete" class="actions">
<input type="hidden" name="_csrf" value="${e(s.csrf)}">${selectionFields(sel)}
${n > 0 ? `<button type="submit" class="danger">Delete ${plural(n, 'link')}</button>` : ''}<a href="${e(back)}">Cancel</a>
</form>
</section></div>`
    return shell.render(request, s, { section: 'links', title: heading, content })
  }

  return new Elysia({ name: 'dashboard-links-bulk' })
    .post(
      '/dashboard/links-bulk',
      async ({ request }) => {
        const s = await shell.require(request, '/dashboard')
        if (s instanceof Response) return s
        const f = await shell.form(request, s)
        const sel = selectionOf(f, links.domains.hosts)
        const back = listHref(sel.list)
        const action = ACTIONS.find((a) => a === f.get('action'))
        if (!action || (ADMIN_ONLY.includes(action) && !s.admin))
          return shell.seeOther(back, { kind: 'error', text: 'Choose what to do with the selected links.' })
        if (!sel.all && sel.codes.length === 0)
          return shell.seeOther(back, { kind: 'error', text: 'No link was selected: tick the links first.' })
        if (action === 'delete') return shell.seeOther(`/dashboard/links-bulk/delete?${selectionQuery(sel)}`)
        if (action === 'export') return shell.seeOther(`/dashboard/links-selected.csv?${selectionQuery(sel)}`)
        const codes = await codesOf(sel, s)
        const more = await beyond(sel, s)
        if (action === 'disable' || action === 'enable') {
          const who = byAccount(s.caller, clientIp(request))
          const reason = action === 'disable' ? 'Disabled by the administrator from the links list.' : null
          const r = await each(codes, (ref) => {
            const named = parseRef(ref)
            return abuse.setLinkDisabled(named?.code ?? ref, reason, who, named?.domain ?? '')
          })
          const verb = action === 'disable' ? 'Disabled' : 'Enabled'
          return shell.seeOther(back, {
            kind: r.failed ? 'warn' : 'ok',
            text: `${verb} ${plural(r.done, 'link')}${more}.${r.notDone}`,
          })
        }
        const tag = (f.get('bulk_tag') ?? '').trim().toLowerCase()
        if (!/^[a-z0-9_-]{1,32}$/.test(tag))
          return shell.seeOther(back, {
            kind: 'error',
            text: 'Type the tag to add or remove: letters, digits, _ and -, at most 32.',
          })
        const add = action === 'add-tag'
        const r = await each(codes, (ref) => {
          const named = parseRef(ref) ?? { code: ref }
          return links.retag(add ? { ...named, add: tag } : { ...named, remove: tag }, s.caller)
        })
        return shell.seeOther(back, {
          kind: r.failed ? 'warn' : 'ok',
          text: `${add ? 'Tagged' : 'Removed the tag from'} ${plural(r.done, 'link')} ${add ? 'with' : ':'} “${tag}”${more}.${r.notDone}`,
        })
      },
      { parse: 'none' },
    )
    .get('/dashboard/links-bulk/delete', async ({ request }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      const sel = selectionOf(new URL(request.url).searchParams, links.domains.hosts)
      // Only the caller's own links are counted and named: another's code in the URL is left out.
      const codes = sel.all ? await codesOf(sel, s) : await ownCodes(sel.codes, s)
      return confirmPage(request, s, sel, codes, await beyond(sel, s))
    })
    .post(
      '/dashboard/links-bulk/delete',
      async ({ request }) => {
        const s = await shell.require(request, '/dashboard')
        if (s instanceof Response) return s
        const sel = selectionOf(await shell.form(request, s), links.domains.hosts)
        const more = await beyond(sel, s)
        const r = await each(await codesOf(sel, s), (ref) => links.delete(parseRef(ref) ?? { code: ref }, s.caller))
        return shell.seeOther(listHref({ ...sel.list, page: sel.all ? 1 : sel.list.page }), {
          kind: r.failed ? 'warn' : 'ok',
          text: `Deleted ${plural(r.done, 'link')}${more}.${r.notDone}`,
        })
      },
      { parse: 'none' },
    )
    .get('/dashboard/links-selected.csv', async ({ request }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      return exportSelection(request, s)
    })

  async function ownCodes(codes: string[], s: Session): Promise<string[]> {
    const own: string[] = []
    for (const code of codes)
      if (
        await links.get(parseRef(code) ?? { code }, s.caller).then(
          () => true,
          () => false,
        )
      )
        own.push(code)
    return own
  }
}
