// GET /api/docs (a page for people, rendered here: no third-party CDN) and /api/docs/openapi.json. Both are
// made from the method declarations: the parameter table's type, required and rule columns are read from
// the same schemas the /api pipeline checks requests against, so the page cannot promise other rules.
import type { TSchema } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import docsTpl from '../../assets/docs.html' with { type: 'text' }
import { answerCodes, type ApiMethod } from '../http/api'
import { openApiDocument, type OpenApiOptions } from '../http/openapi'
import type { ApiParam } from '../http/schema'
import { escapeHtml, page } from './render'

type Schema = Record<string, any>

/** Escaped, with break opportunities after punctuation and every 12 characters of a long run: patterns and
 *  long values would otherwise widen the page past a phone's screen. */
export function breakable(text: string): string {
  return text
    .split(/(?<=[/,|\])\-:;?])/)
    .flatMap((part) => part.match(/.{1,12}/gsu) ?? [])
    .map(escapeHtml)
    .join('<wbr>')
}
const code = (v: unknown) => `<code>${breakable(typeof v === 'string' ? v : JSON.stringify(v))}</code>`

/** "string", "integer", "string or integer", "array of LinkRecord", "LinkRecord or null". */
export function typeText(s: Schema): string {
  if (s.anyOf) return (s.anyOf as Schema[]).map(typeText).join(' or ')
  if (s.type === 'array') return `array of ${s.items ? typeText(s.items) : 'values'}`
  if (s.title) return String(s.title)
  if (s.const !== undefined) return JSON.stringify(s.const)
  return String(s.type ?? 'any')
}

/** The rule of a value, in words, from its schema (HTML: values in <code>). */
export function ruleText(s: Schema): string[] {
  const parts: string[] = []
  if (s.anyOf) for (const b of s.anyOf as Schema[]) parts.push(...ruleText(b).map((r) => `${typeText(b)}: ${r}`))
  if (s.enum) parts.push(`one of ${(s.enum as unknown[]).map(code).join(', ')}`)
  if (s.format === 'date') parts.push('a date, YYYY-MM-DD')
  else if (s.format === 'date-time') parts.push('a time, ISO 8601 UTC')
  else if (s.format === 'uri') parts.push('a URL')
  const { minLength: lo, maxLength: hi } = s
  if (lo !== undefined && hi !== undefined) parts.push(lo === hi ? `${lo} characters` : `${lo} to ${hi} characters`)
  else if (hi !== undefined) parts.push(`at most ${hi} characters`)
  else if (lo !== undefined && lo > 1) parts.push(`at least ${lo} characters`)
  else if (lo === 1) parts.push('not empty')
  if (s.pattern !== undefined) parts.push(`matching ${code(s.pattern)}`)
  if (s.minimum !== undefined && s.maximum !== undefined) parts.push(`from ${s.minimum} to ${s.maximum}`)
  else if (s.minimum !== undefined) parts.push(`at least ${s.minimum}`)
  else if (s.maximum !== undefined) parts.push(`at most ${s.maximum}`)
  return parts
}

const capitalised = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

function paramRow(p: ApiParam): string {
  const s = p.schema as Schema
  const rules = ruleText(s)
  if (p.caseInsensitive) rules.push('any letter case')
  if (s.default !== undefined) rules.push(`default ${code(s.default)}`)
  if (p.absent?.includes('') && !p.required) rules.push('empty = the default')
  const text = [s.description ? escapeHtml(String(s.description)) : '', capitalised(rules.join('; '))]
    .filter(Boolean)
    .join('. ')
  // Two columns (the name with its type and whether it is required, then the rule) fit a phone's screen.
  const kind = `${escapeHtml(typeText(s))}${p.required ? ', <strong>required</strong>' : ', optional'}`
  return `<tr><td><code>${escapeHtml(p.name)}</code><br><span class="muted">${kind}</span></td><td>${text}</td></tr>`
}

/** The fields of the `return` object, one per line. */
function returnHtml(schema: TSchema | undefined): string {
  const s = schema as Schema | undefined
  if (!s?.properties) return ''
  const required = new Set<string>(s.required ?? [])
  const items = Object.entries(s.properties as Record<string, Schema>).map(([name, f]) => {
    const rules = f.anyOf ? [] : ruleText(f).filter((r) => !r.startsWith('matching'))
    const description = f.description ?? (f.anyOf as Schema[] | undefined)?.find((b) => b.description)?.description
    const notes = [description ? escapeHtml(String(description)) : '', capitalised(rules.join('; '))].filter(Boolean).join('. ')
    return `<li><code>${escapeHtml(name)}</code> <span class="muted">${escapeHtml(typeText(f))}${required.has(name) ? '' : ', optional'}</span>${notes ? `: ${notes}` : ''}</li>`
  })
  return `<p>Answer: <code>return</code> is ${s.title ? `a ${escapeHtml(String(s.title))}` : 'an object'}:</p><ul>${items.join('')}</ul>`
}

function methodHtml(m: ApiMethod): string {
  const rows = m.params.map(paramRow).join('')
  const table = rows
    ? `<table class="params"><thead><tr><th>Parameter</th><th>Rule</th></tr></thead><tbody>${rows}</tbody></table>`
    : '<p class="muted">No parameters.</p>'
  const key = m.key === 'required' ? 'key required' : 'key optional'
  const errors = Object.entries(answerCodes(m))
    .map(([status, codes]) => `${status} ${codes.map(code).join(', ')}`)
    .join('; ')
  const other = m.otherContent ? `<p>${escapeHtml(m.otherContent.description)}: ${m.otherContent.types.map(code).join(' or ')}.</p>` : ''
  return `<section class="method"><h2><span class="verb">${m.verb}</span> <code>${escapeHtml(m.path)}</code></h2>
<p>${escapeHtml(m.summary)} <span class="muted">(${key}${m.scope ? `, scope <code>${m.scope}</code>` : ''}${m.marketplace ? ', marketplace route' : ''})</span></p>
${m.description ? `<p>${escapeHtml(m.description)}</p>` : ''}${table}${returnHtml(m.returns)}${other}<p class="muted">Errors: ${errors}.</p></section>`
}

export function createDocsRoutes(deps: { methods: ApiMethod[] } & OpenApiOptions) {
  // Made with the first request for them, not at start-up (tens of ms before `serve` could answer).
  let json: string | undefined
  let methods: string | undefined
  return new Elysia({ name: 'docs' })
    .get('/api/docs', () => page(docsTpl as unknown as string, { methods: (methods ??= deps.methods.map(methodHtml).join('\n')) }, { title: 'API' }))
    .get('/api/docs/openapi.json', () =>
      new Response((json ??= JSON.stringify(openApiDocument(deps.methods, deps), null, 2)), {
        headers: { 'content-type': 'application/json; charset=utf-8', 'access-control-allow-origin': '*' },
      }),
    )
}
