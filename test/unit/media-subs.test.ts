// The pure parts of subtitles and playlists (issue 41): WebVTT to SRT, what yt-dlp's `subtitles` and
// `automatic_captions` become, what a playlist's JSON becomes, and media.playlist_max's bounds. End to end
// with the real yt-dlp: test/e2e/media-subs.test.ts.
import { describe, expect, test } from 'bun:test'
import { buildConfig } from '../../src/kernel/config'
import { ENTRY_FORMATS, parsePlaylist, playlistArgs, playlistOfLines } from '../../src/media/playlist'
import { MAX_SUBTITLE_LANGS, subtitleFormatId, subtitlesOf } from '../../src/media/subtitles'
import { cueText, srtTime, vttToSrt } from '../../src/media/webvtt'

describe('vttToSrt', () => {
  test('timings take a comma and always hours; cues are numbered from 1; settings are dropped', () => {
    expect(srtTime('00:00:01.000')).toBe('00:00:01,000')
    expect(srtTime('01:02.5')).toBe('00:01:02,500')
    expect(srtTime('123:04:05.006')).toBe('123:04:05,006')
    const vtt = 'WEBVTT\n\n00:00:01.000 --> 00:00:02.500 align:start line:90%\nOne\n\n00:02.500 --> 00:03.000\nTwo\n'
    expect(vttToSrt(vtt)).toBe('1\n00:00:01,000 --> 00:00:02,500\nOne\n\n2\n00:00:02,500 --> 00:00:03,000\nTwo\n')
  })

  test('NOTE, STYLE and REGION blocks and the header text are dropped; cue identifiers give way to numbers', () => {
    const vtt = [
      '\uFEFFWEBVTT - with a title',
      'Kind: captions',
      '',
      'REGION',
      'id:fred width:40%',
      '',
      'STYLE',
      '::cue { color: red }',
      '',
      'NOTE',
      'a note over',
      'two lines',
      '',
      'first-cue',
      '00:00:00.000 --> 00:00:01.000',
      'Hi',
      '',
    ].join('\r\n')
    expect(vttToSrt(vtt)).toBe('1\n00:00:00,000 --> 00:00:01,000\nHi\n')
  })

  test('tags are stripped but b, i and u; entities decoded; cues left without text dropped', () => {
    expect(cueText('<v Roger Bingham>We are <c.yellow.bg_blue>in</c> <00:00:01.500>New York')).toBe(
      'We are in New York',
    )
    expect(cueText('<b.loud>bold</b> <i>it</i> <u>under</u> <ruby>漢<rt>kan</rt></ruby> <lang en>x</lang>')).toBe(
      '<b>bold</b> <i>it</i> <u>under</u> 漢kan x',
    )
    expect(cueText('Fish &amp; chips &lt;3 &gt;&nbsp;')).toBe('Fish & chips <3 >\u00a0')
    expect(vttToSrt('WEBVTT\n\n00:00.000 --> 00:01.000\n<c></c>\n\n00:01.000 --> 00:02.000\nkept\n')).toBe(
      '1\n00:00:01,000 --> 00:00:02,000\nkept\n',
    )
  })

  test('a file without cues gives an empty string; a block without a timing is skipped', () => {
    expect(vttToSrt('WEBVTT\n')).toBe('')
    expect(vttToSrt('WEBVTT\n\nnot a cue\nat all\n\n00:00.000 --> 00:01.000\nyes\n')).toBe(
      '1\n00:00:00,000 --> 00:00:01,000\nyes\n',
    )
  })
})

