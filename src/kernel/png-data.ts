// A PNG's pixel data checked before pngjs decodes it: its IDAT chunks inflated by node:zlib, bounded by the size
// its IHDR declares (pngjs's own synchronous inflate misses a broken stream's error under Bun). QR logos and
// preview images both ask it.
import { inflateSync } from 'node:zlib'

/** Whether the IDAT stream inflates, whole and no larger than a width × height image of its IHDR's kind can be. */
export function pngDataIntact(b: Buffer, width: number, height: number): boolean {
  const [depth, colour, interlace] = [b[24]!, b[25]!, b[28]!]
  const channels = ({ 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 } as Record<number, number>)[colour]
  if (!channels || ![1, 2, 4, 8, 16].includes(depth)) return false
  // Rows of filter byte + pixels; an interlaced image has up to 7 passes, each row with its own filter byte.
  const expected = (Math.ceil((width * channels * depth) / 8) + 1) * height
  const limit = interlace ? 2 * expected + 64 : expected
  const idat: Buffer[] = []
  for (let at = 8; at + 8 <= b.length; ) {
    const length = b.readUInt32BE(at)
    const type = b.toString('latin1', at + 4, at + 8)
    if (type === 'IDAT') idat.push(b.subarray(at + 8, at + 8 + length))
    if (type === 'IEND') break
    at += 12 + length
  }
  let pixels: Buffer
  try {
    pixels = inflateSync(Buffer.concat(idat), { maxOutputLength: limit })
  } catch {
    return false
  }
  return interlace ? pixels.length > 0 : pixels.length === expected
}
