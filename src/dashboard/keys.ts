// The dashboard's API section (/dashboard/keys): create keys with chosen scopes (the key shown once, sealed in a
// flash), list them, change a key's label and scopes, revoke one.
import { Elysia } from 'elysia'
import { printable } from '../accounts'
import { SCOPES, type Scope } from '../kernel/caller'
import { AppError } from '../kernel/errors'
import { escapeHtml as e, timeHtml } from '../web/render'
import { RepeatedForm } from './form-tokens'
import type { DashboardDeps } from './deps'
import { byAccount } from '../audit'
import type { Session } from './sessions'
import { withParam } from './page-helpers'
import type { Notice } from './shell'

const SCOPE_TEXT: Record<Scope, string> = {
  links: 'create, list, change and delete short links, and read their statistics',
  qr: 'make QR code images',
  media: 'download media from supported sites',
  mail: 'temporary mailboxes and their messages',
  webhooks: 'webhook endpoints and their deliveries',
}
const KEY_ID = /^\d{1,15}$/

/** The example a new key is shown with: a method its scopes allow (qr.json first, the simplest). */
export function curlExample(baseUrl: string, key: string, scopes: readonly Scope[]): string {
  if (scopes.includes('qr') || !scopes.includes('links'))
    return `curl -H "X-Api-Key: ${key}" "${baseUrl}/api/qr.json?data=hello"`
  return `curl -H "X-Api-Key: ${key}" -d limit=5 "${baseUrl}/api/links.json"`
}

interface KeyForm {
  scopes: Scope[]
  label: string
}
/** A refused key form, kept for the page it is sent back to. */
interface Refused {
  form: KeyForm
  errors?: Record<string, string>
  formError?: string
}
/** A new key, kept for the one page that shows it. */
interface NewKey {
  key: string
  scopes: Scope[]
  label: string
}

const PAGE = '/dashboard/keys'

