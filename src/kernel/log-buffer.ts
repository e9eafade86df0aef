// The buffer of request lines (log.ts): appending is the only work on the request's path; lines go out together,
// one write at a time; past `capacity` a line is dropped and counted, never waited for.
export interface LineBuffer {
  /** Adds a line; false (and counted in `dropped`) when it does not fit. */
  append(text: string): boolean
  /** The text not yet handed to a write, taken out of the buffer (to write it now); '' when none. */
  take(): string
  /** Lines dropped because the buffer was full. */
  readonly dropped: number
  /** Characters waiting. */
  readonly pending: number
  /** A write is under way. */
  readonly writing: boolean
  /** Resolves when nothing is waiting and no write is under way. */
  idle(): Promise<void>
}

/** Characters that make a write at once (at the next turn of the event loop) rather than after WAIT_MS. */
export const WRITE_AT = 64 * 1024
/** The longest a line waits for its write when few come. */
export const WAIT_MS = 100

export function createLineBuffer(opts: {
  /** Characters held at most (the lines waiting, beside the one write under way). */
  capacity: number
  /** Writes the text; `done` once it is written (or failed: it is gone either way). */
  write: (text: string, done: () => void) => void
}): LineBuffer {
  const { capacity, write } = opts
  let waiting = ''
  let dropped = 0
  let writing = false
  let timer: ReturnType<typeof setTimeout> | null = null
  let soon = false
  const idlers: (() => void)[] = []

  const settle = () => {
    if (waiting || writing || timer || soon) return
    for (const resolve of idlers.splice(0)) resolve()
  }
  const take = () => {
    if (timer) clearTimeout(timer)
    timer = null
    const text = waiting
    waiting = ''
    return text
  }
  const writeOut = () => {
    soon = false
    if (writing) return
    const text = take()
    if (!text) return settle()
    writing = true
    write(text, () => {
      writing = false
      if (waiting) schedule()
      settle()
    })
  }
  function schedule() {
    if (writing || soon) return
    if (waiting.length >= WRITE_AT) {
      if (timer) clearTimeout(timer)
      timer = null
      soon = true
      setImmediate(writeOut)
    } else if (!timer) {
      timer = setTimeout(writeOut, WAIT_MS)
      // A pending write must not keep a process (or the test runner) alive; close() drains first.
      timer.unref?.()
    }
  }

  return {
    append(text: string): boolean {
      if (waiting.length + text.length > capacity) {
        dropped++
        return false
      }
      waiting += text
      schedule()
      return true
    },
    take,
    get dropped() {
      return dropped
    },
    get pending() {
      return waiting.length
    },
    get writing() {
      return writing
    },
    idle() {
      return new Promise<void>((resolve) => {
        idlers.push(resolve)
        if (!writing && waiting) writeOut()
        else settle()
      })
    },
  }
}
