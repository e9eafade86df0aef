// Media download end to end (SPEC §6, issue 9): the real yt-dlp reads local fixture pages on 127.0.0.1
// (test/support/media-fixtures.ts) through the guard proxy, and the files are fetched back through the
// signed /dl links and compared byte for byte with what the fixture server holds.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { lookup } from 'node:dns/promises'
import { rmSync } from 'node:fs'
import { createLinkbox } from '../../src/app/app'
import { makeBox, readAnswer, tempDir, testConfig, type TestBox } from '../support/app'
import { startMediaFixtures, type FixtureName, type MediaFixtures } from '../support/media-fixtures'

const LONG = 60_000
let fx: MediaFixtures
let box: TestBox
let key: string
let origin: string

beforeAll(async () => {
  fx = await startMediaFixtures()
  box = await makeBox({ media: { allow_private_networks: true }, server: { host: '127.0.0.1', port: 0 } })
  key = await box.account('media')
  // HEAD is asked over a real socket: that is where Bun decides what a body-less answer's headers say.
  origin = `http://127.0.0.1:${box.listen().port}`
})
afterAll(async () => {
  await box?.cleanup()
  await fx?.stop()
})

const download = (url: string, b: TestBox = box, k = key) => b.get('/api/download.json', { url }, { 'x-api-key': k })
/** The path and query of a signed link (the box answers in-process, whatever its base URL). */
const local = (link: string) => {
  const u = new URL(link)
  return u.pathname + u.search
}
/** The page's own formats: without the audio extracted from them (media-audio.test.ts checks those). */
const pageOwn = (formats: any[]) => formats.filter((f) => !/\/(mp3|m4a|opus)$/.test(f.id))
const bytesOf = async (res: Response) => new Uint8Array(await res.arrayBuffer())
/** A fixture URL no other test asks for, so that the 10-minute cache and the in-flight sharing stay out of the way. */
let unique = 0
const fresh = (name: FixtureName) => `${fx.url(name)}${fx.url(name).includes('?') ? '&' : '?'}t=${++unique}`

