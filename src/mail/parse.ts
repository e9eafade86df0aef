// A received message → the fields the API shows (mailparser does the MIME work), plus the links people
// look for in sign-up mail. Everything here comes from strangers: lengths are bounded, nothing is trusted.
import he from 'he'
import type { AddressObject, EmailAddress } from 'mailparser'
import type { Readable } from 'node:stream'
import type { ParsedFields, Person } from './storage/contract'

export const INTRO_CHARS = 160
const MAX_PEOPLE = 100
const MAX_LINKS = 500
const MAX_LINK_CHARS = 4096
/** hrefs and image sources kept from one HTML body, each: its links are at most MAX_LINKS anyway. */
const MAX_HTML_URLS = 10_000
const MAX_SUBJECT_CHARS = 2000
const MAX_NAME_CHARS = 300
const MAX_FILENAME_CHARS = 255

export interface ParsedMessage {
  fields: ParsedFields
  /** The decoded bytes of each attachment, in the order of fields.attachments (part 1, 2, …). */
  parts: Uint8Array[]
}

const clip = (s: string, n: number) => ([...s].length > n ? [...s].slice(0, n).join('') : s)
// Control characters would let a header value forge lines where it is shown; line breaks in a display name
// mean nothing.
const oneLine = (s: string) => s.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim()

function people(field: AddressObject | AddressObject[] | undefined): Person[] {
  const out: Person[] = []
  const add = (a: EmailAddress) => {
    if (out.length >= MAX_PEOPLE) return
    if (a.group) return a.group.forEach(add)
    out.push({ address: clip(oneLine(a.address ?? ''), 320), name: clip(oneLine(a.name ?? ''), MAX_NAME_CHARS) })
  }
  for (const object of field ? (Array.isArray(field) ? field : [field]) : []) object.value.forEach(add)
  return out
}

/**
 * The first ≤160 characters of the text, whitespace folded: what a list shows under the subject. Only the words
 * it needs are read: folding and spreading a whole text cost ~3% of mail's CPU at 1 KB, and grow with it.
 */
export function introOf(text: string): string {
  // Past 2× the characters in UTF-16 units there are more characters than kept (a character is ≤ 2 units).
  const enough = INTRO_CHARS * 2 + 2
  let folded = ''
  for (const [word] of text.matchAll(/\S+/g)) {
    folded += folded === '' ? word : ` ${word}`
    if (folded.length > enough) {
      folded = folded.slice(0, enough)
      break
    }
  }
  const chars = [...folded]
  return chars.length <= INTRO_CHARS
    ? folded
    : `${chars
        .slice(0, INTRO_CHARS - 1)
        .join('')
        .trimEnd()}…`
}

// Links. What a reader can follow: the URLs written out in the text, and the HTML's navigational links
// (<a href>, <area href>) and written-out URLs. What the HTML only loads (an <img src>: a tracking pixel, a
// logo) is not a link, not even where mailparser's text for HTML-only mail shows it as "[https://…/open.gif]".
// Everything here is one pass over a stranger's text: no pattern that backtracks, no rescan from an earlier
// place, so a 10 MB message of brackets and angle brackets costs what its length costs.

