// GET /api/docs (a page for people, rendered here: no third-party CDN) and /api/docs/openapi.json.
import { Elysia } from 'elysia'
import docsTpl from '../../assets/docs.html' with { type: 'text' }
import type { ApiMethod } from '../http/api'
import { openApiDocument } from '../http/openapi'
import { escapeHtml, page } from './render'

function methodHtml(m: ApiMethod): string {
  const rows = m.params
    .map((p) => `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${p.required ? 'yes' : 'no'}</td><td>${escapeHtml(p.type ?? 'string')}</td><td>${escapeHtml(p.description)}</td></tr>`)
    .join('')
  const table = rows
    ? `<table><thead><tr><th>Parameter</th><th>Required</th><th>Type</th><th>Rule</th></tr></thead><tbody>${rows}</tbody></table>`
    : '<p class="muted">No parameters.</p>'
  const key = m.key === 'required' ? 'key required' : 'key optional'
  return `<section class="method"><h2><span class="verb">${m.verb}</span> <code>${escapeHtml(m.path)}</code></h2>
<p>${escapeHtml(m.summary)} <span class="muted">(${key}${m.scope ? `, scope <code>${m.scope}</code>` : ''}${m.marketplace ? ', marketplace route' : ''})</span></p>${table}</section>`
}

export function createDocsRoutes(deps: { methods: ApiMethod[]; baseUrl: string; version: string }) {
  const json = JSON.stringify(openApiDocument(deps.methods, { baseUrl: deps.baseUrl, version: deps.version }), null, 2)
  const methods = deps.methods.map(methodHtml).join('\n')
  return new Elysia({ name: 'docs' })
    .get('/api/docs', () => page(docsTpl as unknown as string, { methods }, { title: 'API' }))
    .get('/api/docs/openapi.json', () =>
      new Response(json, { headers: { 'content-type': 'application/json; charset=utf-8', 'access-control-allow-origin': '*' } }),
    )
}
