// Statements prepared at their first use instead of when their store is made: a start runs few of them, and
// preparing them all cost milliseconds of serve's start.
import type { SQLQueryBindings, Statement } from 'bun:sqlite'
import type { Db } from '.'

class LazyStatement {
  private made: Statement | null = null
  constructor(private readonly make: () => Statement) {}
  get(...params: unknown[]) {
    return (this.made ??= this.make()).get(...(params as []))
  }
  all(...params: unknown[]) {
    return (this.made ??= this.make()).all(...(params as []))
  }
  run(...params: unknown[]) {
    return (this.made ??= this.make()).run(...(params as []))
  }
  values(...params: unknown[]) {
    return (this.made ??= this.make()).values(...(params as []))
  }
}

/** What a lazy statement offers: the four calls the stores make (anything else is a type error, not a crash). */
export type LazyQuery<R, P extends SQLQueryBindings[]> = Pick<Statement<R, P>, 'get' | 'all' | 'run' | 'values'>
type Bindings<P> = P extends SQLQueryBindings[] ? P : [P]

/** The connection's query and prepare, whose statements are made at their first use. */
export function lazyStatements(db: Db) {
  return {
    query: <R, P extends SQLQueryBindings | SQLQueryBindings[]>(sql: string): LazyQuery<R, Bindings<P>> =>
      new LazyStatement(() => db.query(sql)) as unknown as LazyQuery<R, Bindings<P>>,
    prepare: <R, P extends SQLQueryBindings | SQLQueryBindings[]>(sql: string): LazyQuery<R, Bindings<P>> =>
      new LazyStatement(() => db.prepare(sql)) as unknown as LazyQuery<R, Bindings<P>>,
  }
}
