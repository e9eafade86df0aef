// `linkbox migrate --to URL`: the data_dir's SQLite database, mail and signing secret into PostgreSQL
// (app/copy-postgres.ts). It reads the SQLite file whatever database.url says: it is how data gets there.
import { ConfigError } from '../kernel/errors'
import type { Invocation } from './args'
import { context, readStdin } from './context'

export async function run(invocation: Invocation): Promise<number> {
  const cx = context(invocation)
  if (cx.sub !== undefined) throw new ConfigError('usage: linkbox migrate --to URL')
  const to = cx.values.to
  const url = to === '-' ? (await readStdin()).trim() : (to ?? cx.databaseUrl ?? '')
  if (!url) throw new ConfigError('usage: linkbox migrate --to URL (or set [database] url in the config)')
  const [{ databaseUrlProblem }, { copyToPostgres }] = await Promise.all([
    import('../kernel/config-database'),
    import('../app/copy-postgres'),
  ])
  const problem = databaseUrlProblem(url)
  if (problem) throw new ConfigError(`--to ${problem} (the value is not shown: it may hold a password)`)
  await copyToPostgres(cx.config, url, (line) => console.log(line))
  return 0
}
