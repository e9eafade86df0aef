// Signed links: `{base}/<path>/<id>?exp=<unix s>&sig=<HMAC-SHA256 of "<id>.<exp>">`, fetched without the API key;
// the id names what is signed, so a link for one thing never opens another.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'

/** The length of a new secret (random bytes); a shorter one found is refused. */
export const SECRET_BYTES = 32

export type LinkCheck = 'ok' | 'tampered' | 'expired'

export interface LinkSigner {
  /** The query string (`exp=…&sig=…`) that makes `id` fetchable until `expires` (unix ms). */
  sign(id: string, expires: number): { exp: number; sig: string; query: string }
  /** Tampered (the signature does not match, or exp is not a number) comes before expired. */
  check(id: string, exp: string | null, sig: string | null, now: number): LinkCheck
}

/**
 * The secret lives in `<data_dir>/secrets/signing.key` (mode 0600), made on first use: links survive a
 * restart, and a backup of the data directory keeps them valid. Written with 'wx' and fsynced, so two
 * processes starting at once cannot each keep a different secret, and a crash cannot leave half a key.
 */
export function loadSigningSecret(dataDir: string): Buffer {
  const path = join(dataDir, 'secrets', 'signing.key')
  try {
    const secret = readFileSync(path)
    if (secret.length >= SECRET_BYTES) return secret
    throw new Error(
      `${path} is shorter than ${SECRET_BYTES} bytes; remove it to make a new one (signed links then stop working)`,
    )
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  const secret = randomBytes(SECRET_BYTES)
  let fd: number
  try {
    fd = openSync(path, 'wx', 0o600)
  } catch (err) {
    // Another process made it between our read and our create: theirs is the secret.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return readFileSync(path)
    throw err
  }
  try {
    writeSync(fd, secret)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  const dir = openSync(dirname(path), 'r')
  try {
    fsyncSync(dir)
  } finally {
    closeSync(dir)
  }
  return secret
}

/**
 * Where the secret lives, behind one async shape for both engines: the file in data_dir on SQLite (below),
 * the database's secrets table on PostgreSQL (db/postgres/signing.ts), so that every node signs with one key.
 */
export type SigningSecretSource = () => Promise<Buffer>

export const fileSigningSecret =
  (dataDir: string): SigningSecretSource =>
  async () =>
    loadSigningSecret(dataDir)

export function createLinkSigner(secret: Buffer): LinkSigner {
  const mac = (id: string, exp: number) => createHmac('sha256', secret).update(`${id}.${exp}`).digest()
  return {
    sign(id, expires) {
      const exp = Math.ceil(expires / 1000)
      const sig = mac(id, exp).toString('base64url')
      return { exp, sig, query: `exp=${exp}&sig=${sig}` }
    },
    check(id, exp, sig, now) {
      if (exp === null || sig === null || !/^[0-9]{1,12}$/.test(exp) || !/^[A-Za-z0-9_-]{43}$/.test(sig))
        return 'tampered'
      // Compared as the text the signer writes, not as decoded bytes: the last of the 43 characters has two
      // spare bits, and decoding would let three other spellings of a signature pass too.
      const given = Buffer.from(sig)
      const expected = Buffer.from(mac(id, Number(exp)).toString('base64url'))
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'tampered'
      return Number(exp) * 1000 <= now ? 'expired' : 'ok'
    },
  }
}
