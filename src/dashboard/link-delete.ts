// A link's deletion in the dashboard: a confirmation page, then the POST that deletes it (Post/Redirect/Get);
// another account's link, or none, is a 404.
import { Elysia } from 'elysia'
import { AppError } from '../kernel/errors'
import { breakable } from '../links'
import { escapeHtml as e, isoTimeHtml } from '../web/render'
import type { DashboardDeps } from './deps'
import { createOwnedLinks } from './link-owned'
import { lock } from './links-view'

export function createLinkDelete({ shell, links }: DashboardDeps) {
  const { ref, ownedLink, notFoundPage } = createOwnedLinks(shell, links)
  return new Elysia({ name: 'dashboard-link-delete' })
    .get('/dashboard/links/:code/delete', async ({ request, params }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      const r = await ownedLink(params.code, s)
      if (!r) return notFoundPage(request, s, params.code)
      const c = e(ref(r))
      return shell.render(request, s, {
        section: 'links',
        title: `Delete ${r.hex}`,
        content: `<div class="links-page"><p class="back"><a href="/dashboard">← All links</a></p>
<h1>Delete this link?</h1>
<section class="card confirm">
<dl class="facts">
<dt>Short link</dt><dd><code>${e(r.url)}</code>${lock(r.password)}</dd>
<dt>Destination</dt><dd class="dest-full">${breakable(r.long_url)}</dd>
<dt>Clicks</dt><dd>${r.clicks}</dd>
<dt>Created</dt><dd>${isoTimeHtml(r.created)}</dd>
</dl>
<p class="warn-text">Its statistics and QR code are deleted with it, and the code <code>${c}</code> becomes free for anyone. This cannot be undone.</p>
<form method="post" action="/dashboard/links/${c}/delete" class="actions">
<input type="hidden" name="_csrf" value="${e(s.csrf)}">
<button type="submit" class="danger">Delete ${c}</button><a href="/dashboard/links/${c}">Cancel</a>
</form>
</section></div>`,
      })
    })
    .post(
      '/dashboard/links/:code/delete',
      async ({ request, params }) => {
        const s = await shell.require(request)
        if (s instanceof Response) return s
        await shell.form(request, s)
        const r = await ownedLink(params.code, s)
        if (!r) return notFoundPage(request, s, params.code)
        try {
          await links.delete({ code: r.hex, domain: r.domain }, s.caller)
        } catch (err) {
          if (err instanceof AppError && (err.status === 404 || err.code === 'not_owner'))
            return notFoundPage(request, s, r.hex)
          throw err
        }
        return shell.seeOther('/dashboard', { kind: 'ok', text: `Deleted ${r.url}.` })
      },
      { parse: 'none' },
    )
}
