// A received message → the fields the API shows (mailparser does the MIME work), plus the links people
// look for in sign-up mail. Everything here comes from strangers: lengths are bounded, nothing is trusted.
import he from 'he'
import type { AddressObject, EmailAddress } from 'mailparser'
import type { Readable } from 'node:stream'
import type { ParsedFields, Person } from './store'

export const INTRO_CHARS = 160
const MAX_PEOPLE = 100
const MAX_LINKS = 500
const MAX_LINK_CHARS = 4096
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

/** The first ≤160 characters of the text, whitespace folded: what a list shows under the subject. */
export function introOf(text: string): string {
  const folded = text.replace(/\s+/g, ' ').trim()
  const chars = [...folded]
  return chars.length <= INTRO_CHARS ? folded : `${chars.slice(0, INTRO_CHARS - 1).join('').trimEnd()}…`
}

const URL_IN_TEXT = /\bhttps?:\/\/[^\s<>"'`\u0000-\u001f\u007f]+/giu
const HREF = /<a\b[^>]*?\shref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/giu
const CLOSERS: Record<string, string> = { ')': '(', ']': '[', '}': '{' }

/** A URL found in running text, without the punctuation that ends the sentence around it. */
function trimUrl(url: string): string {
  for (;;) {
    const last = url.at(-1)!
    if ('.,;:!?\'"*'.includes(last)) {
      url = url.slice(0, -1)
      continue
    }
    const opener = CLOSERS[last]
    // "(see https://example.com/a_(b))" keeps its balanced ")" and drops the sentence's.
    if (opener && url.split(opener).length - 1 < url.split(last).length - 1) {
      url = url.slice(0, -1)
      continue
    }
    return url
  }
}

const isWebUrl = (s: string) => /^https?:\/\/[^/?#\s]/i.test(s) && s.length <= MAX_LINK_CHARS && URL.canParse(s)

/**
 * The http(s) URLs of a message, in order: those in the text, then the links of the HTML (`<a href>`, with
 * entities decoded: `&amp;` in a query is `&`), then URLs written out in the HTML's own text. Each once.
 */
export function linksOf(text: string, html: string | null): string[] {
  const seen = new Set<string>()
  const add = (url: string) => {
    if (seen.size < MAX_LINKS && isWebUrl(url)) seen.add(url)
  }
  for (const m of text.matchAll(URL_IN_TEXT)) add(trimUrl(m[0]))
  if (html) {
    for (const m of html.matchAll(HREF)) add(he.decode(m[1] ?? m[2] ?? m[3] ?? '').replace(/[\t\n\r]/g, '').trim())
    const visible = he.decode(html.replace(/<(script|style)\b[\s\S]*?<\/\1\s*>/gi, ' ').replace(/<[^>]*>/g, ' '))
    for (const m of visible.matchAll(URL_IN_TEXT)) add(trimUrl(m[0]))
  }
  return [...seen]
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
      return { part: i + 1, filename: safeFilename(a.filename, i + 1, content_type), content_type, size: a.content.length }
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
