// The guard on what issue 41 adds (item 6): subtitles, thumbnails and playlist entries that yt-dlp reports on
// private addresses are left out as private formats are (media-guard-bypass.test.ts), and a subtitle that is
// sent on to a private address when fetched is refused. The guard is on: only 127.0.0.2 ("public.test") is let
// through. A stand-in yt-dlp prints a fixed answer, playing a yt-dlp that reads a hostile page.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { makeBox, tempDir } from '../support/app'

const PUBLIC = '127.0.0.2'
const guardOpts = {
  resolve: async (host: string) => (host === 'public.test' ? [PUBLIC] : []),
  isAllowed: (a: string) => a === PUBLIC,
}
const VTT = 'WEBVTT\n\n00:00.000 --> 00:01.000\nPublic\n'

let secret: ReturnType<typeof Bun.serve> // ::1: private
let site: ReturnType<typeof Bun.serve> // 127.0.0.2: "public"
const secretHits: string[] = []
const dir = tempDir('linkbox-guard-subs-')

beforeAll(() => {
  secret = Bun.serve({
    hostname: '::1',
    port: 0,
    fetch(req) {
      secretHits.push(new URL(req.url).pathname)
      return new Response('WEBVTT\n\n00:00.000 --> 00:01.000\nRouter password\n')
    },
  })
  site = Bun.serve({
    hostname: PUBLIC,
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname
      if (path === '/moved.vtt')
        return new Response(null, { status: 302, headers: { location: `http://[::1]:${secret.port}/secret.vtt` } })
      if (path.endsWith('.vtt')) return new Response(VTT, { headers: { 'content-type': 'text/vtt' } })
      return new Response('video bytes', { headers: { 'content-type': 'video/mp4' } })
    },
  })
})
afterAll(() => {
  secret?.stop(true)
  site?.stop(true)
  rmSync(dir, { recursive: true, force: true })
})

const pub = (path: string) => `http://public.test:${site.port}${path}`
const priv = (path: string) => `http://[::1]:${secret.port}${path}`
const format = (id: string, url: string) => ({ format_id: id, url, ext: 'mp4', protocol: 'http' })
const vtt = (url: string) => [{ ext: 'vtt', url }]

/**
 * Asks download.json of a box whose yt-dlp prints `answer` (an array: one JSON line each, as -j prints a
 * playlist's entries), then runs `then`; the answer and the tickets made.
 */
async function ask(
  name: string,
  answer: unknown,
  query: Record<string, string> = {},
  o: { then?: string; media?: Record<string, unknown> } = {},
) {
  const folder = join(dir, name)
  mkdirSync(folder, { recursive: true })
  const lines = Array.isArray(answer) ? answer.map((a) => `${JSON.stringify(a)}\n`).join('') : JSON.stringify(answer)
  writeFileSync(join(folder, 'answer.json'), lines)
  const path = join(folder, 'yt-dlp')
  writeFileSync(
    path,
    `#!/bin/sh\nif [ "$1" = --version ]; then echo 2025.04.30; exit 0; fi\ncat '${join(folder, 'answer.json')}'\n${o.then ?? ''}\n`,
  )
  chmodSync(path, 0o755)
  const box = await makeBox({ media: { ytdlp_path: path, ...o.media } }, guardOpts)
  const r = await box.get(
    '/api/download.json',
    { url: pub('/watch'), ...query },
    { 'x-api-key': await box.account('u') },
  )
  const tickets = (box.db.query('SELECT count(*) AS n FROM media_tickets').get() as { n: number }).n
  return { r, tickets, box }
}

