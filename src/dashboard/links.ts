// The dashboard's Links section (/dashboard): the account's short links — the list (search, tags, pages), the
// create form and the CSV export; one link's pages are link-pages.ts. Every form is Post/Redirect/Get.
import { Elysia } from 'elysia'
import { AppError } from '../kernel/errors'
import { codeKey, csvExportResponse } from '../links'
import { RepeatedForm } from './form-tokens'
import type { DashboardDeps } from './deps'
import type { Session } from './sessions'
import { createLinkPages } from './link-pages'
import { bulkBar, createBulkActions } from './links-bulk'
import { createTagsPage } from './tags'
import { listCard, listQuery, REF, refOf, searchInput, shortDestination } from './links-view'
import {
  createCard,
  type CreateForm,
  destinationOf,
  EMPTY_FORM,
  fieldOf,
  formErrors,
  normaliseTags,
  plainError,
  type Refused,
  ROUTING_FIELDS,
} from './links-form'
import { schemeNote, withNote } from './form-help'
import { routingJson, routingOf } from './routing-form'
import { EXTRA_FIELDS, extrasChecked, extrasSent } from './link-utm'

export function createLinksSection(deps: DashboardDeps) {
  const { shell, links } = deps
  const { tokens } = shell

  /** The list with the create form; with ?form=ID, the refused form as it was sent, with its errors. */
  async function listPage(request: Request, s: Session, draft?: { form: CreateForm }) {
    const url = new URL(request.url)
    // A refused form (?form=ID) as it was sent, or what was typed before the session ended (shell.requireForm).
    const refused =
      (await shell.refusedState<Refused<CreateForm>>(request, shell.ownerOf(s))) ??
      (draft ? { values: draft.form, errors: {} } : null)
    const query = listQuery(url, links.domains.hosts)
    const freshParam = url.searchParams.get('new')
    const fresh = freshParam && REF.test(freshParam) ? freshParam : null
    const result = await links.search(searchInput(query), s.caller)
    const content = `<div class="links-page"><h1>Links</h1>${createCard(s, tokens, refused?.values ?? EMPTY_FORM, refused?.errors ?? {}, links.domains.hosts)}${listCard(result, query, fresh, bulkBar(s, query, result.total, result.links.length), { home: links.domains.defaultHost, hosts: links.domains.hosts })}</div>`
    return shell.render(request, s, {
      section: 'links',
      title: 'Links',
      content,
      notice: refused?.formError ? { kind: 'error', text: refused.formError } : undefined,
    })
  }

  const app = new Elysia({ name: 'dashboard-links' })
    .get('/dashboard', async ({ request }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      // Typed before the session ended (see shell.requireForm): the form shows it again.
      const d = shell.draft(request)
      if (d)
        return listPage(request, s, {
          form: {
            url: d.get('url') ?? '',
            alias: d.get('alias') ?? '',
            mode: d.get('mode') || 'redirect',
            expire: d.get('expire') ?? '',
            tags: d.get('tags') ?? '',
            max_visits: d.get('max_visits') ?? '',
            ...routingOf(d),
            title: d.get('title') ?? '',
            domain: d.get('domain') ?? '',
            ...extrasSent((n) => d.get(n), EMPTY_FORM),
          },
        })
      return listPage(request, s)
    })
    .post(
      '/dashboard/links',
      async ({ request }) => {
        const s = await shell.requireForm(request, {
          page: '/dashboard',
          keep: ['url', 'alias', 'mode', 'expire', 'tags', 'title', 'domain', ...ROUTING_FIELDS, ...EXTRA_FIELDS],
        })
        if (s instanceof Response) return s
        const f = await shell.form(request, s)
        // Sent before (a double click, back and send again): no second link; the first answer's page.
        const sent = tokens.of(f)
        const before = await tokens.used(sent, s.id)
        if (before !== undefined) return shell.repeated(before ?? '/dashboard')
        const destination = destinationOf(f.get('url') ?? '')
        const tags = normaliseTags(f.get('tags') ?? '')
        const form: CreateForm = {
          url: destination.url,
          alias: (f.get('alias') ?? '').trim(),
          mode: f.get('mode') || 'redirect',
          expire: f.get('expire') ?? '',
          // Shown again as typed when the tags are refused, else as they will be kept.
          tags: tags.problem ? (f.get('tags') ?? '') : tags.tags.join(', '),
          max_visits: (f.get('max_visits') ?? '').trim(),
          ...routingOf(f),
          title: f.get('title') ?? '',
          domain: f.get('domain') ?? '',
          ...extrasSent((n) => f.get(n), EMPTY_FORM),
        }
        const password = f.get('password') ?? ''
        // Every field's problem at once, each beside its field; the service's own refusals (an alias taken) after.
        const { errors, fixed } = formErrors(
          links.problems,
          [
            { key: 'url', param: 'url', value: form.url },
            ...(form.alias ? [{ key: 'alias', param: 'alias' as const, value: form.alias }] : []),
            { key: 'mode', param: 'mode', value: form.mode },
            ...(form.expire ? [{ key: 'expire', param: 'expire' as const, value: form.expire }] : []),
            { key: 'max_visits', param: 'max_visits', value: form.max_visits },
            { key: 'title', param: 'title', value: form.title },
            { key: 'password', param: 'password', value: password },
            ...extrasChecked(form),
          ],
          tags.problem,
          form,
        )
        if (Object.keys(errors).length)
          return shell.refused(shell.ownerOf(s), '/dashboard', { values: form, errors } satisfies Refused<CreateForm>)
        const fresh = (code: string) => `/dashboard?new=${encodeURIComponent(code)}`
        const json = routingJson(form)
        try {
          const r = await links.create(
            {
              url: form.url,
              alias: form.alias,
              mode: form.mode,
              expire: form.expire,
              password,
              tags: tags.tags.join(','),
              max_visits: form.max_visits,
              rules: json.rules,
              split: json.split,
              title: form.title,
              domain: form.domain,
              // The builder's fields as typed ('' sets nothing on create): the service sets them in the URL.
              expired_url: form.expired_url,
              ...form.utm,
            },
            s.caller,
            { within: (tx, link) => tokens.claim(tx, sent, s.id, fresh(codeKey(link.domain, link.code))) },
          )
          return shell.seeOther(fresh(refOf(r, links.domains.defaultHost)), {
            kind: 'ok',
            text: `Created ${r.url} → ${shortDestination(r.long_url)}${withNote(schemeNote([...destination.fixed, ...fixed]))}`,
          })
        } catch (err) {
          if (err instanceof RepeatedForm) return shell.repeated(err.result ?? '/dashboard')
          if (!(err instanceof AppError) || err.status >= 500) throw err
          const field = fieldOf(err)
          return shell.refused(shell.ownerOf(s), '/dashboard', {
            values: form,
            errors: field ? { [field]: plainError(field, err.message) } : {},
            formError: field ? undefined : plainError(null, err.message),
          } satisfies Refused<CreateForm>)
        }
      },
      { parse: 'none' },
    )
    // Every link of the account as CSV: the same file as the API's links.json?format=csv.
    .get('/dashboard/links.csv', async ({ request }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      return csvExportResponse(links.exportPages(s.caller), links.now())
    })
    .use(createBulkActions(deps))
    .use(createTagsPage(deps))
    .use(createLinkPages(deps))
  return app
}
