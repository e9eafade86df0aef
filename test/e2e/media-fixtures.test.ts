// What the real yt-dlp (2025.04.30 from Debian 12's backports, the one CI installs with scripts/apt-ytdlp.sh;
// linkbox runs nothing older than 2024.07.01) makes of each media fixture, pinned down
// so the media service can be written against facts, not guesses: exit codes, extractors, the shape of
// formats[] (sometimes there is none and the info itself is the one format), stderr lines, and what comes
// out of a segmented or merged download. Also the fixture server's own Range/HEAD behaviour, because the
// download tests compare the service's answers with it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CLIP, parseRange, startMediaFixtures, type FixtureName, type MediaFixtures } from '../support/media-fixtures'

const YTDLP = Bun.which('yt-dlp') ?? 'yt-dlp'
const FFMPEG = Bun.which('ffmpeg')
const BASE = ['--ignore-config', '--no-cache-dir', '--no-playlist', '--socket-timeout', '10']
const LONG = 120_000

let fx: MediaFixtures
const work = mkdtempSync(join(tmpdir(), 'linkbox-mfix-'))
beforeAll(async () => {
  fx = await startMediaFixtures()
})
afterAll(async () => {
  await fx?.stop()
  rmSync(work, { recursive: true, force: true })
})

interface Run {
  code: number
  stdout: string
  stderr: string
}

// yt-dlp spends ~1 s of CPU importing its extractors; on 2 cores, more than a few at once only queue.
let running = 0
const waiting: (() => void)[] = []
async function ytdlp(args: string[], env?: Record<string, string>): Promise<Run> {
  if (running >= 3) await new Promise<void>((r) => waiting.push(r))
  running++
  try {
    const proc = Bun.spawn([YTDLP, ...BASE, ...args], {
      stdout: 'pipe',
      stderr: 'pipe',
      stdin: 'ignore',
      env: env ?? process.env,
    })
    const [stdout, stderr, code] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
      proc.exited,
    ])
    return { code, stdout, stderr }
  } finally {
    running--
    waiting.shift()?.()
  }
}

/** One extraction per failing URL (its exit code is the fact), shared by the tests that look at it. */
const runs = new Map<string, Promise<Run>>()
const extract = (url: string) => {
  let run = runs.get(url)
  if (!run) runs.set(url, (run = ytdlp(['-J', '--', url])))
  return run
}

// The URLs yt-dlp succeeds on go in one call, one JSON line each in order: a second of Python start-up
// saved per URL, and yt-dlp extracts each URL on its own all the same.
const GOOD: FixtureName[] = [
  'video-page',
  'og-video-page',
  'mp4',
  'm4a',
  'mp3',
  'jpg',
  'hls-page',
  'hls',
  'dash-page',
  'dash',
  'redirect',
]
const spacedUrl = () => `${fx.url('video-page')}?q=a b`
let good: Promise<Map<string, any>> | undefined
function goodInfos(): Promise<Map<string, any>> {
  good ??= (async () => {
    const urls = [...GOOD.map((n) => fx.url(n)), spacedUrl()]
    const r = await ytdlp(['-J', '--', ...urls])
    expect(r.code, r.stderr).toBe(0)
    const lines = r.stdout.trimEnd().split('\n')
    expect(lines).toHaveLength(urls.length)
    return new Map(urls.map((u, i) => [u, JSON.parse(lines[i]!)]))
  })()
  return good
}
// The other runs, each named, all started at once when the yt-dlp tests begin (the limiter queues them).
const marker = () => join(work, 'exec-ran')
/** A PATH with no ffmpeg (nor anything else) on it: yt-dlp runs as on a machine without ffmpeg. */
const noFfmpeg = () => ({ PATH: join(work, 'empty-path') })
const out = (dir: string) => join(work, dir, 'out.%(ext)s')
const PLAN = {
  version: () => ['--version'],
  dashFoo: () => ['-J', '--', '-foo'],
  newline: () => ['-J', '--', `${fx.url('video-page')}\n--exec=touch ${marker()}`],
  timeout: () => ['--socket-timeout', '1', '-J', '--', `${fx.url('video-page')}?delay=20000`],
  hls: () => ['-f', '0', '-o', out('hls'), '--', fx.url('hls')],
  hlsNoFfmpeg: () => ['-f', '0', '-o', out('hls-noff'), '--', fx.url('hls')],
  dash: () => ['--ffmpeg-location', FFMPEG ?? 'ffmpeg', '-f', '0+1', '-o', out('dash'), '--', fx.url('dash')],
  dashNoFfmpeg: () => ['-f', '0+1', '-o', out('dash-noff'), '--', fx.url('dash')],
}
const ENV: Partial<Record<keyof typeof PLAN, () => Record<string, string>>> = {
  hlsNoFfmpeg: noFfmpeg,
  dashNoFfmpeg: noFfmpeg,
}
const planned = new Map<keyof typeof PLAN, Promise<Run>>()
function run(key: keyof typeof PLAN): Promise<Run> {
  let r = planned.get(key)
  if (!r) planned.set(key, (r = ytdlp(PLAN[key](), ENV[key]?.())))
  return r
}

