// The quick start (issue 38, item 11), as a person runs it: `linkbox serve --port N --data DIR` with no config
// file, the short links' address following the port (and --host); `linkbox account create NAME` at a terminal
// (a pseudo-terminal made by util-linux's `script`) asking for the dashboard password twice without echoing
// it, and elsewhere saying how to set one later; the options' errors in plain words.
import { Database } from 'bun:sqlite'
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { removeDir, runCli, SOURCE_COMMAND, tempDir } from '../support/server'

const dirs: string[] = []
const procs: ReturnType<typeof Bun.spawn>[] = []
afterAll(() => {
  for (const p of procs) p.kill('SIGKILL')
  for (const d of dirs) removeDir(d)
})
const newDir = () => {
  const d = tempDir('linkbox-quick-')
  dirs.push(d)
  return d
}
/** The environment without LINKBOX_CONFIG: no config file anywhere. */
function env(): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'LINKBOX_CONFIG') out[k] = v
  return out
}

/** A port nobody listens on now: bound on port 0, then let go. */
function freePort(): number {
  const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
  const port = probe.port!
  probe.stop(true)
  return port
}

/** Reads a stream into `into.text` until `pattern` shows after `from` (or the time runs out). */
async function waitFor(stream: ReadableStream<Uint8Array>, into: { text: string }, pattern: RegExp | string, from = 0) {
  const reader = stream.getReader()
  const decoder = new TextDecoder()
  const deadline = Date.now() + 20_000
  const seen = () => (typeof pattern === 'string' ? into.text.includes(pattern, from) : pattern.test(into.text))
  try {
    while (!seen()) {
      if (Date.now() > deadline) throw new Error(`waited for ${pattern}; got: ${into.text}`)
      const { value, done } = await reader.read()
      if (done) throw new Error(`ended before ${pattern}: ${into.text}`)
      into.text += decoder.decode(value)
    }
  } finally {
    reader.releaseLock()
  }
}

/** `linkbox serve ARGS` in a fresh directory with no config; resolves once it listens. */
async function serve(args: string[]) {
  const cwd = newDir()
  const proc = Bun.spawn([...SOURCE_COMMAND, 'serve', ...args], { cwd, env: env(), stdout: 'pipe', stderr: 'pipe' })
  procs.push(proc)
  const out = { text: '' }
  await waitFor(proc.stdout, out, /listening on http:\/\/\S+:\d+/)
  return { cwd, proc, out }
}

async function makeLink(port: number) {
  const res = await fetch(`http://127.0.0.1:${port}/api/getLink.json`, {
    method: 'POST',
    body: new URLSearchParams({ url: 'https://example.com/quick/start' }),
  })
  expect(res.status).toBe(200)
  return ((await res.json()) as { return: { hex: string; url: string; qr: string } }).return
}

describe('serve without a config file', () => {
  test('--port N --data DIR: listens on N, keeps its data in DIR, and its links carry N', async () => {
    const port = freePort()
    const { cwd, proc, out } = await serve(['--port', String(port), '--smtp-port', '0', '--data', 'here'])
    try {
      expect(out.text).toContain(`:${port} (base_url http://localhost:${port}, data ${join(cwd, 'here')})`)
      const link = await makeLink(port)
      expect(link.url).toBe(`http://localhost:${port}/${link.hex}`)
      expect(link.qr).toBe(`http://localhost:${port}/qr/${link.hex}.png`)
      const visit = await fetch(`http://127.0.0.1:${port}/${link.hex}`, { redirect: 'manual' })
      expect(visit.status).toBe(302)
      expect(visit.headers.get('location')).toBe('https://example.com/quick/start')
      expect(existsSync(join(cwd, 'here', 'linkbox.db'))).toBe(true)
      expect(existsSync(join(cwd, 'data'))).toBe(false)
    } finally {
      proc.kill('SIGTERM')
      expect(await proc.exited).toBe(0)
    }
  }, 60_000)

  test('--host ADDR: the links carry that address and the port', async () => {
    const port = freePort()
    const { proc } = await serve(['--host', '127.0.0.1', '-p', String(port), '--smtp-port', '0', '--data', 'd'])
    try {
      const link = await makeLink(port)
      expect(link.url).toBe(`http://127.0.0.1:${port}/${link.hex}`)
    } finally {
      proc.kill('SIGTERM')
      await proc.exited
    }
  }, 60_000)

  test('the options in plain words: a bad port, --port for a command that does not listen', async () => {
    const bad = await runCli(['serve', '--port', '70000'], { cwd: newDir(), env: env() })
    expect(bad.code).not.toBe(0)
    expect(bad.stderr).toContain('--port needs a port number from 0 to 65535')
    const misplaced = await runCli(['account', 'list', '--port', '9000'], { cwd: newDir(), env: env() })
    expect(misplaced.code).not.toBe(0)
    expect(misplaced.stderr).toContain('--port is for serve and doctor')
  })
})

