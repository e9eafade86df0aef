// `linkbox backup FILE`: one archive of the database, the secrets and the mail store (backup.ts); on PostgreSQL
// its database is copied from one snapshot into a SQLite file (backup-postgres.ts).
import { ConfigError } from '../kernel/errors'
import type { Invocation } from './args'
import { context } from './context'

export async function run(invocation: Invocation): Promise<number> {
  const { config, databaseUrl, sub: file, arg } = context(invocation)
  if (!file || arg) throw new ConfigError('usage: linkbox backup FILE')
  if (databaseUrl) {
    const { writePostgresBackup } = await import('../app/backup-postgres')
    const manifest = await writePostgresBackup(config, file)
    console.log(
      `backup written to ${file}: linkbox.db (schema ${manifest.schema}, copied from PostgreSQL) and ${manifest.files.length - 1} files`,
    )
    return 0
  }
  const { writeBackup } = await import('../app/backup')
  const manifest = writeBackup(config, file)
  console.log(
    `backup written to ${file}: linkbox.db (schema ${manifest.schema}) and ${manifest.files.length - 1} files`,
  )
  return 0
}
