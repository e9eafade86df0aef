// One link's pages in the dashboard's Links section: its edit page and form, its QR images (styled, with a logo),
// its statistics (its deletion: link-delete.ts); each answers 404 for a code that is not the session's. Post/Redirect/Get.
import { Elysia } from 'elysia'
import { AppError } from '../kernel/errors'
import { breakable, csvTableOf, dayOf, MODES, statsBody, statsCsv, statsFor, windowOf, type LinkRecord } from '../links'
import { escapeHtml as e, isoTimeHtml } from '../web/render'
import { qrImage, qrSection, qrWithLogo } from './link-qr'
import { previewSection, savePreview } from './link-preview'
import type { DashboardDeps } from './deps'
import { createLinkDelete } from './link-delete'
import { createOwnedLinks } from './link-owned'
import type { Session } from './sessions'
import { REF, tagChips, visitsLeftText } from './links-view'
import {
  currentRouting,
  destinationOf,
  type EditForm,
  errorOf,
  fieldOf,
  formErrors,
  LIFETIMES,
  MODE_LABELS,
  normaliseTags,
  plainError,
  type Refused,
  ROUTING_FIELDS,
  routingFields,
  selectOptions,
  tagsField,
  titleField,
} from './links-form'
import { schemeAttrs, schemeHint, schemeNote, withNote } from './form-help'
import { routingJson, routingOf, routingOfLink } from './routing-form'
import { EXTRA_FIELDS, extraFields, extrasChecked, extrasOfLink, extrasSent, utmChanged } from './link-utm'