const infoOf = async (url: string): Promise<any> => (await goodInfos()).get(url)
const info = (name: FixtureName) => infoOf(fx.url(name))
const errorLine = (stderr: string) => stderr.split('\n').find((l) => l.startsWith('ERROR: ')) ?? ''

/** The fields the service relies on (http_headers checked separately: yt-dlp picks a random Chrome UA). */
const pick = (f: any) => ({
  format_id: f.format_id,
  ext: f.ext,
  protocol: f.protocol,
  vcodec: f.vcodec ?? null,
  acodec: f.acodec ?? null,
  width: f.width ?? null,
  height: f.height ?? null,
  url: f.url,
})

async function probe(file: string): Promise<{ format: string; duration: number; streams: string[] }> {
  const proc = Bun.spawn(
    [
      'ffprobe',
      '-v',
      'error',
      '-show_entries',
      'format=format_name,duration:stream=codec_type,codec_name,width,height',
      '-of',
      'json',
      file,
    ],
    { stdout: 'pipe', stderr: 'pipe' },
  )
  const out = JSON.parse(await new Response(proc.stdout).text())
  await proc.exited
  return {
    format: out.format.format_name,
    duration: Number(out.format.duration),
    streams: out.streams.map((s: any) =>
      [s.codec_type, s.codec_name, s.width, s.height].filter((x) => x !== undefined).join(' '),
    ),
  }
}

