// WebVTT to SubRip, as a pure function: cue timings with a comma and hours always written, cues numbered from 1,
// cue settings, NOTE/STYLE/REGION blocks and tags other than <b>, <i>, <u> (which SRT players know) left out.

const TIMING = /^\s*((?:\d+:)?\d{2}:\d{2}[.,]\d{1,3})\s+-->\s+((?:\d+:)?\d{2}:\d{2}[.,]\d{1,3})(?:\s.*)?$/

/** `mm:ss.ttt` or `h:mm:ss.ttt` as SRT writes it: `hh:mm:ss,ttt`. */
export function srtTime(vtt: string): string {
  const [clock, fraction = '0'] = vtt.split(/[.,]/)
  const parts = clock!.split(':')
  if (parts.length === 2) parts.unshift('0')
  const [h, m, s] = parts
  return `${h!.padStart(2, '0')}:${m}:${s},${fraction.padEnd(3, '0')}`
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', nbsp: '\u00a0', lrm: '\u200e', rlm: '\u200f' }

/** A cue's text: tags but b, i and u out (voice, class, ruby, lang, timestamps), entities decoded. */
export function cueText(line: string): string {
  return line
    .replace(/<\/?([a-z]*)[^>]*>/gi, (tag, name: string) =>
      ['b', 'i', 'u'].includes(name.toLowerCase()) ? tag.replace(/^(<\/?[biuBIU])[^>]*>/, '$1>').toLowerCase() : '',
    )
    .replace(/&(amp|lt|gt|nbsp|lrm|rlm);/g, (_, name: string) => ENTITIES[name]!)
}

/** The SubRip text of a WebVTT file (an empty string when it has no cue). */
export function vttToSrt(vtt: string): string {
  const blocks = vtt
    .replace(/^\uFEFF/, '')
    .replace(/\r\n?/g, '\n')
    .split(/\n[ \t]*\n/)
  const cues: string[] = []
  for (const block of blocks) {
    const lines = block.split('\n').filter((l, i) => i > 0 || l.trim() !== '')
    if (lines.length === 0) continue
    const first = lines[0]!.trim()
    if (/^(WEBVTT|NOTE|STYLE|REGION)(\s|$)/.test(first)) continue
    // An identifier line may come before the timing.
    const at = TIMING.test(lines[0]!) ? 0 : lines.length > 1 && TIMING.test(lines[1]!) ? 1 : -1
    if (at < 0) continue
    const [, start, end] = TIMING.exec(lines[at]!)!
    const text = lines
      .slice(at + 1)
      .map(cueText)
      .map((l) => l.trimEnd())
      .filter((l) => l.trim() !== '')
    if (text.length === 0) continue
    cues.push(`${cues.length + 1}\n${srtTime(start!)} --> ${srtTime(end!)}\n${text.join('\n')}\n`)
  }
  return cues.join('\n')
}
