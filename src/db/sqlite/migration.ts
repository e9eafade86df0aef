// A SQLite migration: SQL text run in one transaction; one that rebuilds tables runs with foreign keys off.
// Append only: never edit a migration that has shipped; add a new one (at the end of migrations-10.ts).
export type Migration = string | { sql: string; rebuildsTables: true }
