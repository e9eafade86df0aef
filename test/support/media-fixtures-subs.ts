// The subtitle and playlist fixtures of issue 41 (served by media-fixtures.ts): a page whose <video> has two
// <track>s (WebVTT with a NOTE, a STYLE block, cue settings, voice and class tags, an entity), and a page with
// three <video>s, each its own copy of the clip. What yt-dlp 2025.04.30 makes of them: the generic extractor
// (HTML5MediaEmbed) reports the tracks as `subtitles` {en, fr} with ext vtt and no name (it drops the label),
// and the three videos as a playlist of three entries (with --no-playlist too).

/** The English track, as served. */
export const EN_VTT = [
  'WEBVTT',
  '',
  'NOTE made for the linkbox tests',
  '',
  'STYLE',
  '::cue { color: yellow }',
  '',
  'intro',
  '00:00.000 --> 00:00:01.000 line:0 position:50%',
  '<v Narrator>Hello, <c.loud>world</c>!',
  '',
  '00:00:01.000 --> 00:00:01.900',
  'Fish &amp; <i>chips</i>',
  'second line',
  '',
].join('\n')

/** What linkbox makes of EN_VTT as SRT. */
export const EN_SRT = [
  '1',
  '00:00:00,000 --> 00:00:01,000',
  'Hello, world!',
  '',
  '2',
  '00:00:01,000 --> 00:00:01,900',
  'Fish & <i>chips</i>',
  'second line',
  '',
].join('\n')

export const FR_VTT = 'WEBVTT\n\n00:00:00.000 --> 00:00:02.000\nBonjour\n'

const page = (title: string, body: string) =>
  `<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>${title}</title>\n</head>\n<body>\n${body}\n</body>\n</html>\n`

/** Pages under /pages/. */
export const SUBS_PAGES: Record<string, string> = {
  'subtitles.html': page(
    'Fixture subtitles page',
    [
      '<video src="../media/clip.mp4" controls>',
      '<track kind="subtitles" srclang="en" label="English" src="../media/subs/en.vtt">',
      '<track kind="captions" srclang="fr" label="Français" src="/media/subs/fr.vtt">',
      '</video>',
    ].join('\n'),
  ),
  'three-videos.html': page(
    'Fixture playlist page',
    ['one', 'two', 'three']
      .map((n) => `<h2>${n}</h2>\n<video src="../media/clip-${n}.mp4" controls></video>`)
      .join('\n'),
  ),
}

/** Files under /media/: the subtitles, and a copy of the clip for each video of the playlist page. */
export function subsFiles(clip: Uint8Array<ArrayBuffer>): Record<string, Uint8Array<ArrayBuffer>> {
  const text = (s: string) => new TextEncoder().encode(s) as Uint8Array<ArrayBuffer>
  return {
    'subs/en.vtt': text(EN_VTT),
    'subs/fr.vtt': text(FR_VTT),
    'clip-one.mp4': clip,
    'clip-two.mp4': clip,
    'clip-three.mp4': clip,
  }
}
