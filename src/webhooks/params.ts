// The parameters of a webhook endpoint as the API, the dashboard and the CLI send them: its URL (checked
// against private networks, as every delivery is), its event types and whether it is enabled.
import type { Config } from '../kernel/config'
import { AppError, invalidParameter, missingParameter } from '../kernel/errors'
import { privateAddress } from '../kernel/net/private-address'
import { checkUrl, GuardError } from '../kernel/net/guard'
import { DEFAULT_EVENTS, EVENT_TYPES, type SubscribableType } from '../kernel/outbox'

export const MAX_URL_LENGTH = 2048

export const present = (v: unknown) => v !== undefined && v !== null && v !== ''

/** The `enabled` parameter: true or 1, false or 0 (a form's text or a JSON body's boolean). */
export function parseEnabled(input: unknown): boolean {
  if (input === true || input === 'true' || input === '1' || input === 1) return true
  if (input === false || input === 'false' || input === '0' || input === 0) return false
  throw invalidParameter('enabled', 'true or 1 (send events to it), false or 0 (send none)')
}

/** The comma-separated `events` parameter: known types, each once, in the order given. */
export function parseEvents(input: unknown): SubscribableType[] {
  if (!present(input)) return [...DEFAULT_EVENTS]
  if (typeof input !== 'string') throw invalidParameter('events', `a comma-separated list of ${EVENT_TYPES.join(', ')}`)
  const out: SubscribableType[] = []
  for (const raw of input.split(',')) {
    const t = raw.trim()
    if (!t) continue
    if (!(EVENT_TYPES as readonly string[]).includes(t))
      throw new AppError(
        400,
        'invalid_parameter',
        `The parameter "events" names an unknown event type "${t.slice(0, 40)}": the types are ${EVENT_TYPES.join(', ')}.`,
      )
    if (!out.includes(t as SubscribableType)) out.push(t as SubscribableType)
  }
  if (out.length === 0) throw invalidParameter('events', `at least one of ${EVENT_TYPES.join(', ')}`)
  return out
}

/** checkTarget with the service's config (media.allow_private_networks) and, in tests, its name resolution. */
export function createTargetCheck({
  config,
  resolve,
  isAllowed,
}: {
  config: Config
  resolve?: (host: string) => Promise<string[]>
  isAllowed?: (address: string) => boolean
}) {
  /** http(s), at most 2048 characters, no credentials, and (unless media.allow_private_networks) not private. */
  return async function checkTarget(input: unknown): Promise<string> {
    if (!present(input)) throw missingParameter('url')
    const bad = () =>
      new AppError(400, 'invalid_url', 'The parameter "url" must be an absolute URL with the scheme http or https.')
    if (typeof input !== 'string' || input.length > MAX_URL_LENGTH)
      throw new AppError(
        400,
        'invalid_url',
        `The parameter "url" must be an http or https URL of at most ${MAX_URL_LENGTH} characters.`,
      )
    let url: URL
    try {
      url = new URL(input)
    } catch {
      throw bad()
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad()
    // The guard would drop them silently on every delivery; say so now instead.
    if (url.username || url.password)
      throw new AppError(400, 'invalid_url', 'The parameter "url" must not contain a user name or password.')
    url.hash = ''
    try {
      await checkUrl(url, { allowPrivate: config.media.allow_private_networks, resolve, isAllowed, timeoutMs: 5_000 })
    } catch (err) {
      if (!(err instanceof GuardError)) throw err
      if (err.reason === 'private') throw privateAddress()
      // A name that does not resolve now may later (and the deliverer checks every send again): accepted;
      // its deliveries fail and are retried, in the log for the owner to see.
    }
    return url.href
  }
}