export function createKeysSection({ shell, accounts, config, clientIp }: DashboardDeps) {
  const base = config.server.base_url
  const { flash, tokens } = shell

  /** The scopes and the label: the create form's fields, and the edit form's. */
  function keyFields(form: KeyForm, errors: Record<string, string>): string {
    const scopeErr = errors.scopes
    const labelErr = errors.label
    const boxes = SCOPES.map(
      (
        sc,
      ) => `<label class="choice scope"><input type="checkbox" name="scope" value="${sc}"${form.scopes.includes(sc) ? ' checked' : ''}${scopeErr ? ' aria-invalid="true"' : ''}>
<span><strong>${sc}</strong> <span class="muted">— ${e(SCOPE_TEXT[sc])}</span></span></label>`,
    ).join('\n')
    return `<fieldset class="scopes" aria-describedby="scopes-hint${scopeErr ? ' scopes-error' : ''}">
<legend>Scopes</legend>
<p class="hint" id="scopes-hint">What the key may do. Give a script only what it needs.</p>
${boxes}
${scopeErr ? `<p class="error" id="scopes-error">${e(scopeErr)}</p>` : ''}
</fieldset>
<div class="field"><label for="label">Label <span class="optional">(optional)</span></label>
<input id="label" name="label" maxlength="200" autocomplete="off" placeholder="e.g. backup script on the NAS" value="${e(form.label)}" aria-describedby="label-hint${labelErr ? ' label-error' : ''}"${labelErr ? ' aria-invalid="true"' : ''}>
<span class="hint" id="label-hint">To tell your keys apart later.</span>${labelErr ? `<span class="error" id="label-error">${e(labelErr)}</span>` : ''}</div>`
  }

  function createCard(s: Session, form: KeyForm, errors: Record<string, string>): string {
    return `<section class="card" aria-labelledby="new-key-heading">
<h2 id="new-key-heading">Create a key</h2>
<form method="post" action="/dashboard/keys" class="stack">
<input type="hidden" name="_csrf" value="${e(s.csrf)}">
${tokens.field()}
${keyFields(form, errors)}
<div class="actions"><button type="submit">Create key</button></div>
</form>
</section>`
  }

  async function listCard(s: Session): Promise<string> {
    const keys = await accounts.keysOfAccount(s.accountId)
    if (keys.length === 0)
      return `<section class="card" aria-labelledby="keys-heading"><h2 id="keys-heading">Your keys</h2><p class="empty">No keys yet: create one above.</p></section>`
    const rows = keys
      .map((k) => {
        const status = k.revoked
          ? `<span class="tag revoked">revoked</span> <span class="muted">${timeHtml(k.revoked)}</span>`
          : `<a href="/dashboard/keys/${k.id}/edit" aria-label="Edit the key ${e(k.prefix)}…">Edit</a> · <a class="danger-link" href="/dashboard/keys/${k.id}/revoke" aria-label="Revoke the key ${e(k.prefix)}…">Revoke</a>`
        return `<tr${k.revoked ? ' class="is-revoked"' : ''}>
<td data-label="Key"><code>${e(k.prefix)}…</code></td>
<td data-label="Label"><span>${k.label ? e(printable(k.label)) : '<span class="muted">—</span>'}</span></td>
<td data-label="Scopes"><span class="scope-tags">${k.scopes.map((sc) => `<span class="tag">${e(sc)}</span>`).join(' ')}</span></td>
<td class="date" data-label="Created">${timeHtml(k.created)}</td>
<td class="date" data-label="Last used">${k.last_used ? timeHtml(k.last_used) : '<span class="muted">never</span>'}</td>
<td data-label="Status"><div>${status}</div></td>
</tr>`
      })
      .join('\n')
    return `<section class="card" aria-labelledby="keys-heading">
<h2 id="keys-heading">Your keys</h2>
<div class="table-wrap">
<table class="keys-table">
<thead><tr><th scope="col">Key</th><th scope="col">Label</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>
</div>
</section>`
  }

  const howTo = `<section class="card api-howto" aria-labelledby="howto-heading">
<h2 id="howto-heading">Using the API</h2>
<p>Every method answers JSON. Send your key in the <code>X-Api-Key</code> header and the parameters as a form
(<code>POST</code>), or in the query string for the <code>GET</code> methods such as <code>qr.json</code>. A key may call
only the methods of its scopes; a revoked key is refused at once.</p>
<p><a href="/api/docs">Read the API documentation</a> for every method, its parameters and answers.</p>
</section>`

  /**
   * The section's page. With ?created=ID: the new key, the one time it is shown (a reload shows instead
   * that it was shown once); with ?form=ID: the refused form as it was sent, with its errors.
   */
  async function page(request: Request, s: Session, draft?: Refused) {
    const url = new URL(request.url)
    const owner = shell.ownerOf(s)
    // A refused form (?form=ID) as it was sent, or what was typed before the session ended (shell.requireForm).
    const refused = (await shell.refusedState<Refused>(request, owner)) ?? draft ?? null
    const createdId = url.searchParams.get('created')
    const made = createdId === null ? null : await flash.take<NewKey>(owner, 'key', createdId)
    const created = made ? createdCard(made.key, made.scopes, made.label) : ''
    const content = `<div class="keys-page"><h1>API</h1>${created}${createCard(s, refused?.form ?? { scopes: [...SCOPES], label: '' }, refused?.errors ?? {})}${await listCard(s)}${howTo}</div>`
    const notice: Notice | undefined = refused?.formError
      ? { kind: 'error', text: refused.formError }
      : createdId !== null && !made
        ? {
            kind: 'ok',
            text: 'Your new key was shown once, and is not shown again: linkbox keeps only its hash. If it was not copied, revoke it below and create another.',
          }
        : undefined
    return shell.render(request, s, { section: 'keys', title: made ? 'Your new API key' : 'API', content, notice })
  }

  function notFoundPage(request: Request, s: Session, message: string) {
    return shell.render(request, s, {
      section: 'keys',
      title: 'Key not found',
      status: 404,
      content: `<div class="keys-page"><h1>Key not found</h1><div class="card"><p>${e(message)}</p><p><a href="/dashboard/keys">Back to your keys</a></p></div></div>`,
    })
  }

  /** "Revoke this key?": what the key is, and a form that revokes it (like deleting a link or a webhook). */
  async function confirmPage(request: Request, s: Session, idText: string) {
    const k = KEY_ID.test(idText)
      ? (await accounts.keysOfAccount(s.accountId)).find((x) => x.id === Number(idText))
      : undefined
    if (!k) return notFoundPage(request, s, 'This account has no such key.')
    if (k.revoked) return notFoundPage(request, s, `The key ${k.prefix}… is revoked already.`)
    return shell.render(request, s, {
      section: 'keys',
      title: `Revoke ${k.prefix}…`,
      content: `<div class="keys-page"><p class="crumbs"><a href="/dashboard/keys">API</a> /</p>
<h1>Revoke this key?</h1>
<section class="card confirm">
<dl class="facts">
<dt>Key</dt><dd><code>${e(k.prefix)}…</code></dd>
<dt>Label</dt><dd>${k.label ? e(printable(k.label)) : '<span class="muted">—</span>'}</dd>
<dt>Scopes</dt><dd><span class="scope-tags">${k.scopes.map((sc) => `<span class="tag">${e(sc)}</span>`).join(' ')}</span></dd>
<dt>Created</dt><dd>${timeHtml(k.created)}</dd>
<dt>Last used</dt><dd>${timeHtml(k.last_used)}</dd>
</dl>
<p class="warn-text">Scripts that use it are refused from the moment it is revoked. This cannot be undone: to use the API again, create another key.</p>
<form method="post" action="/dashboard/keys/${k.id}/revoke" class="actions">
<input type="hidden" name="_csrf" value="${e(s.csrf)}">
<button type="submit" class="danger">Revoke the key</button><a href="/dashboard/keys">Cancel</a>
</form>
</section></div>`,
    })
  }

  /** A key's edit page: its scopes and label, with a refused edit's values and messages (?form=ID). */
  async function editPage(request: Request, s: Session, idText: string) {
    const k = KEY_ID.test(idText)
      ? (await accounts.keysOfAccount(s.accountId)).find((x) => x.id === Number(idText))
      : undefined
    if (!k) return notFoundPage(request, s, 'This account has no such key.')
    if (k.revoked) return notFoundPage(request, s, `The key ${k.prefix}… is revoked: it cannot be changed.`)
    const refused = await shell.refusedState<Refused>(request, shell.ownerOf(s))
    const form = refused?.form ?? { scopes: k.scopes, label: k.label }
    return shell.render(request, s, {
      section: 'keys',
      title: `Edit ${k.prefix}…`,
      notice: refused?.formError ? { kind: 'error', text: refused.formError } : undefined,
      content: `<div class="keys-page"><p class="crumbs"><a href="/dashboard/keys">API</a> /</p>
<h1>Edit the key <code>${e(k.prefix)}…</code></h1>
<section class="card" aria-labelledby="edit-key-heading">
<h2 id="edit-key-heading">Scopes and label</h2>
<p class="muted">The key itself stays the same: scripts that use it keep working with what it may still do. A scope taken away is refused from the next request.</p>
<form method="post" action="/dashboard/keys/${k.id}/edit" class="stack">
<input type="hidden" name="_csrf" value="${e(s.csrf)}">
${keyFields(form, refused?.errors ?? {})}
<div class="actions"><button type="submit">Save changes</button><a href="/dashboard/keys">Cancel</a></div>
</form>
</section></div>`,
    })
  }

  function createdCard(key: string, scopes: readonly Scope[], label: string): string {
    return `<section class="card key-created" aria-labelledby="created-heading">
<h2 id="created-heading">Your new API key${label ? `: ${e(label)}` : ''}</h2>
<p class="shown-once" role="status"><strong>Shown once.</strong> Copy it now and keep it somewhere safe: linkbox keeps only a hash of it and cannot show it again. If it is lost, revoke it and create another.</p>
<div class="secret"><input id="new-key" readonly value="${e(key)}" aria-label="Your new API key" spellcheck="false"><button type="button" class="copy" data-copy="new-key" hidden>Copy</button></div>
<p class="muted">Scopes: ${scopes.map((sc) => `<span class="tag">${e(sc)}</span>`).join(' ')}</p>
<h3>Try it</h3>
<div class="example"><pre id="curl-example"><code>${e(curlExample(base, key, scopes))}</code></pre><button type="button" class="copy secondary" data-copy="curl-example" aria-label="Copy the example command" hidden>Copy</button></div>
</section>`
  }

  return new Elysia({ name: 'dashboard-keys' })
    .get('/dashboard/keys', async ({ request }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      // Typed before the session ended (see shell.requireForm): the form shows it again.
      const d = shell.draft(request)
      if (d)
        return page(request, s, {
          form: { scopes: SCOPES.filter((sc) => d.getAll('scope').includes(sc)), label: d.get('label') ?? '' },
        })
      return page(request, s)
    })
    .post(
      '/dashboard/keys',
      async ({ request }) => {
        const s = await shell.requireForm(request, { keep: ['scope', 'label'] })
        if (s instanceof Response) return s
        const f = await shell.form(request, s)
        const owner = shell.ownerOf(s)
        // Sent before (a double click, back and send again): no second key; the first answer's page.
        const sent = tokens.of(f)
        const before = await tokens.used(sent, s.id)
        if (before !== undefined) return shell.repeated(before ?? PAGE)
        const chosen = f.getAll('scope').slice(0, SCOPES.length * 2)
        const scopes = SCOPES.filter((sc) => chosen.includes(sc))
        const form: KeyForm = { scopes, label: (f.get('label') ?? '').trim() }
        const refuse = (r: Omit<Refused, 'form'>) => shell.refused(owner, PAGE, { form, ...r } satisfies Refused)
        if (chosen.some((c) => !(SCOPES as readonly string[]).includes(c)))
          return refuse({ errors: { scopes: `Scopes are ${SCOPES.join(', ')}.` } })
        if (scopes.length === 0) return refuse({ errors: { scopes: 'Choose at least one scope.' } })
        // The page that shows the key once: its id is chosen now, so that the token's row can name it.
        const shownId = flash.newId()
        const shown = withParam(PAGE, 'created', shownId)
        try {
          const created = await accounts.createKeyForAccount(
            { accountId: s.accountId, scopes, label: form.label },
            { within: (tx) => tokens.claim(tx, sent, s.id, shown) },
            byAccount(s.caller, clientIp(request)),
          )
          await flash.put(
            owner,
            'key',
            { key: created.key, scopes: created.scopes, label: form.label } satisfies NewKey,
            shownId,
          )
          return shell.seeOther(shown)
        } catch (err) {
          if (err instanceof RepeatedForm) return shell.repeated(err.result ?? PAGE)
          if (!(err instanceof AppError) || err.status >= 500) throw err
          if (/label/i.test(err.message)) return refuse({ errors: { label: err.message } })
          return refuse({ formError: err.message })
        }
      },
      { parse: 'none' },
    )
    .get('/dashboard/keys/:id/edit', async ({ request, params }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      return editPage(request, s, params.id)
    })
    .post(
      '/dashboard/keys/:id/edit',
      async ({ request, params }) => {
        const page = `/dashboard/keys/${encodeURIComponent(params.id)}/edit`
        const s = await shell.require(request, page)
        if (s instanceof Response) return s
        const f = await shell.form(request, s)
        const chosen = f.getAll('scope').slice(0, SCOPES.length * 2)
        const form: KeyForm = {
          scopes: SCOPES.filter((sc) => chosen.includes(sc)),
          label: (f.get('label') ?? '').trim(),
        }
        const refuse = (r: Omit<Refused, 'form'>) =>
          shell.refused(shell.ownerOf(s), page, { form, ...r } satisfies Refused)
        if (chosen.some((c) => !(SCOPES as readonly string[]).includes(c)))
          return refuse({ errors: { scopes: `Scopes are ${SCOPES.join(', ')}.` } })
        if (form.scopes.length === 0) return refuse({ errors: { scopes: 'Choose at least one scope.' } })
        try {
          if (!KEY_ID.test(params.id)) throw new AppError(404, 'not_found', 'This account has no such key.')
          const r = await accounts.editKeyOfAccount(
            s.accountId,
            Number(params.id),
            { scopes: form.scopes, label: form.label },
            byAccount(s.caller, clientIp(request)),
          )
          return shell.seeOther(PAGE, {
            kind: 'ok',
            text: `The key ${r.prefix}… is changed: its scopes are ${r.scopes.join(', ')}.`,
          })
        } catch (err) {
          if (!(err instanceof AppError) || err.status >= 500) throw err
          if (err.status === 404) return notFoundPage(request, s, err.message)
          if (/label/i.test(err.message)) return refuse({ errors: { label: err.message } })
          return refuse({ formError: err.message })
        }
      },
      { parse: 'none' },
    )
    .get('/dashboard/keys/:id/revoke', async ({ request, params }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      return confirmPage(request, s, params.id)
    })
    .post(
      '/dashboard/keys/:id/revoke',
      async ({ request, params }) => {
        const s = await shell.require(request)
        if (s instanceof Response) return s
        await shell.form(request, s)
        try {
          if (!KEY_ID.test(params.id)) throw new AppError(404, 'not_found', 'This account has no such key.')
          const r = await accounts.revokeKeyOfAccount(
            s.accountId,
            Number(params.id),
            byAccount(s.caller, clientIp(request)),
          )
          return shell.seeOther('/dashboard/keys', {
            kind: 'ok',
            text: `Revoked the key ${r.prefix}…: it is refused from now on.`,
          })
        } catch (err) {
          if (!(err instanceof AppError) || err.status !== 404) throw err
          return notFoundPage(request, s, err.message)
        }
      },
      { parse: 'none' },
    )
}
