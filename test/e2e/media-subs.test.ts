// Subtitles and playlists (issue 41 items 2 and 3) end to end: the real yt-dlp reads the fixture pages
// (test/support/media-fixtures-subs.ts) and the signed links are fetched back: a <track> as VTT byte for byte
// and as the SRT made from it, the three <video>s of a page as a playlist whose links give the clip.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeBox, type TestBox } from '../support/app'
import { startMediaFixtures, type FixtureName, type MediaFixtures } from '../support/media-fixtures'
import { EN_SRT, EN_VTT, FR_VTT } from '../support/media-fixtures-subs'
import { tampered } from '../support/tamper'

const LONG = 60_000
let fx: MediaFixtures
let box: TestBox
let key: string

beforeAll(async () => {
  fx = await startMediaFixtures()
  box = await makeBox({ media: { allow_private_networks: true } })
  key = await box.account('media')
})
afterAll(async () => {
  await box?.cleanup()
  await fx?.stop()
})

const ask = (url: string, more: Record<string, string> = {}, b: TestBox = box, k = key) =>
  b.get('/api/download.json', { url, ...more }, { 'x-api-key': k })
const local = (link: string) => {
  const u = new URL(link)
  return u.pathname + u.search
}
let unique = 0
const fresh = (name: FixtureName) => `${fx.url(name)}?t=${++unique}`

describe('subtitles', () => {
  test(
    'a <video> with <track>s: each language as vtt (the file itself) and srt (made from it), with signed links',
    async () => {
      const r = await ask(fx.url('subtitles-page'))
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      const subs = r.body.return.subtitles
      // yt-dlp 2025.04.30 reports the tracks without their labels: the names are the languages' own.
      expect(subs.map(({ url, ...s }: { url: string }) => s)).toEqual([
        { lang: 'en', name: 'English', ext: 'vtt', auto: false },
        { lang: 'en', name: 'English', ext: 'srt', auto: false },
        { lang: 'fr', name: 'French', ext: 'vtt', auto: false },
        { lang: 'fr', name: 'French', ext: 'srt', auto: false },
      ])
      for (const s of subs) expect(s.url).toMatch(/^http:\/\/localhost:8080\/dl\/[0-9]+\?exp=[0-9]+&sig=/)
      expect(JSON.stringify(subs)).not.toContain(fx.origin)
      // The page's one format, then the audio extracted from it (audio.ts).
      expect(r.body.return.formats.map((f: { id: string }) => f.id)).toEqual(['0', '0/mp3', '0/m4a', '0/opus'])

      const vtt = await box.request(local(subs[0].url))
      expect(vtt.status).toBe(200)
      expect(vtt.headers.get('content-type')).toBe('text/vtt; charset=utf-8')
      expect(vtt.headers.get('content-disposition')).toStartWith(
        'attachment; filename="Fixture subtitles page (1).en.vtt"',
      )
      expect(vtt.headers.get('x-content-type-options')).toBe('nosniff')
      expect(await vtt.text()).toBe(EN_VTT)

      const srt = await box.request(local(subs[1].url))
      expect(srt.status).toBe(200)
      expect(srt.headers.get('content-type')).toBe('application/x-subrip; charset=utf-8')
      expect(srt.headers.get('content-disposition')).toStartWith(
        'attachment; filename="Fixture subtitles page (1).en.srt"',
      )
      const text = await srt.text()
      expect(text).toBe(EN_SRT)
      expect(srt.headers.get('content-length')).toBe(String(new TextEncoder().encode(text).length))

      expect(await (await box.request(local(subs[2].url))).text()).toBe(FR_VTT)
      expect(await (await box.request(local(subs[3].url))).text()).toBe('1\n00:00:00,000 --> 00:00:02,000\nBonjour\n')

      const head = await box.request(local(subs[1].url), { method: 'HEAD' })
      expect(head.status).toBe(200)
      expect(head.headers.get('content-length')).toBe(String(EN_SRT.length))
    },
    LONG,
  )

  test(
    'a link whose signature was changed is 403 and fetches nothing',
    async () => {
      const r = await ask(fx.url('subtitles-page'))
      const link = new URL(r.body.return.subtitles[1].url)
      link.searchParams.set('sig', tampered(link.searchParams.get('sig')!))
      const before = fx.requests.length
      const res = await box.request(link.pathname + link.search)
      expect(res.status).toBe(403)
      expect(fx.requests.slice(before).filter((q) => q.path.includes('.vtt'))).toEqual([])
    },
    LONG,
  )

  test(
    'a page without tracks answers an empty list',
    async () => {
      const r = await ask(fx.url('video-page'))
      expect(r.status).toBe(200)
      expect(r.body.return.subtitles).toEqual([])
    },
    LONG,
  )
})

