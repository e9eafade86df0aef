// A Bun.SQL result row as the storages read it: column name to value, untyped until a mapper gives each column
// the type of its contract's row. bigint columns come back as text, so they go through Number (all far below 2^53).
export type PgRow = Record<string, unknown>

/** A bigint or integer column as a number. */
export const int = (v: unknown) => Number(v)
/** A nullable bigint or integer column: null (or absent) stays null, anything else becomes a number. */
export const intOrNull = (v: unknown) => (v === null || v === undefined ? null : Number(v))
/** A text column: the driver gives it as a string, passed through as it came. */
export const text = (v: unknown) => v as string
/** A nullable text column: a string or null, passed through as it came. */
export const textOrNull = (v: unknown) => v as string | null
