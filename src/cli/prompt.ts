// Asking a person at a terminal for a password: typed without echo (raw mode), asked twice, on stderr so that
// stdout stays what scripts read (account create's key alone on the last line).

/** One line read from the terminal without showing it; Ctrl+C ends the command, Ctrl+D an empty answer. */
export function readHidden(question: string): Promise<string> {
  const stdin = process.stdin
  // Raw (no echo) before the question: what is typed once it shows is never echoed.
  stdin.setRawMode(true)
  process.stderr.write(question)
  return new Promise((done) => {
    let typed = ''
    const finish = (answer: string) => {
      stdin.off('data', onData)
      stdin.setRawMode(false)
      stdin.pause()
      process.stderr.write('\n')
      done(answer)
    }
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return finish(typed)
        if (ch === '\u0003') {
          stdin.setRawMode(false)
          process.stderr.write('\n')
          process.exit(130)
        }
        if (ch === '\u0004') return finish(typed)
        if (ch === '\u007f' || ch === '\b') typed = [...typed].slice(0, -1).join('')
        else if (ch >= ' ') typed += ch
      }
    }
    stdin.resume()
    stdin.on('data', onData)
  })
}

/** The account service's rule, told before anything is made (it checks again). */
const PASSWORD_RULE = (p: string) => (p.length >= 8 && p.length <= 128 ? null : 'It must be 8 to 128 characters.')

/**
 * A new dashboard password for NAME, asked twice (three tries); '' when the person leaves it empty and that is
 * allowed (account create: the account then has none, until `linkbox account password NAME`).
 */
export async function askNewPassword(name: string, emptyAllowed: boolean, read = readHidden): Promise<string> {
  for (let attempt = 1; attempt <= 3; attempt++) {
    const first = await read(
      `Dashboard password for ${name} (8 to 128 characters${emptyAllowed ? '; empty: none for now' : ''}): `,
    )
    if (first === '' && emptyAllowed) return ''
    const problem = PASSWORD_RULE(first)
    if (problem) {
      process.stderr.write(`${problem} Try again.\n`)
      continue
    }
    if ((await read('The same password again: ')) === first) return first
    process.stderr.write('The two differ. Try again.\n')
  }
  throw new PasswordNotSet()
}

export class PasswordNotSet extends Error {
  constructor() {
    super('no password after three tries')
  }
}