/** A run of characters that may be inside a URL written in text, brackets aside (they are counted). */
const URL_RUN = /[^\s<>"'`\u0000-\u001f\u007f-\u009f()[\]{}]+/y
const OPENERS: Record<string, string> = { ')': '(', ']': '[', '}': '{' }

/**
 * Where a URL whose scheme ends at `from` ends, the way linkifiers (linkify-it) read text: at white space, a
 * control, a quote or an angle bracket, or at a closing bracket that closes nothing; a bracket left open ends it
 * where it opened. So "https://en.wikipedia.org/wiki/Foo_(bar)" and "?ids[]=1" keep their pairs, and
 * "[https://a.example/x.jpg]https://b.example/y" is two URLs. `stop` is where the scan stopped: the next URL is
 * looked for from there, never from earlier.
 */
function urlEnd(text: string, from: number): { end: number; stop: number } {
  const open: number[] = []
  let i = from
  for (;;) {
    const c = text[i]
    if (c === '(' || c === '[' || c === '{') open.push(i++)
    else if (c === ')' || c === ']' || c === '}') {
      if (open.length === 0 || text[open.at(-1)!] !== OPENERS[c]) break
      open.pop()
      i++
    } else {
      URL_RUN.lastIndex = i
      if (!URL_RUN.exec(text)) break // the end of the text, or a character no URL has in it
      i = URL_RUN.lastIndex
    }
  }
  return { end: open[0] ?? i, stop: i }
}

/** The URL without the punctuation of the sentence around it ("see https://a.example/x."). */
function trimUrl(url: string): string {
  let n = url.length
  while (n > 0 && '.,;:!?*'.includes(url[n - 1]!)) n--
  return url.slice(0, n)
}

/** Each http(s) URL written in `text`, in order, until `take` says it has enough. */
function urlsIn(text: string, take: (url: string) => boolean): void {
  const start = /https?:\/\//gi
  for (let m; (m = start.exec(text)); ) {
    if (m.index > 0 && /\w/.test(text[m.index - 1]!)) continue // "xhttp://" is not one; "(http://", "]http://" are
    const { end, stop } = urlEnd(text, start.lastIndex)
    start.lastIndex = stop
    if (!take(trimUrl(text.slice(m.index, end)))) return
  }
}

const isWebUrl = (s: string) => /^https?:\/\/[^/?#\s]/i.test(s) && s.length <= MAX_LINK_CHARS && URL.canParse(s)

/** An attribute value as the URL it names: entities decoded, the tabs and line breaks a browser drops, dropped. */
const attributeUrl = (value: string) =>
  he
    .decode(value, { isAttributeValue: true })
    .replace(/[\t\n\r]/g, '')
    .trim()

/** Elements whose content is not shown as text, each with the end tag that closes it. */
const HIDDEN = new Map(['script', 'style', 'title'].map((name) => [name, new RegExp(`</${name}[\\s/>]`, 'gi')]))
/** The attributes read: navigational links and what the HTML loads by itself. */
const WANTED = new Set(['href', 'src', 'poster', 'background'])
const isLetter = (c: string | undefined) => c !== undefined && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f'

interface HtmlParts {
  /** <a href> and <area href>, in order. */
  hrefs: string[]
  /** src, poster and background: what a mail client fetches by itself, not something to follow. */
  loads: string[]
  /** The text a reader sees (entities not yet decoded), tags as spaces. */
  shown: string[]
}

/**
 * One pass over HTML, split as a browser's tokenizer splits it (closely enough for links): text, start tags with
 * their attributes (quoted values may hold ">"), end tags, comments, and the content of script, style and title
 * skipped. A tag or comment left open runs to the end, as in a browser.
 */
function readHtml(html: string): HtmlParts {
  const out: HtmlParts = { hrefs: [], loads: [], shown: [] }
  const n = html.length
  let shownFrom = 0 // the text since the last tag
  let i = 0
  while (i < n) {
    const lt = html.indexOf('<', i)
    if (lt < 0) break
    const next = html[lt + 1]
    if (next !== '!' && next !== '?' && next !== '/' && !isLetter(next)) {
      i = lt + 1 // "a < b": text, not a tag
      continue
    }
    out.shown.push(html.slice(shownFrom, lt))
    if (html.startsWith('<!--', lt)) {
      const close = html.indexOf('-->', lt + 4)
      i = close < 0 ? n : close + 3
    } else if (!isLetter(next)) {
      // An end tag, a declaration, a processing instruction: nothing in it is read.
      const close = html.indexOf('>', lt + 2)
      i = close < 0 ? n : close + 1
    } else {
      i = startTag(html, lt, out)
    }
    shownFrom = i
  }
  out.shown.push(html.slice(shownFrom))
  return out
}

/** Reads the start tag at `lt` into `out`; returns where the text after it (or after a hidden element) begins. */
function startTag(html: string, lt: number, out: HtmlParts): number {
  const n = html.length
  let j = lt + 1
  while (j < n && !isSpace(html[j]) && html[j] !== '/' && html[j] !== '>') j++
  const name = html.slice(lt + 1, j).toLowerCase()
  const attrs = new Map<string, string>() // only the WANTED ones
  for (;;) {
    while (j < n && (isSpace(html[j]) || html[j] === '/')) j++
    if (j >= n) return n // a tag left open: the rest is inside it
    if (html[j] === '>') break
    const at = j++
    while (j < n && !isSpace(html[j]) && html[j] !== '/' && html[j] !== '>' && html[j] !== '=') j++
    const attr = html.slice(at, j).toLowerCase()
    while (j < n && isSpace(html[j])) j++
    let value = ''
    if (html[j] === '=') {
      j++
      while (j < n && isSpace(html[j])) j++
      const quote = html[j]
      if (quote === '"' || quote === "'") {
        const close = html.indexOf(quote, j + 1)
        if (close < 0) return n
        value = html.slice(j + 1, close)
        j = close + 1
      } else {
        const from = j
        while (j < n && !isSpace(html[j]) && html[j] !== '>') j++
        value = html.slice(from, j)
      }
    }
    // The first of a repeated attribute counts, as in a browser.
    if (WANTED.has(attr) && !attrs.has(attr)) attrs.set(attr, value)
  }
  const href = attrs.get('href')
  if (href !== undefined && (name === 'a' || name === 'area') && out.hrefs.length < MAX_HTML_URLS)
    out.hrefs.push(attributeUrl(href))
  for (const key of ['src', 'poster', 'background']) {
    const value = attrs.get(key)
    if (value !== undefined && out.loads.length < MAX_HTML_URLS) out.loads.push(attributeUrl(value))
  }
  const end = HIDDEN.get(name)
  if (!end) return j + 1
  end.lastIndex = j + 1
  const m = end.exec(html)
  const close = m ? html.indexOf('>', m.index) : -1
  return close < 0 ? n : close + 1
}

/**
 * The links of a message, in order, each once: the URLs in the text, then the HTML's `<a href>` and
 * `<area href>` (entities decoded: `&amp;` in a query is `&`), then URLs written out in the HTML's own text.
 * A URL the HTML only loads (`<img src>` …) is left out of the text's, unless the HTML also links to it or
 * shows it.
 */
export function linksOf(text: string, html: string | null): string[] {
  const links = new Set<string>()
  const add = (url: string) => {
    if (links.size < MAX_LINKS && isWebUrl(url)) links.add(url)
    return links.size < MAX_LINKS
  }
  const page = html ? readHtml(html) : { hrefs: [], loads: [], shown: [] }
  const written = new Set<string>()
  urlsIn(he.decode(page.shown.join(' ')), (url) => {
    if (!written.has(url) && isWebUrl(url)) written.add(url)
    return written.size < MAX_LINKS
  })
  const loads = new Set(page.loads)
  for (const url of [...page.hrefs, ...written]) loads.delete(url)
  urlsIn(text, (url) => links.has(url) || loads.has(url) || add(url))
  for (const url of [...page.hrefs, ...written]) if (!add(url)) break
  return [...links]
}

/** A file name to show and to offer for download: no folders, no control characters, bounded. */
export function safeFilename(name: string | undefined, part: number, contentType: string): string {
  const base = oneLine((name ?? '').replace(/.*[\\/]/, '')).replace(/^\.+/, '')
  if (base) return clip(base, MAX_FILENAME_CHARS)
  const ext = /^[a-z]+\/([a-z0-9.+-]{1,20})$/i.exec(contentType)?.[1]?.replace(/^.*\+/, '')
  return `attachment-${part}${ext ? `.${ext}` : ''}`
}

/** A Content-Type we repeat in a header: a plain type/subtype, else application/octet-stream. */
export function safeContentType(type: string | undefined): string {
  const t = (type ?? '').toLowerCase().trim()
  return /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$/.test(t) ? t : 'application/octet-stream'
}

// mailparser (with its character-set tables) is loaded on the first message, not at start-up: it was
// 42 ms of the compiled binary's start, two thirds of the time spent loading modules.
let mailparser: Promise<typeof import('mailparser')> | null = null
const loadMailparser = () => (mailparser ??= import('mailparser'))

/** Parses a message; one that mailparser cannot read still gets fields (empty, with the reason). */
export async function parseMessage(source: Buffer | Readable, envelopeFrom: string): Promise<ParsedMessage> {
  const { simpleParser } = await loadMailparser()
  try {
    const mail = await simpleParser(source, {
      keepCidLinks: true, // html as sent: cid: references stay, not inlined as data: URLs
      skipImageLinks: true,
      skipTextToHtml: true,
      skipTextLinks: true,
    })
    const from = people(mail.from)[0] ?? { address: envelopeFrom, name: '' }
    const text = mail.text ?? ''
    const html = typeof mail.html === 'string' ? mail.html : null
    const attachments = mail.attachments.map((a, i) => {
      const content_type = safeContentType(a.contentType)
      return {
        part: i + 1,
        filename: safeFilename(a.filename, i + 1, content_type),
        content_type,
        size: a.content.length,
      }
    })
    const date = mail.date instanceof Date && !Number.isNaN(mail.date.getTime()) ? mail.date.getTime() : null
    return {
      fields: {
        envelope_from: envelopeFrom,
        from,
        subject: clip(oneLine(mail.subject ?? ''), MAX_SUBJECT_CHARS),
        date,
        intro: introOf(text),
        to: people(mail.to),
        cc: people(mail.cc),
        text,
        html,
        links: linksOf(text, html),
        parse_error: null,
        attachments,
      },
      parts: mail.attachments.map((a) => a.content),
    }
  } catch (err) {
    return {
      fields: {
        envelope_from: envelopeFrom,
        from: { address: envelopeFrom, name: '' },
        subject: '',
        date: null,
        intro: '',
        to: [],
        cc: [],
        text: '',
        html: null,
        links: [],
        parse_error: clip(oneLine(err instanceof Error ? err.message : String(err)), 300) || 'unreadable',
        attachments: [],
      },
      parts: [],
    }
  }
}
