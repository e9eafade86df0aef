// The pure rules of media download, without a subprocess or a socket: what yt-dlp's JSON becomes, what its
// failures mean, how a photo is found in a page, how a Range header is read, and the limiter's bounds. The
// behaviour end to end (real yt-dlp, real fixture pages) is in media.test.ts.
import { describe, expect, test } from 'bun:test'
import {
  classifyFailure,
  errorLine,
  forwardedHeaders,
  mediaFilename,
  MAX_FORMATS,
  parseInfo,
} from '../../src/media/extract'
import { findPhoto, photoExt } from '../../src/media/photo'
import { createLimiter } from '../../src/media/runner'
import { parseRange } from '../../src/media/delivery'

const fmt = (over: Record<string, unknown>) => ({
  format_id: 'f',
  ext: 'mp4',
  protocol: 'https',
  url: 'https://cdn.example/f.mp4',
  ...over,
})

describe('parseInfo', () => {
  test('kinds follow the codecs, and the extension where yt-dlp knows no codec', () => {
    const info = {
      title: 'Clip',
      extractor_key: 'Example',
      webpage_url: 'https://example.com/w',
      duration: 12.5,
      thumbnail: 'https://example.com/t.jpg',
      formats: [
        fmt({ format_id: 'a', ext: 'm4a', vcodec: 'none', acodec: 'mp4a.40.2' }),
        fmt({ format_id: 'v', vcodec: 'avc1', acodec: 'none', width: 640, height: 360, fps: 25 }),
        fmt({ format_id: 'av', vcodec: 'avc1', acodec: 'mp4a' }),
        fmt({ format_id: 'mp3', ext: 'mp3' }),
        fmt({ format_id: 'plain' }),
        fmt({ format_id: 'sb', ext: 'mhtml', vcodec: 'none', acodec: 'none', protocol: 'mhtml' }),
      ],
    }
    const x = parseInfo(info, false)!
    expect(x.formats.map((f) => [f.id, f.kind])).toEqual([
      ['a', 'audio'],
      ['v', 'video'],
      ['av', 'video+audio'],
      ['mp3', 'audio'],
      ['plain', 'video+audio'],
    ])
    expect(x).toMatchObject({
      title: 'Clip',
      kind: 'video',
      extractor: 'Example',
      duration: 12.5,
      thumbnail: 'https://example.com/t.jpg',
    })
    expect(x.formats[1]).toMatchObject({
      width: 640,
      height: 360,
      fps: 25,
      vcodec: 'avc1',
      acodec: null,
      note: '360p',
      method: 'direct',
    })
  })

  test('HLS and DASH are fetched by yt-dlp; protocols the guard proxy cannot see are left out', () => {
    const x = parseInfo(
      {
        title: 't',
        formats: [
          fmt({ format_id: 'hls', protocol: 'm3u8_native', url: 'https://cdn.example/x.m3u8' }),
          fmt({ format_id: 'dash', protocol: 'http_dash_segments' }),
          fmt({ format_id: 'rtmp', protocol: 'rtmp', url: 'rtmp://cdn.example/live' }),
          fmt({ format_id: 'f4m', protocol: 'f4m' }),
          fmt({ format_id: 'file', protocol: 'file', url: 'file:///etc/passwd' }),
          fmt({ format_id: 'ftp', protocol: undefined, url: 'ftp://cdn.example/x.mp4' }),
        ],
      },
      false,
    )!
    expect(x.formats.map((f) => [f.id, f.method])).toEqual([
      ['hls', 'ytdlp'],
      ['dash', 'ytdlp'],
    ])
  })

  test('a merge of the best video and audio is offered only where ffmpeg can make it', () => {
    const info = {
      title: 't',
      ext: 'mp4',
      formats: [
        fmt({ format_id: 'v', vcodec: 'avc1', acodec: 'none', filesize: 100 }),
        fmt({ format_id: 'a', ext: 'm4a', vcodec: 'none', acodec: 'opus', filesize: 20 }),
      ],
      requested_formats: [{ format_id: 'v' }, { format_id: 'a' }],
    }
    expect(parseInfo(info, false)!.formats.map((f) => f.id)).toEqual(['v', 'a'])
    const merged = parseInfo(info, true)!.formats.at(-1)!
    expect(merged).toMatchObject({
      id: 'v+a',
      kind: 'video+audio',
      ext: 'mp4',
      method: 'ytdlp',
      filesize: 120,
      vcodec: 'avc1',
      acodec: 'opus',
    })
  })

  test('nothing fetchable is null (the caller then looks for a photo)', () => {
    expect(parseInfo({ title: 't', formats: [] }, true)).toBeNull()
    expect(parseInfo({ title: 't', formats: [fmt({ protocol: 'rtmp', url: 'rtmp://x/y' })] }, true)).toBeNull()
    expect(parseInfo(null, true)).toBeNull()
    expect(parseInfo('{"x":1}', true)).toBeNull()
  })

  test('a playlist gives its first entry with formats; a single-URL answer is its own format', () => {
    const x = parseInfo(
      {
        _type: 'playlist',
        entries: [null, { title: 'second', url: 'https://cdn.example/s.mp4', ext: 'mp4', format_id: '0' }],
      },
      false,
    )!
    expect(x.title).toBe('second')
    expect(x.formats.map((f) => f.id)).toEqual(['0'])
  })

  test('at most MAX_FORMATS, the best (last) kept; ids repeated once', () => {
    const many = Array.from({ length: MAX_FORMATS + 10 }, (_, i) => fmt({ format_id: `f${i}` }))
    const x = parseInfo({ title: 't', formats: [...many, fmt({ format_id: 'f69' })] }, false)!
    expect(x.formats.length).toBe(MAX_FORMATS)
    expect(x.formats.at(-1)!.id).toBe(`f${MAX_FORMATS + 9}`)
    expect(x.formats[0]!.id).toBe('f10')
  })

  test('titles and notes are one bounded line; bad extensions become bin', () => {
    const x = parseInfo(
      { title: `a\nb\u0000c${'x'.repeat(500)}`, formats: [fmt({ ext: '../../x', format_note: 'n\r\no' })] },
      false,
    )!
    expect(x.title).not.toMatch(/[\n\u0000]/)
    expect(x.title.length).toBeLessThanOrEqual(300)
    expect(x.formats[0]).toMatchObject({ ext: 'bin', note: 'n o' })
  })
})

