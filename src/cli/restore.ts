// `linkbox restore FILE [--force]`: a backup into data_dir (backup.ts), or into the empty PostgreSQL database of
// database.url (backup-postgres.ts), with the service stopped.
import { ConfigError } from '../kernel/errors'
import type { Invocation } from './args'
import { context } from './context'

export async function run(invocation: Invocation): Promise<number> {
  const { config, databaseUrl, sub: file, arg, values } = context(invocation)
  if (!file || arg) throw new ConfigError('usage: linkbox restore FILE [--force]')
  if (databaseUrl) {
    if (values.force)
      throw new ConfigError(
        '--force moves a data_dir aside; restore into PostgreSQL (database.url) needs an empty database instead',
      )
    const [{ restoreToPostgres }, { redactDatabaseUrl }] = await Promise.all([
      import('../app/backup-postgres'),
      import('../kernel/config-database'),
    ])
    const manifest = await restoreToPostgres(config, file, (line) => console.log(line))
    console.log(
      `restored ${file} (made by linkbox ${manifest.version} on ${manifest.created}, schema ${manifest.schema}) into ${redactDatabaseUrl(databaseUrl)}`,
    )
    return 0
  }
  const { restoreBackup } = await import('../app/backup')
  const manifest = await restoreBackup(config, file, { force: !!values.force })
  console.log(
    `restored ${file} (made by linkbox ${manifest.version} on ${manifest.created}, schema ${manifest.schema}) into ${config.data_dir}`,
  )
  return 0
}