describe('subtitlesOf', () => {
  const track = (lang: string, extra: Record<string, unknown> = {}) => [
    { ext: 'json3', url: `https://s.example/${lang}.json3` },
    { ext: 'vtt', url: `https://s.example/${lang}.vtt`, ...extra },
  ]
  test('written subtitles first, then automatic captions; the vtt track of each; names given or Intl', () => {
    const subs = subtitlesOf({
      subtitles: { en: track('en', { name: 'English (UK)' }), 'pt-BR': track('pt-BR') },
      automatic_captions: { de: track('de') },
      http_headers: { Referer: 'https://v.example/', 'X-Other': 'no' },
    })
    expect(subs).toEqual([
      {
        lang: 'en',
        name: 'English (UK)',
        auto: false,
        upstreamUrl: 'https://s.example/en.vtt',
        headers: { referer: 'https://v.example/' },
      },
      {
        lang: 'pt-BR',
        name: 'Brazilian Portuguese',
        auto: false,
        upstreamUrl: 'https://s.example/pt-BR.vtt',
        headers: { referer: 'https://v.example/' },
      },
      {
        lang: 'de',
        name: 'German',
        auto: true,
        upstreamUrl: 'https://s.example/de.vtt',
        headers: { referer: 'https://v.example/' },
      },
    ])
    expect(subtitleFormatId(subs[2]!, 'srt')).toBe('subtitles/de/auto.srt')
  })

  test('left out: no vtt, not http(s), a segmented protocol, inline data, a strange language code', () => {
    const subs = subtitlesOf({
      subtitles: {
        a: [{ ext: 'srt', url: 'https://s.example/a.srt' }],
        b: [{ ext: 'vtt', url: 'file:///etc/passwd' }],
        c: [{ ext: 'vtt', url: 'https://s.example/c.m3u8', protocol: 'm3u8_native' }],
        d: [{ ext: 'vtt', data: 'WEBVTT\n' }],
        'e/../x': track('e'),
        live_chat: [{ ext: 'json', url: 'https://s.example/chat' }],
      },
      automatic_captions: 'nonsense',
    })
    expect(subs).toEqual([])
  })

  test(`at most ${MAX_SUBTITLE_LANGS} languages, written ones kept before automatic ones`, () => {
    const many = (n: number, p: string) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`${p}${i}`, track(`${p}${i}`)]))
    const subs = subtitlesOf({ subtitles: many(30, 'w'), automatic_captions: many(150, 'a') })
    expect(subs).toHaveLength(MAX_SUBTITLE_LANGS)
    expect(subs.filter((s) => !s.auto)).toHaveLength(30)
  })
})

describe('parsePlaylist', () => {
  const fmt = (id: string, url: string, protocol = 'https') => ({ format_id: id, ext: 'mp4', protocol, url })
  const entry = (i: number, extra: Record<string, unknown> = {}) => ({
    title: `Video ${i}`,
    playlist_index: i,
    webpage_url: `https://v.example/watch/${i}`,
    duration: 10 * i,
    thumbnail: `https://v.example/t/${i}.jpg`,
    formats: [fmt('hls', `https://cdn.example/${i}.m3u8`, 'm3u8_native'), fmt('mp4', `https://cdn.example/${i}.mp4`)],
    ...extra,
  })
  const list = (entries: unknown[], extra: Record<string, unknown> = {}) => ({
    _type: 'playlist',
    title: 'My list',
    extractor_key: 'Example',
    webpage_url: 'https://v.example/list',
    entries,
    ...extra,
  })

  test('entries with their formats, index, title, duration, thumbnail and own page; count and truncated', () => {
    const p = parsePlaylist(
      list([entry(1), null, entry(2)], { playlist_count: 2 }),
      false,
      50,
      'https://v.example/list',
    )!
    expect(p).toMatchObject({
      source: 'https://v.example/list',
      title: 'My list',
      extractor: 'Example',
      count: 2,
      truncated: false,
    })
    expect(
      p.entries.map((e) => [e.index, e.page, e.title, e.duration, e.thumbnail, e.formats.map((f) => f.id)]),
    ).toEqual([
      [1, 'https://v.example/watch/1', 'Video 1', 10, 'https://v.example/t/1.jpg', ['hls', 'mp4']],
      [2, 'https://v.example/watch/2', 'Video 2', 20, 'https://v.example/t/2.jpg', ['hls', 'mp4']],
    ])
  })

  test('one entry past the bound (yt-dlp was asked for max + 1) makes it truncated; count from yt-dlp when known', () => {
    expect(playlistArgs(50)).toEqual(['--yes-playlist', '--playlist-items', '1:51'])
    const three = list([entry(1), entry(2), entry(3)])
    expect(parsePlaylist(three, false, 2, 'https://v.example/list')).toMatchObject({ count: 3, truncated: true })
    expect(parsePlaylist(three, false, 2, 'https://v.example/list')!.entries).toHaveLength(2)
    expect(parsePlaylist(list([entry(1)], { playlist_count: 900 }), false, 2, 'x')).toMatchObject({
      count: 900,
      truncated: true,
    })
  })

  test('entries that share the page: after the first, only formats fetched directly (yt-dlp could not pick them)', () => {
    const shared = { webpage_url: 'https://v.example/list' }
    const p = parsePlaylist(
      list([
        entry(1, shared),
        entry(2, shared),
        entry(3, { ...shared, formats: [fmt('h', 'https://c/3.m3u8', 'm3u8_native')] }),
      ]),
      false,
      50,
      'https://v.example/list',
    )!
    expect(p.entries.map((e) => [e.index, e.formats.map((f) => f.id)])).toEqual([
      [1, ['hls', 'mp4']],
      [2, ['mp4']],
    ])
  })

  test(`at most ${ENTRY_FORMATS} formats an entry, the best (last) kept`, () => {
    const formats = Array.from({ length: 45 }, (_, i) => fmt(`f${i}`, `https://cdn.example/${i}.mp4`))
    const p = parsePlaylist(list([entry(1, { formats })]), false, 50, 'x')!
    expect(p.entries[0]!.formats.map((f) => f.id)).toEqual(formats.slice(-ENTRY_FORMATS).map((f) => f.format_id))
  })

  test('a single video is a playlist of one; nothing fetchable is null', () => {
    const one = parsePlaylist(entry(7), false, 50, 'https://v.example/watch/7')!
    expect(one).toMatchObject({ count: 1, truncated: false, title: 'Video 7' })
    expect(one.entries.map((e) => e.index)).toEqual([1])
    expect(parsePlaylist(list([{ title: 'x', formats: [] }]), false, 50, 'x')).toBeNull()
    expect(parsePlaylist('nope', false, 50, 'x')).toBeNull()
  })
})

