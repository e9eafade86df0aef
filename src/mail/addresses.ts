// Mailbox addresses: what the part before "@" may be, the random names drawn for new mailboxes, and an address
// as mailbox.json takes it (a bare name goes on the default domain; only the domains this service receives for).
import { randomBytes } from 'node:crypto'
import { invalidParameter } from '../kernel/errors'

const RANDOM_LOCAL_LENGTH = 10
const LOCAL_PART = /^[a-z0-9._-]{1,64}$/

export function randomLocalPart(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'
  let out = ''
  while (out.length < RANDOM_LOCAL_LENGTH) {
    for (const b of randomBytes(RANDOM_LOCAL_LENGTH * 2)) {
      // 252 = 7 × 36: rejecting the rest keeps every character equally likely.
      if (b < 252 && out.length < RANDOM_LOCAL_LENGTH) out += alphabet[b % 36]
    }
  }
  return out
}

/** normalizeAddress over the domains this service receives mail for (the first is the default). */
export function addressNormalizer(domains: string[]) {
  /** The address a mailbox.json `address` names: empty → null (a random one), a bare name → the default domain. */
  return function normalizeAddress(input: string): string {
    const value = input.trim().toLowerCase()
    const at = value.lastIndexOf('@')
    const local = at < 0 ? value : value.slice(0, at)
    const domain = at < 0 ? domains[0]! : value.slice(at + 1)
    if (!LOCAL_PART.test(local))
      throw invalidParameter('address', 'the part before "@" must be 1 to 64 characters of a-z, 0-9, ".", "_" and "-"')
    if (!domains.includes(domain))
      throw invalidParameter('address', `the domain must be one this service receives mail for: ${domains.join(', ')}`)
    return `${local}@${domain}`
  }
}
