// An SVG logo rebuilt from an allow-list before resvg sees it: parsed by saxes, written anew with only bounded,
// local shapes, so nothing can read a file, fetch or multiply without end (ARCHITECTURE, qr).
import { SaxesParser, type SaxesTagNS } from 'saxes'
import { invalidParameter } from '../kernel/errors'
import { SVG_MAX_DEPTH, SVG_MAX_ELEMENTS, SVG_MAX_LAYERS } from './svg-limits'

const SVG_NS = 'http://www.w3.org/2000/svg'
const XLINK_NS = 'http://www.w3.org/1999/xlink'
const XML_NS = 'http://www.w3.org/XML/1998/namespace'

const badLogo = (rule: string) => invalidParameter('logo', rule)
const tooMany = () =>
  badLogo(`an SVG logo may draw at most ${SVG_MAX_ELEMENTS} elements (each <use> copy counted); this one has more`)
/** Style rules are matched against every element: both bounded, so that cleaning stays milliseconds on the request's thread. */
export const SVG_MAX_RULES = 500

// `a` and `switch` are kept as plain groups (their link or conditions dropped).
const AS_GROUP = new Set(['a', 'switch'])
const ELEMENTS = new Set([
  'svg',
  'g',
  'defs',
  'symbol',
  'use',
  'path',
  'rect',
  'circle',
  'ellipse',
  'line',
  'polyline',
  'polygon',
  'linearGradient',
  'radialGradient',
  'stop',
  'clipPath',
  'text',
  'tspan',
  'style',
])
const GRADIENTS = new Set(['linearGradient', 'radialGradient'])
const TEXT_HOLDERS = new Set(['text', 'tspan'])

