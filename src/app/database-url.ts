import type { Config } from '../kernel/config'

/** `[database] url`, or null for the data_dir's SQLite file: the one read of it outside app.ts's own start. */
export function databaseUrl(config: Config): string | null {
  return config.database.url || null
}