describe('subtitles', () => {
  test('on private addresses they are left out; the public one stays', async () => {
    const { r, tickets, box } = await ask('subs', {
      title: 'A page',
      webpage_url: pub('/watch'),
      formats: [format('0', pub('/v.mp4'))],
      subtitles: {
        en: vtt(pub('/en.vtt')),
        lan: vtt('http://192.168.1.1/lan.vtt'),
        loop: vtt(priv('/loop.vtt')),
        meta: vtt('http://169.254.169.254/latest/meta-data/x.vtt'),
      },
      automatic_captions: {
        de: vtt('http://10.0.0.1/de.vtt'),
      },
    })
    try {
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      expect(r.body.return.subtitles.map((s: { lang: string; ext: string }) => `${s.lang}.${s.ext}`)).toEqual([
        'en.vtt',
        'en.srt',
      ])
      expect(tickets).toBe(6) // the format, its extracted mp3, m4a and opus, en.vtt, en.srt
      const link = new URL(r.body.return.subtitles[1].url)
      const srt = await box.request(link.pathname + link.search)
      expect(await srt.text()).toBe('1\n00:00:00,000 --> 00:00:01,000\nPublic\n')
      expect(secretHits).toEqual([])
    } finally {
      await box.cleanup()
    }
  })

  test('one carrying smuggled data: the whole answer is refused, as for a format', async () => {
    const { r, tickets, box } = await ask('smuggled', {
      title: 'A page',
      webpage_url: pub('/watch'),
      formats: [format('0', pub('/v.mp4'))],
      subtitles: { en: vtt(`${pub('/en.vtt')}#__youtubedl_smuggle=%7B%7D`) },
    })
    await box.cleanup()
    expect([r.status, r.body.code, tickets]).toEqual([400, 'private_address', 0])
  })

  test('a public subtitle that redirects to a private address when fetched: 502, the private host never asked', async () => {
    const { r, box } = await ask('moved', {
      title: 'A page',
      webpage_url: pub('/watch'),
      formats: [format('0', pub('/v.mp4'))],
      subtitles: { en: vtt(pub('/moved.vtt')) },
    })
    try {
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      for (const s of r.body.return.subtitles) {
        const link = new URL(s.url)
        const res = await box.request(link.pathname + link.search)
        expect(res.status).toBe(502)
        expect(await res.text()).not.toContain('Router password')
      }
      expect(secretHits).toEqual([])
    } finally {
      await box.cleanup()
    }
  })
})

describe('playlists', () => {
  const entry = (i: number, formats: unknown[], thumbnail: string) => ({
    title: `Video ${i}`,
    playlist_title: 'A list',
    playlist_webpage_url: pub('/watch'),
    playlist_index: i,
    webpage_url: pub(`/watch/${i}`),
    thumbnail,
    formats,
  })

  test('an entry whose formats are all private is left out; a private thumbnail is dropped; a private format too', async () => {
    const { r, tickets, box } = await ask(
      'list',
      [
        entry(1, [format('lan', 'http://192.168.1.1/cam.mp4')], pub('/1.jpg')),
        entry(2, [format('pub', pub('/2.mp4'))], 'http://127.0.0.1/thumb.jpg'),
        entry(3, [format('loop', priv('/3.mp4')), format('pub', pub('/3.mp4'))], pub('/3.jpg')),
        entry(4, [format('meta', 'http://169.254.169.254/latest/meta-data/')], pub('/4.jpg')),
      ],
      { playlist: '1' },
    )
    try {
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      const ret = r.body.return
      expect(
        ret.entries.map((e: { index: number; thumbnail: string | null; formats: { id: string }[] }) => [
          e.index,
          e.thumbnail,
          e.formats.map((f) => f.id),
        ]),
      ).toEqual([
        [2, null, ['pub', 'pub/mp3', 'pub/m4a', 'pub/opus']],
        [3, pub('/3.jpg'), ['pub', 'pub/mp3', 'pub/m4a', 'pub/opus']],
      ])
      expect(tickets).toBe(8) // each entry's format and its three extracted audio formats
    } finally {
      await box.cleanup()
    }
  })

  test('a run the time limit cuts short answers the entries printed by then, truncated', async () => {
    const { r, box } = await ask(
      'cut',
      [entry(1, [format('a', pub('/1.mp4'))], pub('/1.jpg')), entry(2, [format('b', pub('/2.mp4'))], pub('/2.jpg'))],
      { playlist: '1' },
      { then: 'sleep 10', media: { extract_timeout: 1 } },
    )
    try {
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      expect(r.body.return).toMatchObject({ title: 'A list', source: pub('/watch'), truncated: true, count: 2 })
      expect(r.body.return.entries.map((e: { index: number }) => e.index)).toEqual([1, 2])
      // Without playlist=1 the same cut run is the usual timeout.
      const one = await box.get('/api/download.json', { url: pub('/watch') }, { 'x-api-key': await box.account('v') })
      expect([one.status, one.body.code]).toEqual([504, 'timeout'])
    } finally {
      await box.cleanup()
    }
  }, 30_000)

  test('every entry private: 400 private_address, no ticket made', async () => {
    const { r, tickets, box } = await ask(
      'allpriv',
      [
        entry(1, [format('lan', 'http://10.0.0.1/a.mp4')], pub('/1.jpg')),
        entry(2, [format('loop', priv('/b.mp4'))], pub('/2.jpg')),
      ],
      { playlist: '1' },
    )
    try {
      expect([r.status, r.body.code]).toEqual([400, 'private_address'])
      expect(tickets).toBe(0)
    } finally {
      await box.cleanup()
    }
  })
})
