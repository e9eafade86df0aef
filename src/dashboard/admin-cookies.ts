// Admin › Media cookies (issue 41 item 4): the cookies files media download gives yt-dlp per site — added (site and
// file, multipart), listed (site, count, earliest expiry, last use) and removed, each form Post/Redirect/Get with the
// session's CSRF token. A value is never shown: the page lists what media/cookies.ts lists, nothing more.
import { Elysia } from 'elysia'
import { byAccount } from '../audit'
import { AppError } from '../kernel/errors'
import { CookiesError, type CookieSiteRow } from '../media'
import { escapeHtml as e, formatCount, timeHtml } from '../web/render'
import { COOKIES, tabs } from './admin-tabs'
import type { DashboardDeps } from './deps'
import type { Session } from './sessions'
import { uploadForm } from './upload-form'

const FILE_MAX_BYTES = 1024 * 1024

function addCard(s: Session): string {
  return `<section class="card" aria-labelledby="ck-add-h">
<h2 id="ck-add-h">Add cookies for a site</h2>
<p class="muted">Some sites serve only signed-in users. Export the cookies of a signed-in browser as a <strong>Netscape cookies file</strong> (what yt-dlp and browser exporters write), and give the site they are for: media download passes them to yt-dlp for that site's addresses only. They are stored encrypted and never shown again; adding a site again replaces its cookies.</p>
<form method="post" action="${COOKIES}" enctype="multipart/form-data" class="form-grid">
<input type="hidden" name="_csrf" value="${e(s.csrf)}">
<div class="field"><label for="ck-site">Site</label><input id="ck-site" name="site" required maxlength="253" autocomplete="off" spellcheck="false" aria-describedby="ck-site-hint"><span class="hint" id="ck-site-hint">A domain, such as example.com (its subdomains too), or an IP address (that address only).</span></div>
<div class="field"><label for="ck-file">Cookies file</label><input id="ck-file" name="file" type="file" required accept=".txt,text/plain" aria-describedby="ck-file-hint"><span class="hint" id="ck-file-hint">At most 1 MiB and 10,000 cookies; only those of the site and its subdomains are kept.</span></div>
<p class="actions"><button type="submit">Add cookies</button></p>
</form>
</section>`
}

function listCard(s: Session, rows: CookieSiteRow[]): string {
  const head = `<h2 id="ck-list-h">Sites with cookies <span class="count">${formatCount(rows.length)}</span></h2>`
  if (rows.length === 0)
    return `<section class="card" aria-labelledby="ck-list-h">${head}<p class="empty">No site has cookies: media download reads every page as a visitor.</p></section>`
  const row = (r: CookieSiteRow) => `<tr>
<td data-label="Site"><code>${e(r.site)}</code></td>
<td class="n" data-label="Cookies"><span>${formatCount(r.cookies)}</span></td>
<td class="date" data-label="Earliest expiry">${timeHtml(r.expires, { never: 'session cookies only' })}</td>
<td class="date" data-label="Last used">${timeHtml(r.last_used)}</td>
<td class="date" data-label="Added">${timeHtml(r.created)}</td>
<td class="wide" data-label="Action"><form method="post" action="${COOKIES}/remove" class="inline-form"><input type="hidden" name="_csrf" value="${e(s.csrf)}"><input type="hidden" name="site" value="${e(r.site)}"><button type="submit" class="warn-button secondary small">Remove<span class="visually-hidden"> the cookies of ${e(r.site)}</span></button></form></td>
</tr>`
  return `<section class="card" aria-labelledby="ck-list-h">${head}
<div class="table-wrap"><table class="stack">
<caption class="visually-hidden">Sites whose cookies media download uses</caption>
<thead><tr><th scope="col">Site</th><th scope="col" class="n">Cookies</th><th scope="col">Earliest expiry</th><th scope="col">Last used</th><th scope="col">Added</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
<tbody>${rows.map(row).join('')}</tbody></table></div>
</section>`
}

export function createAdminCookiesPage(deps: DashboardDeps) {
  const { shell, cookies, clientIp } = deps
  const back = (kind: 'ok' | 'error', text: string) => shell.seeOther(COOKIES, { kind, text })

  return new Elysia({ name: 'dashboard-admin-cookies' })
    .get(COOKIES, async ({ request }) => {
      const s = await shell.requireAdmin(request)
      if (s instanceof Response) return s
      const content = `<h1>Admin</h1>\n${tabs('cookies')}\n${addCard(s)}\n${listCard(s, await cookies.list())}`
      return shell.render(request, s, { section: 'admin', title: 'Admin · Media cookies', content })
    })
    .post(COOKIES, async ({ request }) => {
      const s = await shell.requireAdmin(request, COOKIES)
      if (s instanceof Response) return s
      let form: FormData
      try {
        form = await uploadForm(request, {
          csrf: s.csrf,
          crossSite: shell.crossSite(request),
          refused: shell.csrfRefused,
          fileMaxBytes: FILE_MAX_BYTES,
        })
      } catch (err) {
        if (err instanceof AppError && err.code === 'too_large')
          return back('error', 'Cookies file: it is larger than 1 MiB; nothing was stored.')
        throw err
      }
      const site = form.get('site')
      const file = form.get('file')
      if (typeof site !== 'string' || !site.trim()) return back('error', 'Site: give a domain or an IP address.')
      if (!(file instanceof Blob) || file.size === 0) return back('error', 'Cookies file: choose a file.')
      try {
        const added = await cookies.add(site, await file.text(), byAccount(s.caller, clientIp(request)))
        const left = added.otherSites + added.expired
        return back(
          'ok',
          `${added.site}: ${added.cookies} cookie${added.cookies === 1 ? '' : 's'} stored${left ? ` (${added.otherSites} for other domains and ${added.expired} expired left out)` : ''}.`,
        )
      } catch (err) {
        if (!(err instanceof CookiesError)) throw err
        const field = /^the site|too many sites/.test(err.message) ? 'Site' : 'Cookies file'
        return back('error', `${field}: ${err.message}; nothing was stored.`)
      }
    })
    .post(`${COOKIES}/remove`, async ({ request }) => {
      const s = await shell.requireAdmin(request, COOKIES)
      if (s instanceof Response) return s
      const site = ((await shell.form(request, s)).get('site') ?? '').slice(0, 300)
      let removed = false
      try {
        removed = await cookies.remove(site, byAccount(s.caller, clientIp(request)))
      } catch (err) {
        if (!(err instanceof CookiesError)) throw err
      }
      return removed
        ? back('ok', `The cookies of ${site} are removed: media download no longer uses them.`)
        : back(
            'error',
            `${site || 'That site'} had no cookies (removed meanwhile?): the list shows what is stored now.`,
          )
    })
}
