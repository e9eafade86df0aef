// The SQLite schema's migrations, in order (version N is entry N-1); the runner is index.ts.
import type { Migration } from './migration'
import { migrationsFrom1 } from './migrations-1'
import { migrationsFrom10 } from './migrations-10'

export type { Migration }

export const migrations: Migration[] = [...migrationsFrom1, ...migrationsFrom10]