describe('the fixture server', () => {
  test(
    'GET gives the whole file with its type, length and Accept-Ranges; bytes() is what was served',
    async () => {
      const r = await fetch(fx.url('mp4'))
      expect(r.status).toBe(200)
      expect(r.headers.get('content-type')).toBe('video/mp4')
      expect(r.headers.get('accept-ranges')).toBe('bytes')
      const body = new Uint8Array(await r.arrayBuffer())
      expect(r.headers.get('content-length')).toBe(String(body.length))
      expect(body).toEqual(fx.bytes('clip.mp4'))
      expect(fx.bytes('/media/clip.mp4')).toBe(fx.bytes('clip.mp4'))
      expect(() => fx.bytes('nope.mp4')).toThrow(/no media fixture file/)
    },
    LONG,
  )

  test(
    'Range a-b, a- and -n give 206 with Content-Range and exactly those bytes',
    async () => {
      const all = fx.bytes('tone.mp3')
      const n = all.length
      for (const [range, start, end] of [
        ['bytes=0-9', 0, 9],
        ['bytes=100-', 100, n - 1],
        ['bytes=-50', n - 50, n - 1],
        ['bytes=10-99999999', 10, n - 1],
        [`bytes=-${n + 10}`, 0, n - 1],
      ] as const) {
        const r = await fetch(fx.url('mp3'), { headers: { Range: range } })
        expect(r.status, range).toBe(206)
        expect(r.headers.get('content-range'), range).toBe(`bytes ${start}-${end}/${n}`)
        expect(r.headers.get('content-length'), range).toBe(String(end - start + 1))
        expect(new Uint8Array(await r.arrayBuffer()), range).toEqual(all.subarray(start, end + 1))
      }
    },
    LONG,
  )

  test(
    'an unsatisfiable range is 416 with bytes */size; a malformed or multiple range is ignored (200)',
    async () => {
      const n = fx.bytes('tone.mp3').length
      for (const range of [`bytes=${n}-`, `bytes=${n + 5}-${n + 9}`, 'bytes=-0']) {
        const r = await fetch(fx.url('mp3'), { headers: { Range: range } })
        expect(r.status, range).toBe(416)
        expect(r.headers.get('content-range'), range).toBe(`bytes */${n}`)
        await r.arrayBuffer()
      }
      for (const range of ['bytes=0-1,5-9', 'items=0-1', 'bytes=9-2', 'bytes=x-']) {
        const r = await fetch(fx.url('mp3'), { headers: { Range: range } })
        expect(r.status, range).toBe(200)
        expect((await r.arrayBuffer()).byteLength, range).toBe(n)
      }
      expect(parseRange('bytes=5-', 0)).toBe('unsatisfiable')
    },
    LONG,
  )

  test(
    'HEAD gives the headers of GET (ranged too) and no body',
    async () => {
      const n = fx.bytes('clip.mp4').length
      const r = await fetch(fx.url('mp4'), { method: 'HEAD' })
      expect([r.status, r.headers.get('content-length'), r.headers.get('content-type')]).toEqual([
        200,
        String(n),
        'video/mp4',
      ])
      expect((await r.arrayBuffer()).byteLength).toBe(0)
      const ranged = await fetch(fx.url('mp4'), { method: 'HEAD', headers: { Range: 'bytes=10-19' } })
      expect([ranged.status, ranged.headers.get('content-range'), ranged.headers.get('content-length')]).toEqual([
        206,
        `bytes 10-19/${n}`,
        '10',
      ])
    },
    LONG,
  )

  test(
    '404, redirect, 405, ?delay, and the request log',
    async () => {
      const missing = await fetch(fx.url('missing'))
      expect(missing.status).toBe(404)
      expect(await missing.text()).toContain('No such page')
      const go = await fetch(fx.url('redirect'), { redirect: 'manual' })
      expect([go.status, go.headers.get('location')]).toEqual([302, '/pages/video.html'])
      expect((await fetch(`${fx.origin}/go?to=${encodeURIComponent('/a b')}`, { redirect: 'manual' })).status).toBe(400)
      expect((await fetch(fx.url('mp4'), { method: 'POST' })).status).toBe(405)
      // A lower bound only: the answer may be late on a busy machine, never early.
      const started = performance.now()
      const slow = await fetch(`${fx.url('empty-page')}?delay=300`)
      expect(slow.status).toBe(200)
      expect(performance.now() - started).toBeGreaterThanOrEqual(290)
      const seen = fx.requests.find((q) => q.path === '/pages/empty.html?delay=300')
      expect(seen).toMatchObject({ method: 'GET', range: null })
      expect(seen!.headers.host).toBe(new URL(fx.origin).host)
    },
    LONG,
  )

  test(
    'the photo pages name the photo as the service will find it: relative, with &amp; to decode',
    async () => {
      for (const [name, attr, wanted] of [
        ['photo-page', 'property="og:image"', `${fx.origin}/media/photo.jpg?w=160&h=120`],
        ['twitter-photo-page', 'name="twitter:image"', `${fx.origin}/media/photo.jpg?from=twitter&size=small`],
      ] as const) {
        const html = await (await fetch(fx.url(name))).text()
        const raw = new RegExp(`<meta ${attr} content="([^"]+)">`).exec(html)?.[1]
        expect(raw, name).toContain('&amp;')
        const resolved = new URL(raw!.replaceAll('&amp;', '&'), fx.url(name)).href
        expect(resolved, name).toBe(wanted)
        const photo = await fetch(resolved)
        expect(photo.headers.get('content-type'), name).toBe('image/jpeg')
        expect(new Uint8Array(await photo.arrayBuffer()), name).toEqual(fx.bytes('photo.jpg'))
      }
      expect(await (await fetch(fx.url('og-video-page'))).text()).not.toContain('<video')
    },
    LONG,
  )

  test(
    'the media are what the tests assume: h264 160x120 + aac for 2 s, 4 HLS segments, DASH video and audio apart',
    async () => {
      const clip = join(work, 'clip.mp4')
      await Bun.write(clip, fx.bytes('clip.mp4'))
      const p = await probe(clip)
      expect(p.streams).toEqual([`video h264 ${CLIP.width} ${CLIP.height}`, 'audio aac'])
      expect(p.duration).toBeGreaterThan(1.9)
      expect(p.duration).toBeLessThan(2.2)
      const big = join(work, 'big.mp4')
      await Bun.write(big, fx.bytes('big.mp4'))
      expect((await probe(big)).streams).toEqual(p.streams)
      const playlist = new TextDecoder().decode(fx.bytes('hls/index.m3u8'))
      expect(playlist.match(/^seg\d+\.ts$/gm)).toEqual(['seg0.ts', 'seg1.ts', 'seg2.ts', 'seg3.ts'])
      expect(playlist).toContain('#EXT-X-TARGETDURATION:1')
      const mpd = new TextDecoder().decode(fx.bytes('dash/manifest.mpd'))
      expect(mpd).toContain('contentType="video"')
      expect(mpd).toContain('contentType="audio"')
    },
    LONG,
  )
})

