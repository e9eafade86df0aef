// The Download page's markup (src/dashboard/media-view.ts) for answers the fixtures cannot give yet: subtitles and a
// playlist's entries (issue 41's other slices add them to download.json), extracted audio formats; everything
// escaped, and only this service's own signed /dl links kept.
import { describe, expect, test } from 'bun:test'
import {
  type Answer,
  type AnswerFormat,
  duration,
  ownPath,
  resultHtml,
  startPath,
} from '../../src/dashboard/media-view'

const BASE = 'https://sho.rt'
const SIG = 'A'.repeat(43)
const format = (id: string, kind: string, ext: string, n: number, o: Partial<AnswerFormat> = {}): AnswerFormat => ({
  id,
  ext,
  kind,
  width: null,
  height: null,
  vcodec: null,
  acodec: null,
  filesize: null,
  note: id,
  url: `${BASE}/dl/${n}?exp=1800000000&sig=${SIG}`,
  ...o,
})
const answer = (o: Partial<Answer> = {}): Answer => ({
  title: 'A <b>walk</b> & "talk"',
  kind: 'video',
  duration: 3725,
  expires: '2027-01-01T00:00:00.000Z',
  formats: [],
  ...o,
})

describe('the Download page’s result', () => {
  test('formats grouped, best first; extracted audio under Audio; escaped; a link elsewhere is not kept', () => {
    const html = resultHtml(
      answer({
        formats: [
          format('18', 'video+audio', 'mp4', 1, { width: 640, height: 360, note: '360p', filesize: 1536 }),
          format('22', 'video+audio', 'mp4', 2, { note: '720p <hd>' }),
          format('mp3', 'audio', 'mp3', 3, { note: 'mp3 (extracted)' }),
          format('x', 'video', 'webm', 4, { url: 'https://evil.example/dl/4?exp=1&sig=x' }),
        ],
      }),
      BASE,
    )
    expect(html).toContain('<h2 id="dl-title">A &lt;b&gt;walk&lt;/b&gt; &amp; &quot;talk&quot;</h2>')
    expect(html).toContain('1:02:05 long')
    expect(html).not.toContain('<b>')
    expect(html.indexOf('720p &lt;hd&gt;')).toBeLessThan(html.indexOf('360p'))
    expect(html).toContain('640×360 · 1.5 KiB')
    expect(html).toContain(`href="/dashboard/download/start/3?exp=1800000000&amp;sig=${SIG}"`)
    expect(html).toMatch(/<h3>Audio<\/h3><ul class="dl-formats"><li>.*mp3 \(extracted\)/)
    expect(html).not.toContain('evil.example')
    expect(html).toContain('no link')
  })

  test('subtitles: a download link each (own links only), automatic ones said so', () => {
    const html = resultHtml(
      answer({
        formats: [format('0', 'video+audio', 'mp4', 1)],
        subtitles: [
          { lang: 'en', name: 'English', ext: 'vtt', auto: false, url: `${BASE}/dl/9?exp=1800000000&sig=${SIG}` },
          { lang: 'de', name: '', ext: 'srt', auto: true, url: 'https://elsewhere.example/de.srt' },
        ],
      }),
      BASE,
    )
    expect(html).toContain('<h3>Subtitles</h3>')
    expect(html).toContain('English (en) · vtt')
    expect(html).toContain(`href="/dl/9?exp=1800000000&amp;sig=${SIG}" download`)
    expect(html).toContain('de (de, automatic) · srt')
    expect(html).not.toContain('elsewhere.example')
  })

  test('a playlist: its entries in order, each with its formats; truncated said', () => {
    const html = resultHtml(
      answer({
        // A playlist's answer has no kind, duration or formats of its own.
        kind: undefined,
        duration: undefined,
        formats: undefined,
        entries: [1, 2, 3].map((i) => ({
          index: i,
          title: `Part ${i}`,
          duration: 61,
          formats: [format('0', 'video+audio', 'mp4', 10 + i)],
        })),
        count: 3,
        truncated: true,
      }),
      BASE,
    )
    expect(html).toContain('<h3>Playlist: 3 entries</h3>')
    expect(html).toContain('<p class="muted">links valid until')
    expect([...html.matchAll(/<li class="dl-entry">/g)]).toHaveLength(3)
    expect(html.indexOf('Part 1')).toBeLessThan(html.indexOf('Part 3'))
    expect(html).toContain('(1:01)')
    expect(html).toContain('/dashboard/download/start/13?')
    expect(html).toContain('more entries than the 3 shown')
  })

  test('helpers: durations, own paths, start links', () => {
    expect([duration(null), duration(0), duration(61.4), duration(3600)]).toEqual(['', '0:00', '1:01', '1:00:00'])
    expect(ownPath(`${BASE}/dl/1?a=b`, BASE)).toBe('/dl/1?a=b')
    expect(ownPath(`${BASE}.evil/dl/1`, BASE)).toBeNull()
    expect(ownPath(`${BASE}/dl/1?a=<b>`, BASE)).toBeNull()
    expect(startPath(`/dl/7?exp=1&sig=${SIG}`)).toBe(`/dashboard/download/start/7?exp=1&sig=${SIG}`)
    expect(startPath(`/dl/7?exp=1&sig=${SIG}&ext=srt`)).toBeNull()
  })
})
