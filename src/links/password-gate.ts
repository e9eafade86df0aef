// Link password checks (argon2id: tens of MiB and ms each) run a bounded number at once behind a bounded queue;
// past that the visitor is told to come back (503 with Retry-After).
import { AppError } from '../kernel/errors'

export type Verifier = (password: string, hash: string) => Promise<boolean>

export const busyRetryAfter = 5

export function createPasswordGate(opts: { concurrency?: number; queue?: number; verify?: Verifier } = {}) {
  const concurrency = opts.concurrency ?? 4
  const maxQueue = opts.queue ?? 64
  const verify: Verifier = opts.verify ?? ((password, hash) => Bun.password.verify(password, hash))
  let running = 0
  const waiting: (() => void)[] = []

  const next = () => {
    running--
    const start = waiting.shift()
    if (start) {
      running++
      start()
    }
  }

  return {
    /** Verifies `password` against `hash` when a slot is free; throws a 503 AppError when the queue is full. */
    async verify(password: string, hash: string): Promise<boolean> {
      if (running >= concurrency) {
        if (waiting.length >= maxQueue)
          throw new AppError(503, 'busy', `Too many password checks at once: try again in ${busyRetryAfter} s.`, {
            'retry-after': String(busyRetryAfter),
          })
        await new Promise<void>((start) => waiting.push(start))
      } else running++
      try {
        return await verify(password, hash)
      } finally {
        next()
      }
    },
    get running() {
      return running
    },
    get waiting() {
      return waiting.length
    },
  }
}
export type PasswordGate = ReturnType<typeof createPasswordGate>

/**
 * Where a browser's form post with a wrong password is sent (303): the form again, by GET, with a flag that
 * makes it say so, so that Back and reload never send the password again. No secret rides in it: the flag,
 * and the visitor's original referrer (the form's `ref`, which would else be lost) when it is short.
 */
export const WRONG_FLAG = 'wrong'
const MAX_REF_IN_URL = 1024
export function wrongPasswordLocation(code: string, ref: string): string {
  const q = new URLSearchParams({ [WRONG_FLAG]: '1' })
  if (ref && ref.length <= MAX_REF_IN_URL) q.set('ref', ref)
  return `/${encodeURIComponent(code)}?${q}`
}

/** The GET after that 303: whether it says "wrong", and the referrer it carried (else the request's). */
export function wrongPasswordShown(url: string, referer: string): { wrong: boolean; ref: string } {
  const at = url.indexOf('?')
  if (at < 0) return { wrong: false, ref: referer }
  const q = new URLSearchParams(url.slice(at + 1))
  if (q.get(WRONG_FLAG) !== '1') return { wrong: false, ref: referer }
  return { wrong: true, ref: (q.get('ref') ?? '').slice(0, MAX_REF_IN_URL) }
}