async function ffprobe(bytes: Uint8Array): Promise<string[]> {
  const dir = tempDir('linkbox-probe-')
  try {
    await Bun.write(`${dir}/f`, bytes)
    const p = Bun.spawn(
      ['ffprobe', '-v', 'error', '-show_entries', 'stream=codec_type,codec_name', '-of', 'csv=p=0', `${dir}/f`],
      { stdout: 'pipe' },
    )
    return (await new Response(p.stdout).text()).trim().split('\n').sort()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

describe('download.json against the fixture pages', () => {
  test(
    'a page with <video src>: one format, a signed link that gives the file byte for byte',
    async () => {
      const r = await download(fx.url('video-page'))
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      const ret = r.body.return
      expect(ret).toMatchObject({
        source: fx.url('video-page'),
        title: 'Fixture video page (1)',
        kind: 'video',
        extractor: 'HTML5MediaEmbed',
        duration: null,
        thumbnail: `${fx.origin}/media/photo.jpg`,
      })
      expect(pageOwn(ret.formats)).toHaveLength(1)
      expect(ret.formats[0]).toMatchObject({
        id: '0',
        ext: 'mp4',
        kind: 'video+audio',
        vcodec: null,
        acodec: null,
        filesize: null,
      })
      // The signed link is on this service, with exp and sig; the upstream URL never shows.
      expect(ret.formats[0].url).toMatch(/^http:\/\/localhost:8080\/dl\/[0-9]+\?exp=[0-9]+&sig=[A-Za-z0-9_-]{43}$/)
      expect(JSON.stringify(ret.formats)).not.toContain(fx.origin)
      const exp = Number(new URL(ret.formats[0].url).searchParams.get('exp'))
      expect(new Date(ret.expires).getTime()).toBe(exp * 1000)
      expect(exp * 1000 - Date.now()).toBeGreaterThan(3500_000) // media.link_ttl = 3600 s

      const served = async () =>
        Number(/^linkbox_media_bytes_served_total (\d+)$/m.exec(await (await box.readMetrics()).text())![1])
      const before = await served()
      const file = await box.request(local(ret.formats[0].url))
      expect(file.status).toBe(200)
      expect(await bytesOf(file)).toEqual(fx.bytes('clip.mp4'))
      expect((await served()) - before).toBe(fx.bytes('clip.mp4').length)
      expect(file.headers.get('content-type')).toBe('video/mp4')
      expect(file.headers.get('content-length')).toBe(String(fx.bytes('clip.mp4').length))
      expect(file.headers.get('content-disposition')).toBe(
        `attachment; filename="Fixture video page (1).mp4"; filename*=UTF-8''Fixture%20video%20page%20%281%29.mp4`,
      )
      expect(file.headers.get('x-content-type-options')).toBe('nosniff')
      expect(file.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox")
      // The headers yt-dlp said the site wants (its Referer) went upstream with our request.
      const upstream = fx.requests.findLast((q) => q.path === '/media/clip.mp4')!
      expect(upstream.headers.referer).toBe(fx.url('video-page'))
      // The ticket is a row: the upstream URL is kept server-side.
      const id = Number(new URL(ret.formats[0].url).pathname.split('/').pop())
      expect(box.db.query('SELECT format_id, method, upstream_url FROM media_tickets WHERE id = ?').get(id)).toEqual({
        format_id: '0',
        method: 'direct',
        upstream_url: fx.url('mp4'),
      })
    },
    LONG,
  )

  test(
    'Range is passed upstream: 206 with exactly those bytes; 416 past the end; HEAD has no body',
    async () => {
      const r = await download(fx.url('mp4'))
      expect(r.status).toBe(200)
      expect(r.body.return).toMatchObject({ kind: 'video', title: 'clip', extractor: 'Generic' })
      const link = local(r.body.return.formats[0].url)
      const all = fx.bytes('clip.mp4')
      for (const [range, start, end] of [
        ['bytes=100-199', 100, 199],
        ['bytes=1000-', 1000, all.length - 1],
        ['bytes=-50', all.length - 50, all.length - 1],
      ] as const) {
        const part = await box.request(link, { headers: { range } })
        expect(part.status, range).toBe(206)
        expect(part.headers.get('content-range'), range).toBe(`bytes ${start}-${end}/${all.length}`)
        expect(await bytesOf(part), range).toEqual(all.subarray(start, end + 1))
        expect(fx.requests.at(-1)!.range).toBe(range)
      }
      const past = await box.request(link, { headers: { range: `bytes=${all.length}-` } })
      expect(past.status).toBe(416)
      expect(past.headers.get('content-range')).toBe(`bytes */${all.length}`)

      const head = await fetch(origin + link, { method: 'HEAD' })
      expect(head.status).toBe(200)
      expect(head.headers.get('content-length')).toBe(String(all.length))
      expect(head.headers.get('content-disposition')).toStartWith('attachment; filename="clip.mp4"')
      expect((await head.arrayBuffer()).byteLength).toBe(0)
      expect(fx.requests.at(-1)!.method).toBe('HEAD')
    },
    LONG,
  )

  test(
    'og:video only: a video; direct audio files: kind audio',
    async () => {
      const [og, m4a, mp3] = await Promise.all([
        download(fx.url('og-video-page')),
        download(fx.url('m4a')),
        download(fx.url('mp3')),
      ])
      expect(og.body.return).toMatchObject({
        kind: 'video',
        title: 'Open Graph clip',
        thumbnail: `${fx.origin}/media/photo.jpg`,
      })
      expect(await bytesOf(await box.request(local(og.body.return.formats[0].url)))).toEqual(fx.bytes('clip.mp4'))
      expect(m4a.body.return).toMatchObject({ kind: 'audio', title: 'tone' })
      expect(m4a.body.return.formats[0]).toMatchObject({ ext: 'm4a', kind: 'audio', vcodec: null })
      expect(mp3.body.return.formats[0]).toMatchObject({ ext: 'mp3', kind: 'audio' })
      expect(await bytesOf(await box.request(local(mp3.body.return.formats[0].url)))).toEqual(fx.bytes('tone.mp3'))
    },
    LONG,
  )

  test(
    'photo pages (og:image, twitter:image) and a direct picture: kind photo, the picture byte for byte',
    async () => {
      const [og, tw, jpg] = await Promise.all([
        download(fx.url('photo-page')),
        download(fx.url('twitter-photo-page')),
        download(fx.url('jpg')),
      ])
      expect(og.status, JSON.stringify(og.body)).toBe(200)
      expect(og.body.return).toMatchObject({
        kind: 'photo',
        title: 'A photo & a caption',
        extractor: 'og:image',
        source: fx.url('photo-page'),
      })
      expect(og.body.return.formats).toHaveLength(1)
      expect(og.body.return.formats[0]).toMatchObject({ id: 'photo', ext: 'jpg', kind: 'photo' })
      expect(tw.body.return).toMatchObject({ kind: 'photo', title: 'Fixture twitter photo page' })
      expect(jpg.body.return).toMatchObject({ kind: 'photo' })
      for (const answer of [og, tw, jpg]) {
        const file = await box.request(local(answer.body.return.formats[0].url))
        expect(file.status).toBe(200)
        expect(file.headers.get('content-type')).toBe('image/jpeg')
        expect(await bytesOf(file)).toEqual(fx.bytes('photo.jpg'))
      }
      // The picture's URL had "&amp;" in the page: it was asked for with a plain "&".
      expect(fx.requests.some((q) => q.path === '/media/photo.jpg?w=160&h=120')).toBe(true)
      expect(fx.requests.some((q) => q.path === '/media/photo.jpg?from=twitter&size=small')).toBe(true)
    },
    LONG,
  )

  test(
    'a 404 is upstream_failed (502) naming the status; a page with nothing is unsupported_url (400)',
    async () => {
      const [missing, empty] = await Promise.all([download(fx.url('missing')), download(fx.url('empty-page'))])
      expect(missing.status).toBe(502)
      expect(missing.body).toEqual({
        status: 'error',
        code: 'upstream_failed',
        message: 'The page could not be read: Unable to download webpage: HTTP Error 404: Not Found.',
      })
      expect(empty.status).toBe(400)
      expect(empty.body.code).toBe('unsupported_url')
      expect(empty.body.message).toContain('"url"')
    },
    LONG,
  )

  test(
    'HLS: fetched whole by yt-dlp into the cache once, however many ask at the same time; a playable mp4',
    async () => {
      const r = await download(fx.url('hls-page'))
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      expect(pageOwn(r.body.return.formats).map((f: any) => [f.id, f.ext, f.kind])).toEqual([
        ['hls', 'mp4', 'video+audio'],
      ])
      const link = local(r.body.return.formats[0].url)
      const before = fx.requests.filter((q) => q.path.endsWith('seg0.ts')).length
      const answers = await Promise.all([
        box.request(link),
        box.request(link),
        box.request(link, { headers: { range: 'bytes=0-99' } }),
      ])
      expect(answers.map((a) => a.status)).toEqual([200, 200, 206])
      const [a, b, c] = await Promise.all(answers.map(bytesOf))
      expect(a).toEqual(b!)
      expect(c).toEqual(a!.subarray(0, 100))
      expect(fx.requests.filter((q) => q.path.endsWith('seg0.ts')).length - before).toBe(1)
      expect(await ffprobe(a!)).toEqual(['aac,audio', 'h264,video'])
      expect(answers[0]!.headers.get('content-disposition')).toStartWith(
        'attachment; filename="Fixture HLS page (1).mp4"',
      )
    },
    LONG,
  )

  test(
    'DASH: separate video and audio, and their merge (ffmpeg) as one more format',
    async () => {
      const r = await download(fx.url('dash-page'))
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      expect(pageOwn(r.body.return.formats).map((f: any) => [f.id, f.kind])).toEqual([
        ['1', 'audio'],
        ['0', 'video'],
        ['0+1', 'video+audio'],
      ])
      const [audio, video, merged] = await Promise.all(
        pageOwn(r.body.return.formats).map(async (f: any) => bytesOf(await box.request(local(f.url)))),
      )
      expect(await ffprobe(audio!)).toEqual(['aac,audio'])
      expect(await ffprobe(video!)).toEqual(['h264,video'])
      expect(await ffprobe(merged!)).toEqual(['aac,audio', 'h264,video'])
    },
    LONG,
  )

  test(
    'identical requests at once share one extraction; a second ask within 10 minutes is answered from the cache',
    async () => {
      const url = fresh('video-page')
      const path = new URL(url).pathname + new URL(url).search
      const answers = await Promise.all(Array.from({ length: 4 }, () => download(url)))
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200])
      expect(fx.requests.filter((q) => q.path === path).length).toBe(1)
      const again = await download(url)
      expect(again.status).toBe(200)
      expect(fx.requests.filter((q) => q.path === path).length).toBe(1)
      // The same caller gets the same tickets (a fresh signature each time).
      const id = (a: any) => new URL(a.body.return.formats[0].url).pathname
      expect(id(again)).toBe(id(answers[0]))
      const metrics = await (await box.readMetrics()).text()
      expect(metrics).toMatch(/^linkbox_media_extractions_total\{outcome="cached"\} [1-9]/m)
      expect(metrics).toMatch(/^linkbox_media_bytes_served_total [1-9][0-9]*$/m)
    },
    LONG,
  )
})

describe('signed links', () => {
  let link: string
  beforeAll(async () => {
    link = local((await download(fx.url('mp4'))).body.return.formats[0].url)
  }, LONG)
  const [path, query] = [() => link.split('?')[0]!, () => new URLSearchParams(link.split('?')[1])]

  test('a changed signature, exp or id is 403; no signature is 403', async () => {
    const q = query()
    const sig = q.get('sig')!
    const flipped = (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1)
    const id = Number(path().split('/').pop())
    for (const bad of [
      `${path()}?exp=${q.get('exp')}&sig=${flipped}`,
      `${path()}?exp=${Number(q.get('exp')) + 1}&sig=${sig}`,
      `/dl/${id + 1000}?exp=${q.get('exp')}&sig=${sig}`,
      path(),
    ]) {
      const r = await readAnswer(await box.request(bad))
      expect(r.status, bad).toBe(403)
      expect(r.headers.get('content-disposition'), bad).toBeNull()
    }
  })

  test('an expired link is 410; a well-signed link to no ticket is 404', async () => {
    const id = path().split('/').pop()!
    const old = box.signer.sign(`dl-${id}`, Date.now() - 1000)
    expect((await box.request(`/dl/${id}?${old.query}`)).status).toBe(410)
    const none = box.signer.sign('dl-987654321', Date.now() + 60_000)
    expect((await box.request(`/dl/987654321?${none.query}`)).status).toBe(404)
    // A mail link's signature does not open a media ticket with the same number.
    const mail = box.signer.sign(`mail-raw-${id}`, Date.now() + 60_000)
    expect((await box.request(`/dl/${id}?${mail.query}`)).status).toBe(403)
  })

  test(
    'links survive a restart: tickets and the secret are in the data directory',
    async () => {
      const dir = tempDir()
      const config = testConfig(dir, { media: { allow_private_networks: true } })
      const first = createLinkbox(config)
      const k = (await first.accounts.createAccount({ name: 'r' })).key.key
      const answer = await readAnswer(
        await first.app.handle(
          new Request(`http://localhost:8080/api/download.json?url=${encodeURIComponent(fx.url('m4a'))}`, {
            headers: { 'x-api-key': k },
          }),
        ),
      )
      expect(answer.status).toBe(200)
      await first.close()
      const second = createLinkbox(config)
      try {
        const file = await second.app.handle(new Request(answer.body.return.formats[0].url))
        expect(file.status).toBe(200)
        expect(await bytesOf(file)).toEqual(fx.bytes('tone.m4a'))
      } finally {
        await second.close()
        rmSync(dir, { recursive: true, force: true })
      }
    },
    LONG,
  )
})

describe('input that tries to become something else', () => {
  test('a url starting with "-", or with spaces, newlines or control characters, is refused before yt-dlp runs', async () => {
    const before = fx.requests.length
    for (const url of [
      '-o/tmp/x',
      '--exec=touch /tmp/pwned',
      `${fx.url('video-page')} --exec=id`,
      `${fx.url('video-page')}\n--exec=id`,
      `${fx.url('video-page')}\t-x`,
      'file:///etc/passwd',
      'ftp://127.0.0.1/x',
      `http://u:p@127.0.0.1:1/`,
    ]) {
      const r = await download(url)
      expect(r.status, url).toBe(400)
      expect(r.body.code, url).toBe('invalid_url')
      expect(r.body.message, url).toContain('"url"')
    }
    expect(fx.requests.length).toBe(before)
  })

  test(
    'option-like text inside a URL stays part of the URL (it follows --)',
    async () => {
      const marker = `${box.dir}/exec-ran`
      const r = await download(`${fx.url('video-page')}?x=--exec%3Dtouch%20${encodeURIComponent(marker)}`)
      expect(r.status).toBe(200)
      expect(await Bun.file(marker).exists()).toBe(false)
    },
    LONG,
  )

  test('no key: 401; a key without the media scope: 403', async () => {
    expect((await box.get('/api/download.json', { url: fx.url('mp4') })).status).toBe(401)
    const qrOnly = (await box.accounts.createKey({ account: 'media', scopes: ['qr'] })).key
    const r = await download(fx.url('mp4'), box, qrOnly)
    expect([r.status, r.body.code]).toEqual([403, 'scope_denied'])
  })
})

describe('the guard', () => {
  test(
    'with private networks not allowed, every local form of the fixture address is refused',
    async () => {
      const system = async (host: string) => (await lookup(host, { all: true })).map((a) => a.address)
      const guarded = await makeBox(
        {},
        { resolve: async (host) => (host === 'fixture.test' ? ['127.0.0.1'] : system(host)) },
      )
      try {
        const k = await guarded.account('g')
        const port = new URL(fx.origin).port
        const before = fx.requests.length
        for (const host of [
          '127.0.0.1',
          'localhost',
          '2130706433',
          '0x7f000001',
          '0177.0.0.1',
          '127.1',
          '[::ffff:127.0.0.1]',
          '[::1]',
          'fixture.test',
        ]) {
          const r = await download(`http://${host}:${port}/pages/video.html`, guarded, k)
          expect(r.status, host).toBe(400)
          expect(r.body.code, host).toBe('private_address')
        }
        expect(fx.requests.length).toBe(before)
      } finally {
        await guarded.cleanup()
      }
    },
    LONG,
  )

  test(
    'a redirect from an allowed host to a private one is refused by the proxy while yt-dlp reads the page',
    async () => {
      // 127.0.0.2 plays a public site (the only address the guard lets through); it redirects to the fixture
      // on 127.0.0.1, which stays private. yt-dlp follows redirects itself, so only the proxy can stop it.
      const site = Bun.serve({
        hostname: '127.0.0.2',
        port: 0,
        fetch: () => Response.redirect(fx.url('video-page'), 302),
      })
      const guarded = await makeBox(
        {},
        { resolve: async (host) => (host === 'public.test' ? ['127.0.0.2'] : []), isAllowed: (a) => a === '127.0.0.2' },
      )
      try {
        const k = await guarded.account('g')
        const before = fx.requests.length
        const r = await download(`http://public.test:${site.port}/watch?t=${++unique}`, guarded, k)
        expect([r.status, r.body.code]).toEqual([400, 'private_address'])
        expect(fx.requests.length).toBe(before)
      } finally {
        await guarded.cleanup()
        site.stop(true)
      }
    },
    LONG,
  )
})

test('a media.ytdlp_path that cannot be run: 503 unavailable, naming doctor', async () => {
  const broken = await makeBox({ media: { allow_private_networks: true, ytdlp_path: '/nonexistent/yt-dlp' } })
  try {
    const r = await download(fx.url('mp4'), broken, await broken.account('u'))
    expect([r.status, r.body.code]).toEqual([503, 'unavailable'])
    expect(r.body.message).toContain('linkbox doctor')
  } finally {
    await broken.cleanup()
  }
})

describe('limits', () => {
  test(
    'past max_concurrent and the short queue: 503 busy with Retry-After; the rest are answered',
    async () => {
      const busyBox = await makeBox({ media: { allow_private_networks: true, max_concurrent: 1 } })
      try {
        const k = await busyBox.account('b')
        // Twelve different pages (no sharing), each answered after 300 ms: 1 runs, 4 wait, 7 are refused.
        const answers = await Promise.all(
          Array.from({ length: 12 }, (_, i) => download(`${fx.url('video-page')}?delay=300&busy=${i}`, busyBox, k)),
        )
        const statuses = answers.map((a) => a.status).sort()
        expect(statuses.filter((s) => s === 200).length).toBe(5)
        expect(statuses.filter((s) => s === 503).length).toBe(7)
        for (const a of answers.filter((a) => a.status === 503)) {
          expect(a.body.code).toBe('busy')
          expect(Number(a.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
        }
        expect(await (await busyBox.readMetrics()).text()).toMatch(
          /^linkbox_media_extractions_total\{outcome="busy"\} 7$/m,
        )
      } finally {
        await busyBox.cleanup()
      }
    },
    LONG,
  )

  test(
    'extract_timeout: 504 timeout, and yt-dlp is killed',
    async () => {
      const slowBox = await makeBox({ media: { allow_private_networks: true, extract_timeout: 2 } })
      try {
        const k = await slowBox.account('s')
        const url = `${fx.url('video-page')}?delay=20000&timeout-test=${++unique}`
        const started = performance.now()
        const r = await download(url, slowBox, k)
        expect(r.status).toBe(504)
        expect(r.body).toEqual({ status: 'error', code: 'timeout', message: 'The page could not be read within 2 s.' })
        expect(performance.now() - started).toBeLessThan(15_000)
        const left = Bun.spawnSync(['pgrep', '-f', `timeout-test=${unique}`])
          .stdout.toString()
          .trim()
        expect(left).toBe('')
      } finally {
        await slowBox.cleanup()
      }
    },
    LONG,
  )
})