/** The account's password hash in the SQLite file of DIR (null: none). */
function hashOf(dataDir: string, name: string): string | null {
  const db = new Database(join(dataDir, 'linkbox.db'), { readonly: true })
  try {
    return (db.query('SELECT password_hash FROM accounts WHERE name = ?').get(name) as { password_hash: string | null })
      .password_hash
  } finally {
    db.close()
  }
}

describe('account create', () => {
  const script = Bun.which('script')

  /** `linkbox ARGS` on a pseudo-terminal (script runs it there: its stdin is a terminal, as when a person types). */
  function atTerminal(cwd: string, args: string[]) {
    if (!script) throw new Error("this test needs util-linux's script (apt-get install util-linux)")
    const command = [...SOURCE_COMMAND, ...args, '--data', 'd'].map((w) => `'${w}'`).join(' ')
    const proc = Bun.spawn([script, '-qec', command, '/dev/null'], { cwd, env: env(), stdin: 'pipe', stdout: 'pipe' })
    procs.push(proc)
    const out = { text: '' }
    let answered = 0 // where the last prompt answered ends: the next one is looked for after it
    const type = async (prompt: string, text: string) => {
      await waitFor(proc.stdout, out, prompt, answered)
      answered = out.text.indexOf(prompt, answered) + prompt.length
      proc.stdin.write(`${text}\r`)
      await proc.stdin.flush()
    }
    /** The rest of the output, to the end; the exit code. */
    const rest = async () => {
      const reader = proc.stdout.getReader()
      const decoder = new TextDecoder()
      for (let r = await reader.read(); !r.done; r = await reader.read()) out.text += decoder.decode(r.value)
      return proc.exited
    }
    return { out, type, rest }
  }

  test('at a terminal: the password is asked twice, never echoed, and set; a mismatch is asked again', async () => {
    const cwd = newDir()
    const t = atTerminal(cwd, ['account', 'create', 'carol'])
    await t.type('Dashboard password for carol', 'first-try-1')
    await t.type('The same password again', 'not-the-same')
    await t.type('Dashboard password for carol', 'hunter2-long')
    await t.type('The same password again', 'hunter2-long')
    expect(await t.rest()).toBe(0)
    expect(t.out.text).toContain('The two differ. Try again.')
    expect(t.out.text).toContain('account carol created; its API key (shown once):')
    expect(t.out.text).toMatch(/lbk_\S+/)
    // Nothing typed was shown.
    for (const typed of ['first-try-1', 'not-the-same', 'hunter2-long']) expect(t.out.text).not.toContain(typed)
    const hash = hashOf(join(cwd, 'd'), 'carol')
    expect(hash).not.toBeNull()
    expect(await Bun.password.verify('hunter2-long', hash!)).toBe(true)

    // The same name again: refused at once, before any question.
    const again = atTerminal(cwd, ['account', 'create', 'carol'])
    expect(await again.rest()).not.toBe(0)
    expect(again.out.text).toContain('The account "carol" exists already.')
    expect(again.out.text).not.toContain('Dashboard password')

    // account password at a terminal asks too (no empty answer there), and the new one holds.
    const change = atTerminal(cwd, ['account', 'password', 'carol'])
    await change.type('Dashboard password for carol (8 to 128 characters)', 'brand-new-one')
    await change.type('The same password again', 'brand-new-one')
    expect(await change.rest()).toBe(0)
    expect(change.out.text).toContain('account carol has a new dashboard password')
    expect(await Bun.password.verify('brand-new-one', hashOf(join(cwd, 'd'), 'carol')!)).toBe(true)
  }, 60_000)

  test('not at a terminal: no question; it says how to set a password later, and the key stays last', async () => {
    const cwd = newDir()
    const r = await runCli(['account', 'create', 'dave', '--data', 'd'], { cwd, env: env(), stdin: '' })
    expect(r.code).toBe(0)
    expect(r.stderr).toContain('account dave has no dashboard password yet.')
    expect(r.stderr).toContain('linkbox account password dave')
    expect(r.stdout).not.toContain('Dashboard password for')
    expect(r.stdout.trimEnd().split('\n').at(-1)).toMatch(/^lbk_\S+$/)
    expect(hashOf(join(cwd, 'd'), 'dave')).toBeNull()
    // The command it names works, and sets the password.
    const set = await runCli(['account', 'password', 'dave', '--password', '-', '--data', 'd'], {
      cwd,
      env: env(),
      stdin: 'correct-horse\n',
    })
    expect(set.code).toBe(0)
    expect(await Bun.password.verify('correct-horse', hashOf(join(cwd, 'd'), 'dave')!)).toBe(true)
  }, 60_000)
})