describe('playlistOfLines (yt-dlp -j: a JSON line per entry)', () => {
  const line = (i: number) =>
    JSON.stringify({
      title: `Video ${i}`,
      playlist_index: i,
      playlist_title: 'My list',
      playlist_webpage_url: 'https://v.example/list',
      playlist_count: 4,
      extractor_key: 'Example',
      webpage_url: `https://v.example/watch/${i}`,
      formats: [{ format_id: 'mp4', ext: 'mp4', protocol: 'https', url: `https://cdn.example/${i}.mp4` }],
    })
  test('the playlist from its entries: title, page and count as each entry names them', () => {
    const p = playlistOfLines(`${line(1)}\n${line(2)}\n`, false, 50, 'https://v.example/list?x')!
    expect(p).toMatchObject({
      title: 'My list',
      source: 'https://v.example/list',
      extractor: 'Example',
      count: 4,
      truncated: false,
    })
    expect(p.entries.map((e) => e.index)).toEqual([1, 2])
  })
  test('a run cut short: the incomplete last line is left out and the list is truncated', () => {
    const p = playlistOfLines(`${line(1)}\n${line(2).slice(0, 40)}`, false, 50, 'x', true)!
    expect(p.entries.map((e) => e.index)).toEqual([1])
    expect(p.truncated).toBe(true)
    expect(playlistOfLines('{"title": "half', false, 50, 'x', true)).toBeNull()
  })
  test('one line without a playlist index is a single video', () => {
    const single = JSON.parse(line(1))
    delete single.playlist_index
    expect(playlistOfLines(`${JSON.stringify(single)}\n`, false, 50, 'x')).toMatchObject({ count: 1, title: 'Video 1' })
  })
})

describe('media.playlist_max', () => {
  test('defaults to 50; 1 to 500; anything else is refused naming the key', () => {
    expect(buildConfig({}).media.playlist_max).toBe(50)
    expect(buildConfig({ media: { playlist_max: 500 } }).media.playlist_max).toBe(500)
    expect(() => buildConfig({ media: { playlist_max: 0 } })).toThrow('"media.playlist_max" must be between 1 and 500')
    expect(() => buildConfig({ media: { playlist_max: 501 } })).toThrow('"media.playlist_max"')
    expect(() => buildConfig({ media: { playlist_max: 'many' } })).toThrow(
      '"media.playlist_max" must be a whole number',
    )
  })
})