describe('what yt-dlp 2025.04.30 makes of each fixture', () => {
  // Start every extraction at once (the limiter runs a few at a time); each test awaits its own.
  beforeAll(() => {
    void goodInfos().catch(() => {})
    for (const key of Object.keys(PLAN) as (keyof typeof PLAN)[]) void run(key)
    for (const name of ['photo-page', 'twitter-photo-page', 'empty-page', 'missing'] as const)
      void extract(fx.url(name))
  })

  test(
    'the version these facts are about',
    async () => {
      const r = await run('version')
      expect(r.stdout.trim()).toBe('2025.04.30')
    },
    LONG,
  )

  test(
    'video page (<video src> relative, poster): html5 extractor, one http format, absolute URLs',
    async () => {
      const i = await info('video-page')
      expect([i.extractor, i.extractor_key, i.id, i.title]).toEqual([
        'html5',
        'HTML5MediaEmbed',
        'video-1',
        'Fixture video page (1)',
      ])
      expect([i.duration ?? null, i.thumbnail, i.webpage_url]).toEqual([
        null,
        `${fx.origin}/media/photo.jpg`,
        fx.url('video-page'),
      ])
      expect(i.formats.map(pick)).toEqual([
        {
          format_id: '0',
          ext: 'mp4',
          protocol: 'http',
          vcodec: null,
          acodec: null,
          width: null,
          height: null,
          url: fx.url('mp4'),
        },
      ])
      expect(i.formats[0].http_headers.Referer).toBe(fx.url('video-page'))
      expect(i.formats[0].http_headers['User-Agent']).toMatch(/^Mozilla\/5\.0 .*Chrome\//)
    },
    LONG,
  )

  test(
    'og:video page: generic, NO formats[] (the info is the one format), thumbnail left relative',
    async () => {
      const i = await info('og-video-page')
      expect([i.extractor, i.extractor_key, i.id, i.title]).toEqual(['generic', 'Generic', 'clip', 'Open Graph clip'])
      expect(i.formats).toBeUndefined()
      expect(pick(i)).toEqual({
        format_id: '0',
        ext: 'mp4',
        protocol: 'http',
        vcodec: null,
        acodec: null,
        width: null,
        height: null,
        url: fx.url('mp4'),
      })
      expect(i.http_headers.Referer).toBe(fx.url('og-video-page'))
      // Not resolved against the page: the service has to do it.
      expect(i.thumbnail).toBe('/media/photo.jpg')
      expect(i.duration ?? null).toBeNull()
    },
    LONG,
  )

  test(
    'direct files: generic, title = file name, one http format whose id names the MIME subtype',
    async () => {
      const [mp4, m4a, mp3] = await Promise.all([info('mp4'), info('m4a'), info('mp3')])
      for (const i of [mp4, m4a, mp3]) {
        expect([i.extractor, i.extractor_key, i.direct, i.duration ?? null, i.thumbnail ?? null]).toEqual([
          'generic',
          'Generic',
          true,
          null,
          null,
        ])
        expect(i.formats).toHaveLength(1)
        expect(i.formats[0].http_headers.Referer).toBeUndefined()
      }
      expect([mp4.title, m4a.title, mp3.title]).toEqual(['clip', 'tone', 'tone'])
      expect(mp4.formats.map(pick)).toEqual([
        {
          format_id: 'mp4',
          ext: 'mp4',
          protocol: 'http',
          vcodec: null,
          acodec: null,
          width: null,
          height: null,
          url: fx.url('mp4'),
        },
      ])
      // Audio is known by vcodec 'none'; acodec is named for mp3 only.
      expect(m4a.formats.map(pick)).toEqual([
        {
          format_id: 'fmp4',
          ext: 'm4a',
          protocol: 'http',
          vcodec: 'none',
          acodec: null,
          width: null,
          height: null,
          url: fx.url('m4a'),
        },
      ])
      expect(mp3.formats.map(pick)).toEqual([
        {
          format_id: 'mpeg',
          ext: 'mp3',
          protocol: 'http',
          vcodec: 'none',
          acodec: 'mp3',
          width: null,
          height: null,
          url: fx.url('mp3'),
        },
      ])
    },
    LONG,
  )

  test(
    'a direct image is "a video" too: exit 0, ext jpg, no formats[] (the service must call it a photo)',
    async () => {
      const i = await info('jpg')
      expect([i.extractor, i.title, i.direct, i.formats]).toEqual(['generic', 'photo', true, undefined])
      expect(pick(i)).toEqual({
        format_id: '0',
        ext: 'jpg',
        protocol: 'http',
        vcodec: null,
        acodec: null,
        width: null,
        height: null,
        url: fx.url('jpg'),
      })
    },
    LONG,
  )

  test(
    'photo pages and the empty page: exit 1, stdout "null", "ERROR: Unsupported URL: <url>"',
    async () => {
      for (const name of ['photo-page', 'twitter-photo-page', 'empty-page'] as const) {
        const r = await extract(fx.url(name))
        expect(r.code, name).toBe(1)
        // -J prints null for a failed URL: an answer on stdout is not a success.
        expect(r.stdout, name).toBe('null\n')
        expect(errorLine(r.stderr), name).toBe(`ERROR: Unsupported URL: ${fx.url(name)}`)
      }
    },
    LONG,
  )

  test(
    '404: exit 1, stdout "null", "HTTP Error 404: Not Found"',
    async () => {
      const r = await extract(fx.url('missing'))
      expect([r.code, r.stdout]).toEqual([1, 'null\n'])
      expect(errorLine(r.stderr)).toStartWith('ERROR: [generic] Unable to download webpage: HTTP Error 404: Not Found')
    },
    LONG,
  )

  test(
    'HLS: the page gives format "hls", the bare playlist "0"; m3u8_native, codecs unknown',
    async () => {
      const [page, bare] = await Promise.all([info('hls-page'), info('hls')])
      expect([page.extractor, page.title]).toEqual(['html5', 'Fixture HLS page (1)'])
      expect(page.formats.map(pick)).toEqual([
        {
          format_id: 'hls',
          ext: 'mp4',
          protocol: 'm3u8_native',
          vcodec: null,
          acodec: null,
          width: null,
          height: null,
          url: fx.url('hls'),
        },
      ])
      expect(page.formats[0].http_headers.Referer).toBe(fx.url('hls-page'))
      expect([bare.extractor, bare.title]).toEqual(['generic', 'index'])
      expect(bare.formats.map(pick)).toEqual([
        {
          format_id: '0',
          ext: 'mp4',
          protocol: 'm3u8_native',
          vcodec: null,
          acodec: null,
          width: null,
          height: null,
          url: fx.url('hls'),
        },
      ])
    },
    LONG,
  )

  test(
    'DASH: video-only "0" and audio-only "1", both http_dash_segments, chosen together as "0+1"',
    async () => {
      const [page, bare] = await Promise.all([info('dash-page'), info('dash')])
      expect([page.extractor, page.title, bare.extractor, bare.title]).toEqual([
        'html5',
        'Fixture DASH page (1)',
        'generic',
        'manifest',
      ])
      for (const i of [page, bare]) {
        expect(i.format_id).toBe('0+1')
        expect(i.requested_formats.map((f: any) => f.format_id)).toEqual(['0', '1'])
        // Worst first, as yt-dlp sorts them: the audio, then the video.
        expect(i.formats.map(pick)).toEqual([
          {
            format_id: '1',
            ext: 'm4a',
            protocol: 'http_dash_segments',
            vcodec: 'none',
            acodec: 'mp4a.40.2',
            width: null,
            height: null,
            url: fx.url('dash'),
          },
          {
            format_id: '0',
            ext: 'mp4',
            protocol: 'http_dash_segments',
            vcodec: 'avc1.42c00a',
            acodec: 'none',
            width: CLIP.width,
            height: CLIP.height,
            url: fx.url('dash'),
          },
        ])
        expect(i.formats.map((f: any) => f.fragments.length)).toEqual([5, 5])
      }
    },
    LONG,
  )

  test(
    'a redirect is followed: webpage_url is where it ended, original_url what was asked',
    async () => {
      const i = await info('redirect')
      expect([i.extractor, i.webpage_url, i.original_url]).toEqual(['html5', fx.url('video-page'), fx.url('redirect')])
      expect(i.formats[0].url).toBe(fx.url('mp4'))
    },
    LONG,
  )

  test(
    '"-foo" after -- is a URL, not an option: exit 1, "is not a valid URL"',
    async () => {
      const r = await run('dashFoo')
      expect([r.code, r.stdout]).toEqual([1, 'null\n'])
      expect(errorLine(r.stderr)).toStartWith(`ERROR: [generic] '-foo' is not a valid URL.`)
    },
    LONG,
  )

  // Python's urlsplit drops CR, LF and tab (bpo-43882): what follows a newline is glued onto the path.
  test(
    'a space is sent as %20; a newline is dropped, the text after it joins the path (never an option)',
    async () => {
      const [i, b] = await Promise.all([infoOf(spacedUrl()), run('newline')])
      expect([i.webpage_url, i.original_url]).toEqual([`${fx.url('video-page')}?q=a%20b`, spacedUrl()])
      expect(b.code).toBe(1)
      expect(errorLine(b.stderr)).toContain('HTTP Error 404: Not Found')
      expect(fx.requests.map((q) => q.path)).toContain(`/pages/video.html--exec=touch%20${marker()}`)
      expect(existsSync(marker())).toBe(false)
    },
    LONG,
  )

  test(
    'a socket timeout shorter than the answer: exit 1, "timed out"',
    async () => {
      const r = await run('timeout')
      expect(r.code).toBe(1)
      expect(errorLine(r.stderr)).toStartWith(
        "ERROR: [generic] Unable to download webpage: timed out (caused by TransportError('timed out'))",
      )
    },
    LONG,
  )
})

describe('fetching segmented and separate formats to a file', () => {
  const files = (dir: string) => (existsSync(dir) ? readdirSync(dir).sort() : [])

  test(
    'HLS -f 0: the native downloader gets 4 fragments; with ffmpeg the file is a real mp4',
    async () => {
      const dir = join(work, 'hls')
      const r = await run('hls')
      expect(r.code, r.stderr).toBe(0)
      expect(r.stdout).toContain('[hlsnative] Total fragments: 4')
      expect(r.stdout).toContain('[FixupM3u8] Fixing MPEG-TS in MP4 container')
      expect(files(dir)).toEqual(['out.mp4'])
      const p = await probe(join(dir, 'out.mp4'))
      expect(p.format).toBe('mov,mp4,m4a,3gp,3g2,mj2')
      expect(p.streams).toEqual([`video h264 ${CLIP.width} ${CLIP.height}`, 'audio aac'])
    },
    LONG,
  )

  test(
    'HLS without ffmpeg: exit 0 and "out.mp4", but it is the MPEG-TS segments joined',
    async () => {
      const dir = join(work, 'hls-noff')
      const r = await run('hlsNoFfmpeg')
      expect(r.code, r.stderr).toBe(0)
      expect(r.stderr).toContain('Install ffmpeg to fix this automatically')
      expect(files(dir)).toEqual(['out.mp4'])
      const joined = Buffer.concat([0, 1, 2, 3].map((n) => fx.bytes(`hls/seg${n}.ts`)))
      expect(Buffer.from(readFileSync(join(dir, 'out.mp4'))).equals(joined)).toBe(true)
    },
    LONG,
  )

  test(
    'DASH -f 0+1 with ffmpeg: merged into one playable out.mp4, the parts deleted',
    async () => {
      expect(FFMPEG).not.toBeNull()
      const dir = join(work, 'dash')
      const r = await run('dash')
      expect(r.code, r.stderr).toBe(0)
      expect(r.stdout).toContain(`[Merger] Merging formats into "${join(dir, 'out.mp4')}"`)
      expect(files(dir)).toEqual(['out.mp4'])
      const p = await probe(join(dir, 'out.mp4'))
      expect(p.streams).toEqual([`video h264 ${CLIP.width} ${CLIP.height}`, 'audio aac'])
      expect(p.duration).toBeGreaterThan(1.9)
    },
    LONG,
  )

  test(
    'DASH -f 0+1 without ffmpeg: exit 0 and two unmerged files, out.f0.mp4 and out.f1.m4a',
    async () => {
      const dir = join(work, 'dash-noff')
      const r = await run('dashNoFfmpeg')
      expect(r.code, r.stderr).toBe(0)
      expect(r.stderr).toContain(
        "WARNING: You have requested merging of multiple formats but ffmpeg is not installed. The formats won't be merged",
      )
      expect(files(dir)).toEqual(['out.f0.mp4', 'out.f1.m4a'])
    },
    LONG,
  )
})