test('forwardedHeaders keeps the safe headers yt-dlp named, on one line', () => {
  expect(
    forwardedHeaders({
      'User-Agent': 'UA',
      Referer: 'https://e.x/',
      Cookie: 'a=b',
      Host: 'evil',
      'X-Other': '1',
      Accept: 'a\r\nInjected: 1',
    }),
  ).toEqual({ 'user-agent': 'UA', referer: 'https://e.x/', cookie: 'a=b' })
  expect(forwardedHeaders(null)).toEqual({})
})

test('mediaFilename has no folders, no control characters, no leading dots', () => {
  expect(mediaFilename('../../etc/passwd', 'mp4')).toBe('_.._etc_passwd.mp4')
  expect(mediaFilename('..hidden', 'mp4')).toBe('hidden.mp4')
  expect(mediaFilename('a\r\nb', 'mp3')).toBe('a b.mp3')
  expect(mediaFilename('', 'jpg')).toBe('download.jpg')
  expect(mediaFilename('x'.repeat(500), 'mp4').length).toBeLessThanOrEqual(124)
})

describe('failures', () => {
  test('classifyFailure tells the kinds apart', () => {
    expect(classifyFailure('ERROR: Unsupported URL: http://x/')).toBe('unsupported')
    expect(classifyFailure('ERROR: [generic] None: Unable to download webpage: HTTP Error 404: Not Found')).toBe(
      'upstream',
    )
    expect(
      classifyFailure('ERROR: Unable to download webpage: HTTP Error 403: Forbidden by linkbox-guard (private)'),
    ).toBe('private')
    expect(
      classifyFailure(
        'ERROR: Unable to download webpage: <urlopen error Tunnel connection failed: 403 Forbidden by linkbox-guard (private)>',
      ),
    ).toBe('private')
    expect(
      classifyFailure(
        'ERROR: Unable to download webpage: <urlopen error Tunnel connection failed: 504 Gateway Timeout by linkbox-guard (timeout)>',
      ),
    ).toBe('timeout')
    // A site's own 403 is not the guard's.
    expect(classifyFailure('ERROR: Unable to download webpage: HTTP Error 403: Forbidden')).toBe('upstream')
    expect(classifyFailure('ERROR: Unable to download webpage: The read operation timed out')).toBe('timeout')
    expect(classifyFailure("ERROR: '-x' is not a valid URL")).toBe('invalid')
  })

  test("errorLine is the last ERROR line without yt-dlp's advice, exception reprs or credentials", () => {
    const stderr =
      "WARNING: something\nERROR: [generic] None: Unable to download webpage: HTTP Error 404: Not Found (caused by <HTTPError 404: 'Not Found'>); " +
      'please report this issue on https://github.com/yt-dlp/yt-dlp/issues?q= , filling out the template.\n'
    expect(errorLine(stderr)).toBe('Unable to download webpage: HTTP Error 404: Not Found')
    expect(errorLine('ERROR: proxy http://u:secret@127.0.0.1:1/ failed')).toBe('proxy http://127.0.0.1:1/ failed')
    expect(errorLine(`ERROR: ${'y'.repeat(1000)}`).length).toBeLessThanOrEqual(300)
  })
})

