// Standard Webhooks signing (https://www.standardwebhooks.com): what receivers check with the spec's own libraries.
// The id names the event (random, kept on its row: a retry carries it again); the timestamp is each send's.
import { createHmac, randomBytes } from 'node:crypto'

const PREFIX = 'whsec_'

/** A new endpoint secret: 'whsec_' + base64 of 24 random bytes. Shown to its owner once. */
export function newSecret(): string {
  return PREFIX + randomBytes(24).toString('base64')
}

/**
 * The three Standard Webhooks headers for `body` (the exact bytes sent) of the event whose webhook-id is `id`
 * (its row's, one id for every endpoint, attempt and redelivery): `webhook-signature` is
 * `v1,` + base64 HMAC-SHA256, keyed with the secret's bytes, of `<id>.<timestamp>.<body>`; with a `previous`
 * secret (a rotation's overlap) a second one follows, space-separated, so that either secret verifies.
 */
export function signatureHeaders(
  secret: string,
  id: string,
  body: string,
  nowMs: number,
  previous?: string | null,
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  const timestamp = String(Math.floor(nowMs / 1000))
  const sign = (s: string) => {
    const key = Buffer.from(s.startsWith(PREFIX) ? s.slice(PREFIX.length) : s, 'base64')
    return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
  }
  const signature = previous ? `${sign(secret)} ${sign(previous)}` : sign(secret)
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature }
}