export function createLinkPages(deps: DashboardDeps) {
  const { shell, links, qr, clock } = deps
  const { home, ref, ownedLink, notFoundPage } = createOwnedLinks(shell, links)

  /** A link's edit page; with ?form=ID, the refused form as it was sent, with its errors. */
  async function editPage(request: Request, s: Session, r: LinkRecord, draft?: { values: EditForm }) {
    const opts =
      (await shell.refusedState<Refused<EditForm>>(request, shell.ownerOf(s))) ??
      (draft ? { values: draft.values, errors: {} } : undefined)
    const v = opts?.values ?? {
      url: r.long_url,
      mode: r.mode,
      expire: 'keep',
      passwordAction: 'keep',
      tags: r.tags.join(', '),
      title: r.title,
      ...currentRouting(r),
      ...extrasOfLink(r),
    }
    const errors = opts?.errors ?? {}
    const url = errorOf(errors, 'url')
    const mode = errorOf(errors, 'mode')
    const expire = errorOf(errors, 'expire')
    const pw = errorOf(errors, 'password')
    const c = e(ref(r))
    const currentExpiry = !r.expires
      ? 'It never expires.'
      : r.expired
        ? `It expired ${isoTimeHtml(r.expires)}.`
        : `It expires ${isoTimeHtml(r.expires)}.`
    const expireOptions: [string, string][] = [
      ['keep', 'Keep as it is'],
      ['0', 'Never'],
      ...LIFETIMES.slice(1).map(([sec, label]) => [sec, `${label} from now`] as [string, string]),
    ]
    const radio = (value: string, text: string, extra = '') =>
      `<label class="choice"><input type="radio" name="password_action" value="${value}"${v.passwordAction === value ? ' checked' : ''}${extra}> ${text}</label>`
    const content = `<div class="links-page"><p class="back"><a href="/dashboard">← All links</a></p>
<h1>Edit <code>${c}</code></h1>
<div class="edit-layout">
<section class="card" aria-labelledby="edit-heading">
<h2 id="edit-heading">Settings</h2>
<form method="post" action="/dashboard/links/${c}" class="stack" novalidate>
<input type="hidden" name="_csrf" value="${e(s.csrf)}">
<div class="field"><label for="url">Destination URL</label>
<input id="url" name="url" type="text" inputmode="url" autocomplete="off" spellcheck="false" autocapitalize="off" required maxlength="4096" value="${e(v.url)}" data-scheme${schemeAttrs('url', !!errors.url)}>${schemeHint('url')}${url.html}</div>
<div class="form-grid">
<div class="field"><label for="mode">Mode</label>
<select id="mode" name="mode"${mode.attrs}>${selectOptions(
      MODES.map((m) => [m, MODE_LABELS[m] ?? m] as const),
      v.mode,
    )}</select>${mode.html}</div>
<div class="field"><label for="expire">Expiry</label>
<select id="expire" name="expire" aria-describedby="expire-hint${errors.expire ? ' expire-error' : ''}"${errors.expire ? ' aria-invalid="true"' : ''}>${selectOptions(expireOptions, v.expire)}</select>
<span class="hint" id="expire-hint">${currentExpiry}</span>${expire.html}</div>
${titleField(v.title, errors)}
${tagsField(v.tags, errors)}
${routingFields(v, errors, visitsLeftText(r))}
${extraFields(v, extrasOfLink(r).utm, errors)}
</div>
<fieldset class="password-choice"${errors.password ? ' aria-describedby="password-error"' : ''}>
<legend>Password <span class="muted">(${r.password ? 'this link has one' : 'none set'})</span></legend>
${radio('keep', r.password ? 'Keep the current password' : 'No password')}
${radio('set', r.password ? 'Set a new password' : 'Set a password')}
${r.password ? radio('remove', 'Remove the password') : ''}
<div class="field"><label for="password">New password</label>
<input id="password" name="password" type="password" autocomplete="new-password" maxlength="128" aria-describedby="password-hint${errors.password ? ' password-error' : ''}"${errors.password ? ' aria-invalid="true"' : ''}>
<span class="hint" id="password-hint">Used when “${r.password ? 'Set a new password' : 'Set a password'}” is chosen; 1–128 characters.</span>${pw.html}</div>
</fieldset>
<div class="actions"><button type="submit">Save changes</button><a href="/dashboard">Cancel</a></div>
</form>
</section>
<aside class="card link-side" aria-labelledby="qr-heading">
<h2 id="qr-heading">Short link</h2>
<div class="short-full"><a id="edit-short" href="${e(r.url)}">${breakable(r.url)}</a><button type="button" class="copy secondary small" data-copy="edit-short" aria-label="Copy ${e(r.url)}" hidden>Copy</button></div>
<img class="qr" src="/qr/${c}.svg" width="200" height="200" alt="QR code of ${e(r.url)}">
<p class="downloads">Download <a class="button secondary small" aria-label="Download the QR code as PNG" href="/qr/${c}.png" download="${c}.png">PNG</a> <a class="button secondary small" aria-label="Download the QR code as SVG" href="/qr/${c}.svg" download="${c}.svg">SVG</a></p>
<dl class="facts">
<dt>Clicks</dt><dd>${r.clicks} · <a href="/dashboard/links/${c}/stats">statistics</a></dd>
${r.max_visits !== null ? `<dt>Visits</dt><dd>${e(visitsLeftText(r))}</dd>` : ''}
<dt>Created</dt><dd>${isoTimeHtml(r.created)}</dd>
${r.tags.length ? `<dt>Tags</dt><dd>${tagChips(r, { q: '', tags: [], sort: 'created', page: 1, domain: '' })}</dd>` : ''}
</dl>
<p><a class="danger-link" href="/dashboard/links/${c}/delete">Delete this link…</a></p>
</aside>
</div>
${qrSection(ref(r), r.url, new URL(request.url), s.csrf)}
${previewSection(r, s.csrf, ref(r))}
</div>`
    return shell.render(request, s, {
      section: 'links',
      title: `Edit ${r.hex}`,
      content,
      notice: opts?.formError ? { kind: 'error', text: opts.formError } : undefined,
    })
  }

  /** A link's QR image styled by the query (link-qr.ts): the session's own links only. */
  async function linkQr(request: Request, code: string, format: 'png' | 'svg') {
    const s = await shell.require(request)
    if (s instanceof Response) return s
    const r = await ownedLink(code, s)
    if (!r)
      return new Response('No such link.', {
        status: 404,
        headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
      })
    return qrImage(qr, s.caller.accountId, ref(r), r.url, format, new URL(request.url))
  }

  /**
   * A link's statistics for its owner (the public page's, with the destination even when a password
   * protects it), for the period or dates in the URL; with `csv`, its downloads. Other accounts' links and
   * visitors without a session get what any dashboard page gives them (404, the sign-in page).
   */
  async function statsPage(request: Request, code: string, csv: boolean): Promise<Response> {
    const s = await shell.require(request)
    if (s instanceof Response) return s
    const r = await ownedLink(code, s)
    if (!r) return notFoundPage(request, s, code)
    const window = windowOf(request.url)
    const now = clock()
    const { s: answer, error } = await statsFor(
      (from, to) => links.stats({ code: r.hex, domain: r.domain, from, to }, s.caller),
      window,
      now,
    )
    const path = `/dashboard/links/${ref(r)}/stats`
    if (csv) {
      if (!error) return statsCsv(answer, csvTableOf(request.url), { 'cache-control': 'no-store' })
      return shell.render(request, s, {
        section: 'links',
        title: 'Dates refused',
        status: 400,
        content: `<div class="links-page"><h1>Dates refused</h1><div class="card"><p>${e(error.message)}</p><p><a href="${e(path)}">Back to the statistics</a></p></div></div>`,
      })
    }
    const body = statsBody(answer, { path, csvPath: `${path}.csv`, window, error, today: dayOf(now) })
    return shell.render(request, s, {
      section: 'links',
      title: `Statistics of ${r.hex}`,
      status: error ? 400 : 200,
      content: `<div class="links-page stats"><p class="back"><a href="/dashboard">← All links</a> · <a href="/dashboard/links/${e(ref(r))}">Edit ${e(r.hex)}</a> · <a href="${e(r.domain === home ? `/${r.hex}+` : r.stats)}">Public page</a></p>${body}</div>`,
    })
  }

  const app = new Elysia({ name: 'dashboard-link-pages' })
    .get('/dashboard/links/:code', async ({ request, params }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      const r = await ownedLink(params.code, s)
      if (!r) return notFoundPage(request, s, params.code)
      const d = shell.draft(request)
      if (!d) return editPage(request, s, r)
      const action = d.get('password_action')
      return editPage(request, s, r, {
        values: {
          url: d.get('url') ?? r.long_url,
          mode: d.get('mode') ?? r.mode,
          expire: d.get('expire') ?? 'keep',
          passwordAction: action === 'set' || action === 'remove' ? action : 'keep',
          tags: d.get('tags') ?? r.tags.join(', '),
          max_visits: d.get('max_visits') ?? currentRouting(r).max_visits,
          ...(d.has('routing_editor') || d.has('rules') ? routingOf(d) : currentRouting(r)),
          title: d.get('title') ?? r.title,
          ...extrasSent((n) => d.get(n), extrasOfLink(r)),
        },
      })
    })
    .post(
      '/dashboard/links/:code',
      async ({ request, params }) => {
        const s = await shell.requireForm(request, {
          keep: ['url', 'mode', 'expire', 'password_action', 'tags', 'title', ...ROUTING_FIELDS, ...EXTRA_FIELDS],
        })
        if (s instanceof Response) return s
        const f = await shell.form(request, s)
        const r = await ownedLink(params.code, s)
        if (!r) return notFoundPage(request, s, params.code)
        const destination = destinationOf(f.get('url') ?? '')
        const tags = normaliseTags(f.get('tags') ?? r.tags.join(', '))
        const sent = f.has('routing_editor') || f.has('rules') || f.has('split')
        const values: EditForm = {
          url: destination.url,
          mode: f.get('mode') ?? r.mode,
          expire: f.get('expire') ?? 'keep',
          passwordAction: ['set', 'remove'].includes(f.get('password_action') ?? '')
            ? (f.get('password_action') as 'set' | 'remove')
            : 'keep',
          tags: tags.problem ? (f.get('tags') ?? '') : tags.tags.join(', '),
          max_visits: (f.get('max_visits') ?? '').trim(),
          ...(sent ? routingOf(f) : currentRouting(r)),
          title: f.get('title') ?? r.title,
          ...extrasSent((n) => f.get(n), extrasOfLink(r)),
        }
        const changes: {
          url?: string
          mode?: string
          expire?: string
          password?: string
          tags?: string
          max_visits?: string
          rules?: string
          split?: string
          title?: string
        } & Partial<Record<(typeof EXTRA_FIELDS)[number], string>> = {}
        const page = `/dashboard/links/${ref(r)}`
        const refuse = (state: Refused<EditForm>) => shell.refused(shell.ownerOf(s), page, state)
        // Every field's problem at once, each beside its field (the rows' addresses get https:// here too).
        const { errors, fixed } = formErrors(
          links.problems,
          [
            { key: 'url', param: 'url', value: values.url },
            { key: 'mode', param: 'mode', value: values.mode },
            ...(values.expire !== 'keep' ? [{ key: 'expire', param: 'expire' as const, value: values.expire }] : []),
            { key: 'max_visits', param: 'max_visits', value: values.max_visits },
            { key: 'title', param: 'title', value: values.title },
            ...extrasChecked(values, extrasOfLink(r).utm),
          ],
          tags.problem,
          values,
        )
        if (values.passwordAction === 'set' && (f.get('password') ?? '') === '')
          errors.password = 'Type the new password, or choose to keep the current one.'
        if (Object.keys(errors).length) return refuse({ values, errors })
        // The limit, rules and split are sent when they differ from what the page showed ("" removes each).
        const shown = { max_visits: currentRouting(r).max_visits, ...routingJson(routingOfLink(r)) }
        const typed = { max_visits: values.max_visits, ...routingJson(values) }
        for (const k of ['max_visits', 'rules', 'split'] as const)
          if ((k === 'max_visits' ? f.has(k) : sent) && typed[k] !== shown[k]) changes[k] = typed[k]
        if (values.url !== r.long_url) changes.url = values.url
        if (values.mode !== r.mode) changes.mode = values.mode
        // A text input drops line breaks: a title over two lines (an import's) is changed only when edited.
        if (values.title !== r.title.replace(/[\r\n]/g, '')) changes.title = values.title
        if (values.expire !== 'keep') changes.expire = values.expire
        // The expiry destination when changed ('' removes it); UTM values changed from what the page showed.
        if (values.expired_url !== (r.expired_url ?? '')) changes.expired_url = values.expired_url
        Object.assign(changes, utmChanged(values.utm, extrasOfLink(r).utm))
        if (values.passwordAction === 'remove') changes.password = ''
        // Tags as the form writes them, compared as the service stores them (order does not count).
        if ([...tags.tags].sort().join(',') !== r.tags.join(',')) changes.tags = tags.tags.join(',')
        if (values.passwordAction === 'set') changes.password = f.get('password') ?? ''
        if (Object.keys(changes).length === 0)
          return shell.seeOther(`/dashboard/links/${ref(r)}`, { kind: 'ok', text: 'Nothing to change.' })
        try {
          await links.update({ code: r.hex, domain: r.domain, ...changes }, s.caller)
        } catch (err) {
          if (!(err instanceof AppError) || err.status >= 500) throw err
          if (err.status === 404 || err.code === 'not_owner') return notFoundPage(request, s, r.hex)
          const field = fieldOf(err)
          return refuse({
            values,
            errors: field ? { [field]: plainError(field, err.message) } : {},
            formError: field ? undefined : plainError(null, err.message),
          })
        }
        return shell.seeOther(`/dashboard/links/${ref(r)}`, {
          kind: 'ok',
          text: `Saved the changes to ${r.url}${withNote(schemeNote([...destination.fixed, ...fixed])) || '.'}`,
        })
      },
      { parse: 'none' },
    )
    .get('/dashboard/links/:code/qr.png', ({ request, params }) => linkQr(request, params.code, 'png'))
    .get('/dashboard/links/:code/qr.svg', ({ request, params }) => linkQr(request, params.code, 'svg'))
    .post(
      '/dashboard/links/:code/qr',
      async ({ request, params }) => {
        const s = await shell.require(request, `/dashboard/links/${REF.test(params.code) ? params.code : ''}`)
        if (s instanceof Response) return s
        const r = await ownedLink(params.code, s)
        if (!r) return notFoundPage(request, s, params.code)
        const opts = {
          request,
          accountId: s.caller.accountId,
          csrf: s.csrf,
          crossSite: shell.crossSite(request),
          refused: shell.csrfRefused,
          code: ref(r),
          shortUrl: r.url,
        }
        return qrWithLogo(qr, opts, (location, reason) => shell.seeOther(location, { kind: 'error', text: reason }))
      },
      { parse: 'none' },
    )
    .post(
      '/dashboard/links/:code/preview',
      async ({ request, params }) => {
        const s = await shell.require(request, `/dashboard/links/${REF.test(params.code) ? params.code : ''}`)
        if (s instanceof Response) return s
        const r = await ownedLink(params.code, s)
        if (!r) return notFoundPage(request, s, params.code)
        const opts = {
          request,
          caller: s.caller,
          csrf: s.csrf,
          crossSite: shell.crossSite(request),
          refused: shell.csrfRefused,
          code: r.hex,
          domain: r.domain,
          ref: ref(r),
        }
        return savePreview(links, opts, (location, notice) => shell.seeOther(location, notice))
      },
      { parse: 'none' },
    )
    .get('/dashboard/links/:code/stats', ({ request, params }) => statsPage(request, params.code, false))
    .get('/dashboard/links/:code/stats.csv', ({ request, params }) => statsPage(request, params.code, true))
    .use(createLinkDelete(deps))
  return app
}
