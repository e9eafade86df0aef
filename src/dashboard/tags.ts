// The dashboard's tags page (/dashboard/tags, issue 38): each tag of the account with its links and clicks;
// rename (onto a tag in use: merge), delete (off its links; the links stay) after a confirmation, and a filter
// of the list by several ticked tags. Every form is Post/Redirect/Get.
import { Elysia } from 'elysia'
import { AppError } from '../kernel/errors'
import { MAX_FILTER_TAGS, type TagSummary, TAGS_LISTED } from '../links'
import { escapeHtml as e } from '../web/render'
import type { DashboardDeps } from './deps'
import { listHref, TAG } from './links-view'
import type { Session } from './sessions'

const PAGE = '/dashboard/tags'
const RULE = 'A tag holds letters, digits, _ and - (at most 32), without spaces.'

/** A rename refused: which tag's form, what was typed, and why (shown at that field). */
interface RenameRefused {
  tag: string
  to: string
  error: string
}

const plural = (n: number, one: string) => `${n.toLocaleString('en-US')} ${n === 1 ? one : `${one}s`}`
const idOf = (tag: string) => `rename-${tag}`

function tagRow(s: Session, t: TagSummary, refused: RenameRefused | null): string {
  const id = idOf(t.tag)
  const bad = refused?.tag === t.tag ? refused : null
  const error = bad ? `<span class="error" id="${id}-error">${e(bad.error)}</span>` : ''
  return `<tr>
<td class="pick" data-label="Filter"><input type="checkbox" name="tag" value="${e(t.tag)}" form="tag-filter" aria-label="Filter by ${e(t.tag)}"></td>
<td data-label="Tag"><a class="tag-chip" href="${e(listHref({ tags: [t.tag] }))}"><span class="visually-hidden">Links tagged </span>${e(t.tag)}</a></td>
<td class="n" data-label="Links"><span>${t.links}</span></td>
<td class="n" data-label="Clicks"><span>${t.clicks}</span></td>
<td data-label="Rename or merge"><form method="post" action="${PAGE}/rename" class="tag-rename">
<input type="hidden" name="_csrf" value="${e(s.csrf)}"><input type="hidden" name="tag" value="${e(t.tag)}">
<label for="${id}" class="visually-hidden">New name for ${e(t.tag)}</label>
<input type="text" id="${id}" name="to" maxlength="64" autocomplete="off" spellcheck="false" placeholder="new name" value="${e(bad?.to ?? '')}"${bad ? ` aria-invalid="true" aria-describedby="${id}-error"` : ''}>
<button type="submit" class="secondary small">Rename<span class="visually-hidden"> ${e(t.tag)}</span></button>${error}
</form></td>
<td data-label="Delete"><a class="danger-link" href="${PAGE}/delete?tag=${encodeURIComponent(t.tag)}">Delete<span class="visually-hidden"> the tag ${e(t.tag)}</span>…</a></td>
</tr>`
}

function tagsContent(s: Session, tags: TagSummary[], refused: RenameRefused | null): string {
  if (tags.length === 0)
    return `<section class="card"><div class="empty"><p><strong>No tags yet.</strong></p><p>Give links tags in the create or edit form (“news, spring-sale”), or add one to many links at once with the checkboxes of <a href="/dashboard">your links</a>.</p></div></section>`
  return `<section class="card" aria-labelledby="tags-heading">
<h2 id="tags-heading">Your tags <span class="count">${tags.length}</span></h2>
<p class="muted">Renaming a tag onto one you already use merges the two. Deleting a tag takes it off its links; the links stay.${tags.length >= TAGS_LISTED ? ` The first ${TAGS_LISTED.toLocaleString('en-US')} tags by name are shown.` : ''}</p>
<form id="tag-filter" method="get" action="/dashboard" class="tag-filter-form">
<p>Tick tags to list the links that have <strong>all</strong> of them (at most ${MAX_FILTER_TAGS}).</p>
<button type="submit" class="secondary">Show links with all ticked tags</button>
</form>
<div class="table-wrap">
<table class="links-table tags-table">
<caption class="visually-hidden">Your tags, by name, with their links and clicks</caption>
<thead><tr><th scope="col" class="pick"><span class="visually-hidden">Filter</span></th><th scope="col">Tag</th><th scope="col" class="n">Links</th><th scope="col" class="n">Clicks</th><th scope="col">Rename or merge</th><th scope="col"><span class="visually-hidden">Delete</span></th></tr></thead>
<tbody>
${tags.map((t) => tagRow(s, t, refused)).join('\n')}
</tbody>
</table>
</div>
</section>`
}

