// What a destination's page says of itself (src/links/metadata-parse.ts, issue 40 item 3): the <title> and the
// og:/twitter: defaults, entities decoded, whitespace collapsed, controls dropped, cut to the SPEC's lengths; the
// charset from a byte-order mark, the header or a meta; a title past the read bound is not found. No socket.
import { describe, expect, test } from 'bun:test'
import { cleanText, headerCharset, pageDecoder, pageMeta } from '../../src/links/metadata-parse'
import { PAGE_BYTES } from '../../src/links/metadata-fetch'

const decode = (bytes: Uint8Array, type = 'text/html') => pageMeta(pageDecoder(bytes, type).decode(bytes))

describe('pageMeta', () => {
  test('the title and the og defaults, entities decoded, whitespace collapsed and trimmed', () => {
    const html = `<!doctype html><html><head>
      <meta charset="utf-8">
      <title>
        Caf&eacute; &amp; Bar &#x2014;\tthe&nbsp;menu &lt;2026&gt; &#128512;
      </title>
      <meta property="og:title" content="Caf&#233; &quot;Bar&quot;">
      <meta content='Two
        lines &amp; more' property='og:description'>
    </head><body><h1>Hi</h1></body></html>`
    expect(pageMeta(html)).toEqual({
      title: 'Café & Bar — the menu <2026> 😀',
      og_title: 'Café "Bar"',
      og_description: 'Two lines & more',
    })
  })

  test('twitter: tags stand in for missing og: ones; og:title stands in for a missing <title>', () => {
    const html = `<head><meta name="twitter:title" content="Tw title"><meta name="twitter:description" content="Tw desc">
      <meta property="og:description" content="">`
    expect(pageMeta(html)).toEqual({ title: 'Tw title', og_title: 'Tw title', og_description: 'Tw desc' })
    expect(pageMeta('<meta property="og:title" content="OG"><meta name="twitter:title" content="TW">').og_title).toBe(
      'OG',
    )
  })

  test('a page without a title gives empty fields; an empty or blank title is none', () => {
    expect(pageMeta('<html><body><p>No head at all</p></body></html>')).toEqual({
      title: '',
      og_title: '',
      og_description: '',
    })
    expect(pageMeta('<title>  \n\t </title>').title).toBe('')
    expect(pageMeta('').title).toBe('')
  })

  test('titles in comments, scripts, styles and inline SVG are not the page title; attributes on <title> are', () => {
    const html = `<!-- <title>commented</title> --><script>document.write("<title>scripted</title>")</script>
      <style>/* <title>styled</title> */</style><svg><title>icon</title></svg>
      <TITLE lang="en">The real one</TITLE>`
    expect(pageMeta(html).title).toBe('The real one')
  })

  test('control characters dropped (also as entities), lone surrogates dropped, line breaks made spaces', () => {
    expect(pageMeta('<title>a\u0001b&#1;c\u0085d&#x7f;e\r\nf \ud800g</title>').title).toBe('abcde f g')
    // As a browser shows it: a surrogate's reference is the replacement character (HTML's rule).
    expect(pageMeta('<title>&#xD800;</title>').title).toBe('\ufffd')
    expect(cleanText('x\u0000\u009fy', 10)).toBe('xy')
  })

  test('cut to 200 characters (title, og_title) and 500 (og_description), counted in code points', () => {
    const long = '😀'.repeat(250)
    const m = pageMeta(
      `<title>${'a'.repeat(300)}</title><meta property="og:title" content="${long}"><meta property="og:description" content="${'d '.repeat(400)}">`,
    )
    expect(m.title).toBe('a'.repeat(200))
    expect([...m.og_title].length).toBe(200)
    expect(m.og_title).toBe('😀'.repeat(200))
    expect([...m.og_description].length).toBeLessThanOrEqual(500)
    expect(m.og_description.startsWith('d d d')).toBe(true)
    expect(m.og_description.endsWith(' ')).toBe(false)
  })

  test('a <title> not closed (a page cut at the bound) is not taken; one after 256 KiB is not in what was read', () => {
    expect(pageMeta('<title>Half a ti').title).toBe('')
    const page = new TextEncoder().encode(`<html><head>${' '.repeat(300 * 1024)}<title>Too late</title></head></html>`)
    expect(decode(page.subarray(0, PAGE_BYTES)).title).toBe('')
    expect(decode(page).title).toBe('Too late')
  })
})

describe('the charset', () => {
  const latin1 = (text: string) => Uint8Array.from([...text].map((c) => c.charCodeAt(0)))

  test('UTF-8 by default', () => {
    expect(decode(new TextEncoder().encode('<title>Grüße – 東京</title>')).title).toBe('Grüße – 東京')
  })

  test("the header's charset; a meta charset or http-equiv when the header names none", () => {
    const page = latin1('<title>Gr\u00fc\u00dfe</title>')
    expect(decode(page, 'text/html; charset=ISO-8859-1').title).toBe('Grüße')
    expect(decode(page, 'text/html; charset="windows-1252"').title).toBe('Grüße')
    expect(decode(latin1('<meta charset="iso-8859-1"><title>Gr\u00fc\u00dfe</title>')).title).toBe('Grüße')
    expect(
      decode(
        latin1('<meta http-equiv="Content-Type" content="text/html; charset=windows-1252"><title>\u0080 5</title>'),
      ).title,
    ).toBe('€ 5')
    // The header wins over the page's meta.
    const utf8 = new TextEncoder().encode('<meta charset="iso-8859-1"><title>Grüße</title>')
    expect(decode(utf8, 'text/html;charset=utf-8').title).toBe('Grüße')
  })

  test('Shift_JIS by header; an unknown label is UTF-8; a meta saying UTF-16 is read as UTF-8; a BOM wins', () => {
    // "日本" in Shift_JIS.
    const sjis = Uint8Array.from([...latin1('<title>'), 0x93, 0xfa, 0x96, 0x7b, ...latin1('</title>')])
    expect(decode(sjis, 'text/html; charset=shift_jis').title).toBe('日本')
    expect(decode(new TextEncoder().encode('<title>ok é</title>'), 'text/html; charset=x-bogus').title).toBe('ok é')
    expect(decode(new TextEncoder().encode('<meta charset="utf-16"><title>é</title>')).title).toBe('é')
    const bom = Uint8Array.from([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('<title>é</title>')])
    expect(decode(bom, 'text/html; charset=iso-8859-1').title).toBe('é')
    expect(headerCharset('text/html; Charset = "UTF-8" ; q=1')).toBe('utf-8')
    expect(headerCharset('text/html')).toBeNull()
  })
})