describe('findPhoto', () => {
  const page = 'https://photos.example/album/7'
  test('og:image, resolved against the page, entities decoded; its size and the title', () => {
    const html = `<html><head><title>Ignored</title>
      <meta content="/img/7.jpg?w=1&amp;h=2" property="og:image">
      <meta property='og:image:width' content='800'><meta property="og:image:height" content="600">
      <meta property="og:title" content="Sunset &amp; sea"></head></html>`
    expect(findPhoto(html, page)).toEqual({
      url: 'https://photos.example/img/7.jpg?w=1&h=2',
      title: 'Sunset & sea',
      width: 800,
      height: 600,
    })
  })

  test('twitter:image when there is no og:image; the <title> when there is no og:title', () => {
    const html = '<title>A &lt;b&gt; day</title><meta name="twitter:image" content="pic.png">'
    expect(findPhoto(html, page)).toEqual({
      url: 'https://photos.example/album/pic.png',
      title: 'A <b> day',
      width: null,
      height: null,
    })
  })

  test('secure_url first; javascript: and data: are not pictures', () => {
    expect(
      findPhoto(
        '<meta property="og:image" content="http://a/x.jpg"><meta property="og:image:secure_url" content="https://a/x.jpg">',
        page,
      )!.url,
    ).toBe('https://a/x.jpg')
    expect(findPhoto('<meta property="og:image" content="javascript:alert(1)">', page)).toBeNull()
    expect(findPhoto('<meta property="og:image" content="data:image/png;base64,AAAA">', page)).toBeNull()
    expect(findPhoto('<p>no meta here</p>', page)).toBeNull()
  })

  test('photoExt from the content type, else the path, else jpg', () => {
    expect(photoExt('https://a/x', 'image/png')).toBe('png')
    expect(photoExt('https://a/x.JPEG', null)).toBe('jpg')
    expect(photoExt('https://a/x.webp?x=1', 'text/html')).toBe('webp')
    expect(photoExt('https://a/x', null)).toBe('jpg')
  })
})

test('parseRange reads one range of a file and refuses what lies outside it', () => {
  expect(parseRange(null, 100)).toBeNull()
  expect(parseRange('bytes=0-9', 100)).toEqual({ start: 0, end: 9 })
  expect(parseRange('bytes=90-', 100)).toEqual({ start: 90, end: 99 })
  expect(parseRange('bytes=-10', 100)).toEqual({ start: 90, end: 99 })
  expect(parseRange('bytes=-1000', 100)).toEqual({ start: 0, end: 99 })
  expect(parseRange('bytes=50-1000', 100)).toEqual({ start: 50, end: 99 })
  expect(parseRange('bytes=100-', 100)).toBe('unsatisfiable')
  expect(parseRange('bytes=9-5', 100)).toBe('unsatisfiable')
  expect(parseRange('bytes=-0', 100)).toBe('unsatisfiable')
  expect(parseRange('bytes=0-1,5-6', 100)).toBeNull() // several ranges: the whole file
  expect(parseRange('items=0-1', 100)).toBeNull()
})

test('the limiter runs at most N at once, queues Q, refuses the rest with busy and a Retry-After', async () => {
  const limiter = createLimiter(2, 3)
  let running = 0
  let most = 0
  const gates: (() => void)[] = []
  const work = () =>
    limiter.run(async () => {
      running++
      most = Math.max(most, running)
      await new Promise<void>((r) => gates.push(r))
      running--
    })
  const accepted = Array.from({ length: 5 }, work)
  await Bun.sleep(5)
  expect(limiter.running).toBe(2)
  expect(limiter.waiting).toBe(3)
  const refused = await work().catch((e) => e)
  expect(refused).toMatchObject({ status: 503, code: 'busy' })
  expect(Number(refused.headers['Retry-After'])).toBeGreaterThanOrEqual(1)
  // A slot that frees is handed to the next in the queue, never to a newcomer: still at most 2.
  // Newcomers arrive a varying number of microtasks after a run ends, so that one of them comes in the
  // window between the ended run letting go and the woken one resuming.
  for (let newcomer = 0; gates.length || limiter.running; newcomer++) {
    gates.shift()?.()
    for (let i = 0; i < newcomer % 10; i++) await null
    if (newcomer < 30) void work().catch(() => {})
    await Bun.sleep(1)
  }
  await Promise.all(accepted)
  expect(most).toBe(2)
})
