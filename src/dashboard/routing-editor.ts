// The editor of a link's redirect rules and A/B split (both link forms): numbered rows of plain fields —
// device boxes, lists of systems, countries and languages by name, a destination; a split's destinations
// with weights and their shares. It works without JavaScript (blank rows to fill, one rule a row);
// assets/app-rules.js adds, removes and moves rows and keeps the shares and the total's warning live.
import { DEVICES, MAX_RULES, MAX_SPLIT, MAX_WEIGHT, MIN_SPLIT, OS_NAMES } from '../links'
import { escapeHtml as e } from '../web/render'
import { schemeAttrs, schemeHint } from './form-help'
import { type Routing, type RuleRow, type SplitRow, shares } from './routing-form'

/** A form's problems by field id (the editor's fields and the rest of the link forms'). */
export type FieldErrors = Record<string, string>

/** Blank rows added under the filled ones, for a page without JavaScript to fill. */
const BLANK_ROWS = 2
// Codes a region list gives that are no country a visitor is located in (unions, pseudo-regions, old codes).
const NOT_COUNTRIES = new Set(
  'AN BU CS DD DY EU EZ FQ FX HV JT MI NH NQ NT PC PU PZ QO QU RH SU TP UK UN VD WK XA XB YD YU ZR ZZ'.split(' '),
)
// Old language codes that name a language again under its current code (iw is he, mo is ro).
const OLD_LANGUAGES = new Set('in iw ji jw mo sh'.split(' '))
const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'

let countries: [string, string][] | undefined
let languages: [string, string][] | undefined
/** [code, name] of every name the runtime knows among two-letter codes, by name (made at the first use). */
function namedCodes(type: 'region' | 'language'): [string, string][] {
  const names = new Intl.DisplayNames(['en'], { type, fallback: 'none' })
  const found: [string, string][] = []
  for (const a of LETTERS)
    for (const b of LETTERS) {
      const code = type === 'region' ? a + b : (a + b).toLowerCase()
      let name: string | undefined
      try {
        name = names.of(code)
      } catch {}
      const old = type === 'region' ? NOT_COUNTRIES.has(code) : OLD_LANGUAGES.has(code)
      if (name && name !== code && !old && !found.some(([, n]) => n === name)) found.push([code, name])
    }
  return found.sort((x, y) => x[1].localeCompare(y[1], 'en'))
}

/** Options of a list, the chosen ones selected; chosen values the list lacks (sent by the API) come first. */
function options(list: readonly (readonly [string, string])[], chosen: readonly string[], fold: (v: string) => string) {
  const known = new Set(list.map(([v]) => fold(v)))
  const extra = chosen.filter((c) => !known.has(fold(c))).map((c) => [c, c] as const)
  const picked = new Set(chosen.map(fold))
  return [...extra, ...list]
    .map(([v, label]) => `<option value="${e(v)}"${picked.has(fold(v)) ? ' selected' : ''}>${e(label)}</option>`)
    .join('')
}

const err = (errors: FieldErrors, id: string) =>
  errors[id] ? `<span class="error" id="${id}-error">${e(errors[id])}</span>` : ''
const described = (errors: FieldErrors, id: string, hint = '') => {
  const ids = [hint, errors[id] ? `${id}-error` : ''].filter(Boolean).join(' ')
  return `${ids ? ` aria-describedby="${ids}"` : ''}${errors[id] ? ' aria-invalid="true"' : ''}`
}

/** The tools of a row (hidden until the script shows them: they need it). */
const tools = (what: string, n: number) => `<div class="row-tools" hidden>
<button type="button" class="secondary small" data-move="-1" aria-label="Move ${what} ${n} up">↑ Up</button>
<button type="button" class="secondary small" data-move="1" aria-label="Move ${what} ${n} down">↓ Down</button>
<button type="button" class="secondary small" data-remove aria-label="Remove ${what} ${n}">Remove</button>
</div>`

function ruleRow(r: RuleRow, k: number, errors: FieldErrors): string {
  const id = (c: string) => `rule_${k}_${c}`
  const list = (
    c: 'os' | 'country' | 'language',
    label: string,
    all: readonly (readonly [string, string])[],
    size: number,
    fold: (v: string) => string,
  ) => {
    // What is chosen, named under the list (a long list shows only a few of its lines).
    const names = new Map(all.map(([v, n]) => [fold(v), n]))
    const chosen = r[c].map((v) => names.get(fold(v)) ?? v).join(', ')
    return `<div class="field"><label for="${id(c)}">${label}</label>
<select id="${id(c)}" name="${id(c)}" multiple size="${size}" data-chosen${described(errors, id(c), `${id(c)}-chosen rules-pick-hint`)}>${options(all, r[c], fold)}</select>
<span class="hint chosen" id="${id(c)}-chosen">${chosen ? `Chosen: ${e(chosen)}` : 'Any'}</span>${err(errors, id(c))}</div>`
  }
  const boxes = DEVICES.map(
    (d) =>
      `<label class="choice"><input type="checkbox" name="${id('device')}" value="${d}"${r.device.includes(d) ? ' checked' : ''}> ${d[0]!.toUpperCase()}${d.slice(1)}</label>`,
  ).join('')
  return `<li class="rule-row" data-row="rule">
<fieldset${described(errors, `rule_${k}`)}><legend>Rule <span data-n>${k + 1}</span></legend>${err(errors, `rule_${k}`)}
<div class="rule-conds">
<fieldset class="devices"${described(errors, id('device'))}><legend>Devices</legend>${boxes}${err(errors, id('device'))}</fieldset>
${list(
  'os',
  'Systems',
  OS_NAMES.map((o) => [o, o] as const),
  4,
  (v) => v.toLowerCase(),
)}
${list('country', 'Countries', (countries ??= namedCodes('region')), 5, (v) => v.toUpperCase())}
${list('language', 'Languages', (languages ??= namedCodes('language')), 5, (v) => v.toLowerCase())}
</div>
<div class="field"><label for="${id('url')}">Send them to</label>
<input id="${id('url')}" name="${id('url')}" type="text" inputmode="url" autocomplete="off" spellcheck="false" autocapitalize="off" maxlength="4096" placeholder="https://m.example.com/" value="${e(r.url)}" data-scheme${schemeAttrs(id('url'), !!errors[id('url')])}>${schemeHint(id('url'))}${err(errors, id('url'))}</div>
${tools('rule', k + 1)}
</fieldset></li>`
}

