// Bytes for tests that must arrive unchanged: every byte value, and a long run from a seeded generator.

/** Every byte value, in order: an attachment that a text-minded step anywhere would damage. */
export const EVERY_BYTE = Uint8Array.from({ length: 256 }, (_, i) => i)

/** `length` bytes from a xorshift generator seeded with `seed`: the same every run, no two chunks alike. */
export function seededBytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length)
  let x = seed
  for (let i = 0; i < out.length; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    out[i] = x & 255
  }
  return out
}
