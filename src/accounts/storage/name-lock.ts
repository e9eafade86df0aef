// PostgreSQL: the lock that holds an account name (in any case) until the commit; single sign-on takes it too.
import type { TransactionSQL } from 'bun'
import { nameFolds } from './contract'

/** The advisory lock class of account names: "name" in ASCII (migration 23's trigger takes it too). */
export const ACCOUNT_NAME_LOCK_CLASS = 0x6e616d65

/** In `tx`: holds the name (in any case) until the commit, and answers whether an account has it already. */
export async function lockAccountName(tx: TransactionSQL, name: string): Promise<boolean> {
  await tx`SELECT pg_advisory_xact_lock(${ACCOUNT_NAME_LOCK_CLASS}::int, hashtext(lower(${name})))`
  const [taken] = nameFolds(name)
    ? await tx`SELECT 1 FROM accounts WHERE lower(name) = lower(${name}) LIMIT 1`
    : await tx`SELECT 1 FROM accounts WHERE name = ${name}`
  return !!taken
}