const GEOMETRY = new Set([
  'x',
  'y',
  'width',
  'height',
  'rx',
  'ry',
  'cx',
  'cy',
  'r',
  'fx',
  'fy',
  'fr',
  'x1',
  'y1',
  'x2',
  'y2',
  'points',
  'd',
  'viewBox',
  'preserveAspectRatio',
  'transform',
  'gradientTransform',
  'gradientUnits',
  'spreadMethod',
  'offset',
  'clipPathUnits',
  'dx',
  'dy',
  'rotate',
  'textLength',
  'lengthAdjust',
  'pathLength',
  'id',
])
/** Properties, as attributes or in `style` / a style sheet (not dashes: a tiny dash on a long path is millions of them). */
const PROPERTIES = new Set([
  'fill',
  'fill-opacity',
  'fill-rule',
  'stroke',
  'stroke-width',
  'stroke-opacity',
  'stroke-linecap',
  'stroke-linejoin',
  'stroke-miterlimit',
  'opacity',
  'stop-color',
  'stop-opacity',
  'clip-path',
  'clip-rule',
  'display',
  'visibility',
  'color',
  'font-family',
  'font-size',
  'font-weight',
  'font-style',
  'font-variant',
  'font-stretch',
  'text-anchor',
  'dominant-baseline',
  'alignment-baseline',
  'baseline-shift',
  'letter-spacing',
  'word-spacing',
  'text-decoration',
  'writing-mode',
  'paint-order',
  'shape-rendering',
  'text-rendering',
  'color-interpolation',
  'vector-effect',
  'transform',
])
/** Properties that may name another element: `url(#id)` of this kind, with an optional fallback colour. */
const REFERRING: Record<string, Set<string>> = {
  fill: GRADIENTS,
  stroke: GRADIENTS,
  'clip-path': new Set(['clipPath']),
}
const LOCAL_URL = /^url\(\s*(['"]?)#([^'"()\s\\]+)\1\s*\)\s*([#\w\s.,%-]*|[a-z]+\([\d\s.,%]*\))$/i
const HAS_URL = /url\s*\(|\\|[\0-\x08\x0b\x0c\x0e-\x1f]/i
const ID_REF = /^\s*#([^\s'"()\\]+)\s*$/

interface El {
  name: string
  attrs: Map<string, string>
  /** Properties from `style` and the style sheet, applied over the attributes. */
  classes: string[]
  style: string
  href?: string
  children: (El | string)[]
}

/** `prop: value; …` → [prop, value] pairs (a value with `;` inside quotes is not a logo's concern). */
function declarations(text: string): [string, string][] {
  const out: [string, string][] = []
  for (const part of text.split(';')) {
    const colon = part.indexOf(':')
    if (colon < 0) continue
    const value = part
      .slice(colon + 1)
      .replace(/!\s*important\s*$/i, '')
      .trim()
    out.push([part.slice(0, colon).trim().toLowerCase(), value])
  }
  return out
}

interface Rule {
  match: (el: El) => boolean
  specificity: number
  order: number
  decls: [string, string][]
}

/** The rules of a style sheet whose selectors are simple (`rect`, `.a`, `#b`, `g.c`, `*`); others are skipped. */
function styleRules(css: string, into: Rule[]) {
  const text = css.replace(/\/\*[\s\S]*?\*\//g, '')
  let at = 0
  while (at < text.length) {
    const open = text.indexOf('{', at)
    if (open < 0) break
    const selectors = text.slice(at, open).trim()
    // The block's end, counting braces (an at-rule such as @media has blocks inside).
    let depth = 1
    let end = open + 1
    for (; end < text.length && depth > 0; end++) depth += text[end] === '{' ? 1 : text[end] === '}' ? -1 : 0
    const body = text.slice(open + 1, end - 1)
    at = end
    if (selectors.startsWith('@') || body.includes('{')) continue
    for (const selector of selectors.split(',').map((s) => s.trim())) {
      const m = /^(\*|[A-Za-z][\w-]*)?((?:[.#][\w-]+)*)$/.exec(selector)
      if (!m || !selector) continue
      const type = m[1] && m[1] !== '*' ? m[1] : null
      const parts = m[2]!.match(/[.#][\w-]+/g) ?? []
      const ids = parts.filter((p) => p[0] === '#').map((p) => p.slice(1))
      const classes = parts.filter((p) => p[0] === '.').map((p) => p.slice(1))
      into.push({
        match: (el) =>
          (!type || el.name === type) &&
          ids.every((id) => el.attrs.get('id') === id) &&
          classes.every((c) => el.classes.includes(c)),
        specificity: ids.length * 10000 + classes.length * 100 + (type ? 1 : 0),
        order: into.length,
        decls: declarations(body),
      })
    }
  }
}

/** Parses the text, keeping the allowed elements and their attributes as read. Throws the 400 on malformed XML. */
function parse(text: string): { root: El; sheets: string[] } {
  const parser = new SaxesParser({ xmlns: true, position: false })
  const stack: (El | null)[] = []
  const sheets: string[] = []
  let root: El | null = null
  let inStyle = false
  let kept = 0
  parser.on('doctype', (doctype) => {
    if (/<!ENTITY/i.test(doctype)) throw badLogo('an SVG logo may not declare XML entities')
    if (doctype.includes('[')) throw badLogo('an SVG logo may not have an internal DTD subset')
  })
  parser.on('opentag', (tag: SaxesTagNS) => {
    const parent = stack.length ? stack[stack.length - 1] : undefined
    if (stack.length >= SVG_MAX_DEPTH) throw badLogo(`an SVG logo may nest elements at most ${SVG_MAX_DEPTH} deep`)
    const local = AS_GROUP.has(tag.local) ? 'g' : tag.local
    // No namespace counts as SVG: a hand-written <svg> without xmlns is common, and means no other vocabulary.
    const svg = tag.uri === SVG_NS || tag.uri === ''
    if (parent === undefined && !(svg && local === 'svg')) throw badLogo('its root element must be <svg>')
    // A dropped element drops what is inside it (null on the stack).
    const keep = parent !== null && svg && ELEMENTS.has(local) && (local !== 'svg' || parent === undefined)
    if (!keep) {
      stack.push(null)
      return
    }
    // Each kept element is drawn at least once: past the bound the logo is refused before any more work.
    if (++kept > SVG_MAX_ELEMENTS) throw tooMany()
    const el: El = { name: local, attrs: new Map(), classes: [], style: '', children: [] }
    for (const a of Object.values(tag.attributes)) {
      if (a.uri === XLINK_NS && a.local === 'href') el.href ??= a.value
      else if (a.uri === XML_NS && a.local === 'space' && (a.value === 'preserve' || a.value === 'default'))
        el.attrs.set('xml:space', a.value)
      else if (a.uri !== '') continue
      else if (a.local === 'href')
        el.href = a.value // SVG 2's href wins over xlink:href
      else if (a.local === 'class') el.classes = a.value.split(/\s+/).filter(Boolean)
      else if (a.local === 'style') el.style = a.value
      else if (GEOMETRY.has(a.local) || PROPERTIES.has(a.local)) el.attrs.set(a.local, a.value)
    }
    if (parent) parent.children.push(el)
    else root = el
    inStyle = local === 'style'
    stack.push(el)
  })
  parser.on('closetag', () => {
    stack.pop()
    inStyle = false
  })
  const onText = (t: string) => {
    const el = stack[stack.length - 1]
    if (!el) return
    if (inStyle) sheets.push(t)
    else if (TEXT_HOLDERS.has(el.name)) el.children.push(t)
  }
  parser.on('text', onText)
  parser.on('cdata', onText)
  try {
    parser.write(text).close()
  } catch (err) {
    if (err instanceof Error && 'status' in err) throw err
    throw badLogo(
      `it is not well-formed XML (${err instanceof Error ? err.message.replace(/^undefined:\s*/, '').slice(0, 120) : 'unreadable'})`,
    )
  }
  if (!root) throw badLogo('its root element must be <svg>')
  return { root, sheets }
}

const escapeXml = (s: string) =>
  s.replace(
    /[&<>"\t\n\r]/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\t': '&#9;', '\n': '&#10;', '\r': '&#13;' })[c]!,
  )

/**
 * The SVG text resvg may draw, rebuilt from `text` (see the top of this file). Throws a 400 naming logo for
 * what is not XML, entities, an internal DTD subset, nesting over SVG_MAX_DEPTH, a `use` that refers to
 * itself, or more than SVG_MAX_ELEMENTS elements to draw once `use` copies are counted.
 */
export function cleanSvg(text: string): string {
  const { root, sheets } = parse(text)
  const rules: Rule[] = []
  for (const css of sheets) styleRules(css, rules)
  if (rules.length > SVG_MAX_RULES)
    throw badLogo(`an SVG logo's style sheet may have at most ${SVG_MAX_RULES} rules; this one has ${rules.length}`)
  rules.sort((a, b) => a.specificity - b.specificity || a.order - b.order)

  const byId = new Map<string, El>()
  const all: El[] = []
  const collect = (el: El) => {
    all.push(el)
    const id = el.attrs.get('id')
    if (id !== undefined && !byId.has(id)) byId.set(id, el)
    for (const c of el.children) if (typeof c !== 'string') collect(c)
  }
  collect(root)
  const target = (ref: string | undefined, kinds?: Set<string>) => {
    const m = ref === undefined ? null : ID_REF.exec(ref)
    const el = m ? byId.get(m[1]!) : undefined
    return el && el.name !== 'style' && (!kinds || kinds.has(el.name)) ? el : undefined
  }

  // Properties: attributes, then the style sheet's rules, then the style attribute; each value checked.
  const props = new Map<El, Map<string, string>>()
  for (const el of all) {
    const out = new Map<string, string>()
    const set = (name: string, value: string, fromCss: boolean) => {
      if (fromCss ? !PROPERTIES.has(name) : !GEOMETRY.has(name) && !PROPERTIES.has(name) && name !== 'xml:space') return
      if (name === 'id') {
        if (/^[^\s'"()\\<>&]+$/.test(value)) out.set(name, value)
        return
      }
      if (!HAS_URL.test(value)) return void out.set(name, value)
      const kinds = REFERRING[name]
      const local = kinds ? LOCAL_URL.exec(value.trim()) : null
      const m = local && !HAS_URL.test(local[3]!) ? local : null
      // A paint that refers to nothing is none (SVG 2), unless it names a fallback; a clip path to nothing is no clip.
      const fallback = m?.[3]!.trim()
      if (m && target(`#${m[2]}`, kinds)) out.set(name, `url(#${m[2]})${fallback ? ` ${fallback}` : ''}`)
      else if (name === 'clip-path' || !kinds) out.delete(name)
      else out.set(name, fallback || 'none')
    }
    for (const [name, value] of el.attrs) set(name, value, false)
    for (const rule of rules) if (rule.match(el)) for (const [n, v] of rule.decls) set(n, v, true)
    for (const [n, v] of declarations(el.style)) set(n, v, true)
    props.set(el, out)
  }

  // `use` copies its target: count what is drawn with the copies, refusing cycles and too much.
  const layers = all.filter((el) => {
    const p = props.get(el)!
    const opacity = p.get('opacity')
    return p.has('clip-path') || (opacity !== undefined && Number.parseFloat(opacity) !== 1)
  }).length
  if (layers > SVG_MAX_LAYERS)
    throw badLogo(
      `an SVG logo may have at most ${SVG_MAX_LAYERS} elements with opacity or a clip path; this one has ${layers}`,
    )
  const cost = new Map<El, number>()
  const counting = new Set<El>()
  const count = (el: El): number => {
    const known = cost.get(el)
    if (known !== undefined) return known
    if (counting.has(el))
      throw badLogo('a <use> or clip path in the SVG logo refers to itself or to an element that contains it')
    counting.add(el)
    let n = 1
    // A use draws its target again, a clip path its clipPath's content: both count (and may not loop).
    const copied = el.name === 'use' ? target(el.href) : undefined
    if (copied) n += count(copied)
    const clip = /^url\(#(.+)\)$/.exec(props.get(el)!.get('clip-path') ?? '')
    const clipTarget = clip ? target(`#${clip[1]}`, REFERRING['clip-path']) : undefined
    if (clipTarget) n += count(clipTarget)
    for (const c of el.children) if (typeof c !== 'string') n += count(c)
    counting.delete(el)
    if (n > SVG_MAX_ELEMENTS) throw tooMany()
    cost.set(el, n)
    return n
  }
  count(root)

  const write = (el: El): string => {
    if (el.name === 'style') return ''
    let href = ''
    if (el.name === 'use') {
      const t = target(el.href)
      if (!t) return '' // a use of nothing draws nothing
      href = ` href="#${escapeXml(t.attrs.get('id')!)}"`
    } else if (GRADIENTS.has(el.name)) {
      // A gradient may take its stops from another; a chain that loops is cut.
      const seen = new Set<El>([el])
      let t = target(el.href, GRADIENTS)
      const first = t
      while (t && !seen.has(t)) {
        seen.add(t)
        t = target(t.href, GRADIENTS)
      }
      if (first && !t) href = ` href="#${escapeXml(first.attrs.get('id')!)}"`
    }
    let attrs = el.name === 'svg' && el === root ? ` xmlns="${SVG_NS}"` : ''
    for (const [name, value] of props.get(el)!) {
      // Only the element references were resolved to keeps an id: a second one could be resolved otherwise by resvg.
      if (name !== 'id' || byId.get(value) === el) attrs += ` ${name}="${escapeXml(value)}"`
    }
    const inner = el.children.map((c) => (typeof c === 'string' ? escapeXml(c) : write(c))).join('')
    return `<${el.name}${attrs}${href}>${inner}</${el.name}>`
  }
  return write(root)
}