export function createTagsPage(deps: DashboardDeps) {
  const { shell, links } = deps

  /** The form's tag, or null when it is not one (a forged form: nothing is done). */
  const tagOf = (value: string | null) => (value && TAG.test(value) ? value.toLowerCase() : null)

  return new Elysia({ name: 'dashboard-tags' })
    .get(PAGE, async ({ request }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      const refused = await shell.refusedState<RenameRefused>(request, shell.ownerOf(s))
      const tags = await links.tagSummary(s.caller)
      const content = `<div class="links-page"><p class="back"><a href="/dashboard">← All links</a></p><h1>Tags</h1>${tagsContent(s, tags, refused)}</div>`
      return shell.render(request, s, { section: 'links', title: 'Tags', content })
    })
    .post(
      `${PAGE}/rename`,
      async ({ request }) => {
        const s = await shell.require(request, PAGE)
        if (s instanceof Response) return s
        const f = await shell.form(request, s)
        const tag = tagOf(f.get('tag'))
        if (!tag) return shell.seeOther(PAGE, { kind: 'error', text: 'That tag is not one of yours.' })
        const typed = (f.get('to') ?? '').trim()
        const to = tagOf(typed)
        const refuse = (error: string) =>
          shell.refused(shell.ownerOf(s), PAGE, { tag, to: typed.slice(0, 64), error } satisfies RenameRefused)
        if (!typed) return refuse('Type the new name.')
        if (!to) return refuse(RULE)
        if (to === tag) return refuse('That is its name already: type another.')
        // Merged when the account uses the new name already (said so; the storage merges either way).
        const merged = (await links.search({ tags: [to] }, s.caller)).total > 0
        const n = await links.renameTag({ tag, to }, s.caller).catch((err) => {
          if (err instanceof AppError && err.status < 500) return err
          throw err
        })
        if (n instanceof AppError) return shell.seeOther(PAGE, { kind: 'error', text: n.message })
        const text = merged
          ? `Merged “${tag}” into “${to}” on ${plural(n, 'link')}.`
          : `Renamed “${tag}” to “${to}” on ${plural(n, 'link')}.`
        return shell.seeOther(PAGE, { kind: 'ok', text })
      },
      { parse: 'none' },
    )
    .get(`${PAGE}/delete`, async ({ request }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      const tag = tagOf(new URL(request.url).searchParams.get('tag'))
      const n = tag ? (await links.search({ tags: [tag] }, s.caller)).total : 0
      const heading = tag ? `Delete the tag “${tag}”?` : 'No such tag'
      const body =
        tag && n > 0
          ? `<p>It is taken off ${plural(n, 'link')}; the links themselves stay, with their other tags.</p>
<form method="post" action="${PAGE}/delete" class="actions">
<input type="hidden" name="_csrf" value="${e(s.csrf)}"><input type="hidden" name="tag" value="${e(tag)}">
<button type="submit" class="danger">Delete the tag ${e(tag)}</button><a href="${PAGE}">Cancel</a>
</form>`
          : `<p>None of your links has this tag.</p><p><a href="${PAGE}">Back to your tags</a></p>`
      const content = `<div class="links-page"><p class="back"><a href="${PAGE}">← All tags</a></p>
<h1>${e(heading)}</h1><section class="card confirm">${body}</section></div>`
      return shell.render(request, s, { section: 'links', title: heading, content })
    })
    .post(
      `${PAGE}/delete`,
      async ({ request }) => {
        const s = await shell.require(request, PAGE)
        if (s instanceof Response) return s
        const tag = tagOf((await shell.form(request, s)).get('tag'))
        if (!tag) return shell.seeOther(PAGE, { kind: 'error', text: 'That tag is not one of yours.' })
        const n = await links.deleteTag({ tag }, s.caller).catch((err) => {
          if (err instanceof AppError && err.status < 500) return err
          throw err
        })
        if (n instanceof AppError) return shell.seeOther(PAGE, { kind: 'error', text: n.message })
        return shell.seeOther(PAGE, { kind: 'ok', text: `Deleted the tag “${tag}” from ${plural(n, 'link')}.` })
      },
      { parse: 'none' },
    )
}
