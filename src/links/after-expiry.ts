// A destination after expiry (SPEC §2a expired_url): where an expired link, or one whose visits are used up,
// sends people instead of its 410 page. It obeys the url rules of a destination.
import { AppError } from '../kernel/errors'
import type { LinkRow } from './storage/contract'
import { type UrlRules, validateUrl } from './validate'

/**
 * expired_url as sent, validated like `url` (own origin, blocklists, the abuse check naming "expired_url"); ''
 * is none (on update: removes it).
 */
export function validateExpiredUrl(
  value: unknown,
  rules: UrlRules,
  checkDestination?: (url: string) => void,
): string | null {
  if (value === '') return null
  const url = validateUrl(value, rules, 'expired_url')
  try {
    checkDestination?.(url)
  } catch (err) {
    // The abuse check names "url"; here it is expired_url.
    if (err instanceof AppError)
      throw new AppError(err.status, err.code, err.message.replace('"url"', '"expired_url"'), err.headers)
    throw err
  }
  return url
}

/** The redirect to a link's expired_url (null without one): the configured status, never cached. */
export function afterExpiry(row: LinkRow, status: number): Response | null {
  if (row.expired_url === null) return null
  return new Response(null, { status, headers: { location: row.expired_url, 'cache-control': 'private, no-cache' } })
}