function splitRow(a: SplitRow, k: number, share: string, errors: FieldErrors): string {
  const id = (c: string) => `split_${k}_${c}`
  return `<li class="split-row" data-row="split">
<div class="field grow"><label for="${id('url')}">Destination <span data-n>${k + 1}</span></label>
<input id="${id('url')}" name="${id('url')}" type="text" inputmode="url" autocomplete="off" spellcheck="false" autocapitalize="off" maxlength="4096" placeholder="https://example.com/a" value="${e(a.url)}" data-scheme${schemeAttrs(id('url'), !!errors[id('url')])}>${schemeHint(id('url'))}${err(errors, id('url'))}</div>
<div class="field weight"><label for="${id('weight')}">Weight</label>
<input id="${id('weight')}" name="${id('weight')}" type="number" inputmode="numeric" min="1" max="${MAX_WEIGHT}" step="1" autocomplete="off" value="${e(a.weight)}" data-weight${described(errors, id('weight'), `${id('share')}`)}>${err(errors, id('weight'))}</div>
<output class="share" id="${id('share')}" for="${id('weight')}">${share ? `${share} of visitors` : ''}</output>
${tools('destination', k + 1)}
</li>`
}

/** What the total of the weights says: their sum, and that it is not 100 when it is not (a warning, not a refusal). */
export function totalText(split: readonly SplitRow[]): { text: string; warn: boolean } {
  const filled = split.filter((a) => a.url || a.weight)
  if (filled.length === 0)
    return { text: 'No split: every visitor no rule sends elsewhere goes to the destination URL.', warn: false }
  const { total } = shares(filled)
  if (total === 100) return { text: 'The weights add up to 100.', warn: false }
  return {
    text: `The weights add up to ${total}, not 100: each destination gets its weight’s share of ${total} (shown beside it).`,
    warn: true,
  }
}

/** The rules editor and the split editor of a form (ids: rules, rules-error, split, split-error, split-total). */
export function routingEditor(v: Routing, errors: FieldErrors): string {
  const rules = [...v.rules]
  for (let i = 0; i < BLANK_ROWS && rules.length < MAX_RULES; i++)
    rules.push({ url: '', device: [], os: [], country: [], language: [] })
  const split = [...v.split]
  while (split.length < Math.max(MIN_SPLIT, v.split.length + BLANK_ROWS) && split.length < MAX_SPLIT)
    split.push({ url: '', weight: '' })
  const { percent } = shares(split)
  const total = totalText(v.split)
  return `<input type="hidden" name="routing_editor" value="1">
<fieldset class="routing span-all" id="rules"${described(errors, 'rules', 'rules-hint')}><legend>Redirect rules <span class="optional">(optional)</span></legend>
<p class="hint" id="rules-hint">The first rule whose conditions all fit a visitor sends them to its destination; a condition with several values fits any of them. Up to ${MAX_RULES} rules; a rule left empty is dropped.</p>
<p class="hint" id="rules-pick-hint">In a list, hold Ctrl (⌘ on a Mac) or Shift to choose several.</p>${err(errors, 'rules')}
<ol class="rule-rows" data-rows="rule" data-max="${MAX_RULES}">${rules.map((r, k) => ruleRow(r, k, errors)).join('\n')}</ol>
<button type="button" class="secondary small" data-add="rule" hidden>Add a rule</button>
</fieldset>
<fieldset class="routing span-all" id="split"${described(errors, 'split', 'split-hint')}><legend>A/B split <span class="optional">(optional)</span></legend>
<p class="hint" id="split-hint">${MIN_SPLIT} to ${MAX_SPLIT} destinations with weights from 1 to ${MAX_WEIGHT}: visitors no rule sends elsewhere are shared out by weight, each keeping theirs all day. Leave every row empty for no split.</p>${err(errors, 'split')}
<ol class="split-rows" data-rows="split" data-max="${MAX_SPLIT}">${split.map((a, k) => splitRow(a, k, percent[k] ?? '', errors)).join('\n')}</ol>
<p class="split-total${total.warn ? ' warn' : ''}" id="split-total" role="status">${e(total.text)}</p>
<button type="button" class="secondary small" data-add="split" hidden>Add a destination</button>
</fieldset>`
}
