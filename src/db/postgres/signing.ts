// The signing secret in PostgreSQL mode, in the `secrets` table so that a link signed by one node opens on all:
// made once by whichever node asks first (INSERT … ON CONFLICT DO NOTHING), then read by every node.
import type { SQL } from 'bun'
import { randomBytes } from 'node:crypto'
import { SECRET_BYTES, type SigningSecretSource } from '../../kernel/signing'

/** The row of the signing secret in secrets (also what `migrate --to` writes data_dir/secrets/signing.key into). */
export const SIGNING_SECRET_NAME = 'signing'

export function postgresSigningSecret(sql: SQL): SigningSecretSource {
  const read = async (): Promise<Buffer | null> => {
    const [row] = await sql`SELECT value FROM secrets WHERE name = ${SIGNING_SECRET_NAME}`
    return row ? Buffer.from(row.value as Uint8Array) : null
  }
  return async () => {
    // Read first: after the first start this is all a node does (no write, no lock).
    let secret = await read()
    if (!secret) {
      await sql`INSERT INTO secrets (name, value, created) VALUES (${SIGNING_SECRET_NAME}, ${randomBytes(SECRET_BYTES)}, ${Date.now()}) ON CONFLICT (name) DO NOTHING`
      secret = await read()
    }
    if (!secret) throw new Error('the signing secret could not be stored in the database')
    if (secret.length < SECRET_BYTES)
      throw new Error(
        `the signing secret in the database is shorter than ${SECRET_BYTES} bytes; delete its row in secrets to make a new one (signed links then stop working)`,
      )
    return secret
  }
}
