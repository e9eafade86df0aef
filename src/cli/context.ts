// What a command opens: the config, then, on first ask, the database and its services or the whole app, both
// through app/ (cli-services.ts, app.ts), each loaded only when asked.
import { loadConfig, type Config } from '../kernel/config'
import { databaseUrl } from '../app/database-url'
import type { Services } from '../app/cli-services'
import type { Invocation } from './args'

export type { Services }

export interface Context extends Invocation {
  config: Config
  /** `[database] url`, or null: the data_dir's SQLite file. */
  databaseUrl: string | null
  /** The database and its services, opened on the first call. */
  open(): Promise<Services>
  /** The whole app (app.ts), as serve builds it. */
  linkbox(): Promise<import('../app/app').Linkbox>
  /** Closes what open() opened (the app is closed by its command). */
  close(): Promise<void>
}

/** The config of the command line (loaded first: a config error comes before any usage error), nothing opened yet. */
export function context(invocation: Invocation): Context {
  const config = loadConfig(invocation.configPath, invocation.overrides)
  const url = databaseUrl(config)
  let opened: Promise<Services> | null = null
  return {
    ...invocation,
    config,
    databaseUrl: url,
    open: () => (opened ??= import('../app/cli-services').then((m) => m.openServices(config))),
    linkbox: async () => (await import('../app/app')).openLinkbox(config),
    async close() {
      // A database that did not open has nothing to close; its error is the command's already.
      const services = await opened?.catch(() => null)
      await services?.close()
    },
  }
}

/** A value given as - on the command line: stdin without its last line ending. */
export async function readStdin(): Promise<string> {
  return (await Bun.stdin.text()).replace(/\r?\n$/, '')
}