describe('playlists', () => {
  test(
    'playlist=1 on a page with three <video>s: three entries whose links give the clip',
    async () => {
      const r = await ask(fresh('playlist-page'), { playlist: '1' })
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      const ret = r.body.return
      // yt-dlp -j names the entries' extractor, not the playlist's (which -J calls Generic).
      expect(ret).toMatchObject({
        title: 'Fixture playlist page',
        extractor: 'HTML5MediaEmbed',
        count: 3,
        truncated: false,
      })
      expect(Object.keys(ret).sort()).toEqual([
        'count',
        'entries',
        'expires',
        'extractor',
        'source',
        'title',
        'truncated',
      ])
      expect(ret.entries.map((e: { index: number; title: string }) => [e.index, e.title])).toEqual([
        [1, 'Fixture playlist page (1)'],
        [2, 'Fixture playlist page (2)'],
        [3, 'Fixture playlist page (3)'],
      ])
      for (const [i, name] of ['one', 'two', 'three'].entries()) {
        const entry = ret.entries[i]
        // Each entry's one format, then the audio extracted from it (audio.ts).
        expect(entry.formats.map((f: { id: string }) => f.id)).toEqual(['0', '0/mp3', '0/m4a', '0/opus'])
        expect(entry.formats[0]).toMatchObject({ id: '0', ext: 'mp4', kind: 'video+audio' })
        const before = fx.requests.length
        const file = await box.request(local(entry.formats[0].url))
        expect(file.status).toBe(200)
        expect(new Uint8Array(await file.arrayBuffer())).toEqual(fx.bytes('clip.mp4'))
        expect(fx.requests.slice(before).map((q) => q.path)).toEqual([`/media/clip-${name}.mp4`])
      }
    },
    LONG,
  )

  test(
    'without playlist=1 the same page answers its first video, as before',
    async () => {
      const r = await ask(fresh('playlist-page'))
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      expect(r.body.return).toMatchObject({ title: 'Fixture playlist page (1)', kind: 'video', subtitles: [] })
      expect(r.body.return.entries).toBeUndefined()
      expect(r.body.return.formats.map((f: { id: string }) => f.id)).toEqual(['0', '0/mp3', '0/m4a', '0/opus'])
      const before = fx.requests.length
      await (await box.request(local(r.body.return.formats[0].url))).arrayBuffer()
      expect(fx.requests.slice(before).map((q) => q.path)).toEqual(['/media/clip-one.mp4'])
    },
    LONG,
  )

  test(
    'playlist=1 on a single video: a playlist of one',
    async () => {
      const r = await ask(fresh('video-page'), { playlist: 'true' })
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      expect(r.body.return).toMatchObject({ count: 1, truncated: false })
      expect(r.body.return.entries).toHaveLength(1)
      expect(r.body.return.entries[0]).toMatchObject({ index: 1, title: 'Fixture video page (1)' })
    },
    LONG,
  )

  test(
    'media.playlist_max = 2: two entries, truncated, count 3',
    async () => {
      const small = await makeBox({ media: { allow_private_networks: true, playlist_max: 2 } })
      try {
        const r = await ask(fresh('playlist-page'), { playlist: '1' }, small, await small.account('m'))
        expect(r.status, JSON.stringify(r.body)).toBe(200)
        expect(r.body.return).toMatchObject({ count: 3, truncated: true })
        expect(r.body.return.entries.map((e: { index: number }) => e.index)).toEqual([1, 2])
      } finally {
        await small.cleanup()
      }
    },
    LONG,
  )

  test('playlist=maybe: 400 invalid_parameter naming it', async () => {
    const r = await ask(fx.url('playlist-page'), { playlist: 'maybe' })
    expect([r.status, r.body.code]).toEqual([400, 'invalid_parameter'])
    expect(r.body.message).toContain('"playlist"')
  })
})
