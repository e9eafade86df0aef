// The yt-dlp the media service runs: which one is chosen (media.ytdlp_path, an update, the bundled one, PATH),
// and `linkbox ytdlp update` against a local fixture release served on 127.0.0.1: a good build is installed and
// used by a running Ytdlp without a new one being made (no restart); a bad checksum, a file that does not run
// and an endless download are refused, and the old one is kept. The fixtures are real zipapps run by python3.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import {
  BUNDLED_NAME,
  UPDATED_NAME,
  YtdlpUpdateError,
  bundledInstalled,
  compareVersions,
  createYtdlp,
  installBundled,
  updateYtdlp,
} from '../../src/media/ytdlp'
import { removeDir, runCli, tempDir, writeConfig } from '../support/server'

const root = tempDir('linkbox-ytdlp-')
afterAll(() => removeDir(root))

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')

/** A zipapp built with `python3 -m zipapp`, as yt-dlp's own release is: prints `version` for --version, exits `code`. */
function zipapp(name: string, version: string, code = 0): Uint8Array<ArrayBuffer> {
  const src = join(root, 'src', name)
  mkdirSync(src, { recursive: true })
  writeFileSync(
    join(src, '__main__.py'),
    `import sys\nif '--version' in sys.argv:\n    print(${JSON.stringify(version)})\n    sys.exit(${code})\nsys.exit(3)\n`,
  )
  const out = join(root, 'src', `${name}.pyz`)
  const r = Bun.spawnSync(['python3', '-m', 'zipapp', src, '-o', out, '-p', '/usr/bin/env python3', '-c'], {
    stderr: 'pipe',
  })
  if (r.exitCode !== 0) throw new Error(`zipapp failed: ${r.stderr}`)
  return new Uint8Array(readFileSync(out))
}

/** An executable shell script that answers --version (an "ELF or other executable": run directly). */
function script(dir: string, name: string, version: string): string {
  mkdirSync(dir, { recursive: true })
  const path = join(dir, name)
  writeFileSync(path, `#!/bin/sh\necho ${version}\n`)
  chmodSync(path, 0o755)
  return path
}

const sums = (entries: Record<string, Uint8Array | string>) =>
  Object.entries(entries)
    .map(([name, v]) => `${typeof v === 'string' ? v : sha256(v)}  ${name}\n`)
    .join('')

const good = zipapp('good', '2099.01.01')
const newer = zipapp('newer', '2099.02.02')
const older = zipapp('older', '2040.01.01')
/** Debian 12's own yt-dlp: a page can tell it to skip the guard proxy (CVE-2023-46121). */
const unsafe = zipapp('unsafe', '2023.03.04')
const exits1 = zipapp('exits1', '2099.03.03', 1)
const garbage = crypto.getRandomValues(new Uint8Array(50_000))

// The release folders: path → body. `endless` is a download that never ends (the size bound must stop it).
const release: Record<string, Uint8Array<ArrayBuffer> | string> = {
  '/good/yt-dlp': good,
  '/good/SHA2-256SUMS': sums({ 'yt-dlp.exe': 'ab'.repeat(32), 'yt-dlp': good }),
  '/newer/yt-dlp': newer,
  '/newer/SHA2-256SUMS': sums({ 'yt-dlp': newer }),
  '/older/yt-dlp': older,
  '/older/SHA2-256SUMS': sums({ 'yt-dlp': older }),
  '/unsafe/yt-dlp': unsafe,
  '/unsafe/SHA2-256SUMS': sums({ 'yt-dlp': unsafe }),
  '/badsum/yt-dlp': newer,
  '/badsum/SHA2-256SUMS': sums({ 'yt-dlp': good }), // the sum of another file
  '/garbage/yt-dlp': garbage,
  '/garbage/SHA2-256SUMS': sums({ 'yt-dlp': garbage }),
  '/exits1/yt-dlp': exits1,
  '/exits1/SHA2-256SUMS': sums({ 'yt-dlp': exits1 }),
  '/named/yt-dlp_linux': newer,
  '/named/SHA2-256SUMS': sums({ 'yt-dlp': good, yt_dlp_linux: older, 'yt-dlp_linux': newer }),
  '/nosums/yt-dlp': good,
  '/endless/SHA2-256SUMS': sums({ 'yt-dlp': good }),
}
let server: ReturnType<typeof Bun.serve>
let base: string
beforeAll(() => {
  server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname
      if (path === '/endless/yt-dlp') {
        const chunk = new Uint8Array(1024 * 1024)
        return new Response(new ReadableStream({ pull: (c) => c.enqueue(chunk) }))
      }
      const body = release[path]
      return body === undefined ? new Response('not found', { status: 404 }) : new Response(body)
    },
  })
  base = `http://127.0.0.1:${server.port}`
})
afterAll(() => server.stop(true))

/** A PATH with python3 on it and no yt-dlp (the machine's PATH has Debian's). */
function pythonOnly(): string {
  const dir = join(root, 'python-only')
  if (!existsSync(dir)) {
    mkdirSync(dir)
    const real = Bun.spawnSync(['python3', '-c', 'import sys; print(sys.executable)']).stdout.toString().trim()
    symlinkSync(real, join(dir, 'python3'))
  }
  return dir
}

let n = 0
const dataDir = () => join(root, `data-${++n}`)
const updatedFile = (dir: string) => join(dir, 'bin', UPDATED_NAME)

/** Expects updateYtdlp to refuse with `reason`; returns the message. */
async function refused(dir: string, from: string, reason: YtdlpUpdateError['reason']): Promise<string> {
  const err = await updateYtdlp({ dataDir: dir, from }).then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(YtdlpUpdateError)
  expect((err as YtdlpUpdateError).reason).toBe(reason)
  return (err as Error).message
}

test('versions compare as dates, not as text', () => {
  expect(compareVersions('2023.10.07', '2023.9.30')).toBeGreaterThan(0)
  expect(compareVersions('2023.03.04.1', '2023.03.04')).toBeGreaterThan(0)
  expect(compareVersions('2023.03.04', '2023.03.04')).toBe(0)
  expect(compareVersions('2022.12.31', '2023.01.01')).toBeLessThan(0)
})

describe('updating from a fixture release', () => {
  test('a good build is installed and used at once by a running Ytdlp (no restart)', async () => {
    const dir = dataDir()
    // Nothing in data_dir and nothing on PATH: no yt-dlp at all yet.
    const ytdlp = createYtdlp({ ytdlpPath: '', dataDir: dir, env: { PATH: pythonOnly() } })
    expect(await ytdlp.current()).toBeNull()

    const lines: string[] = []
    const got = await updateYtdlp({ dataDir: dir, from: `${base}/good/`, log: (l) => lines.push(l) })
    expect(got).toEqual({ version: '2099.01.01', path: updatedFile(dir) })
    expect(lines.join('\n')).toContain(`${base}/good/yt-dlp`)
    expect(sha256(readFileSync(got.path))).toBe(sha256(good))
    expect(statSync(got.path).mode & 0o777).toBe(0o755)

    const now = await ytdlp.current()
    expect(now).toMatchObject({ source: 'updated', path: updatedFile(dir), version: '2099.01.01' })
    // A zipapp runs as python3 <file>, and that command really answers.
    expect(now!.argv).toHaveLength(2)
    expect(now!.argv[0]).toMatch(/python3$/)
    expect(now!.argv[1]).toBe(updatedFile(dir))
    const ran = Bun.spawnSync([...now!.argv, '--version'])
    expect(ran.stdout.toString().trim()).toBe('2099.01.01')

    // A second update replaces it; the same Ytdlp sees it by stat.
    await updateYtdlp({ dataDir: dir, from: `${base}/newer/` })
    expect(await ytdlp.current()).toMatchObject({ source: 'updated', version: '2099.02.02' })
    // No temporary file is left behind.
    expect(readdirSync(join(dir, 'bin')).sort()).toEqual([UPDATED_NAME, `${UPDATED_NAME}.json`])
  })

  describe('refusals keep the old one', () => {
    const dir = dataDir()
    let before: string
    beforeAll(async () => {
      await updateYtdlp({ dataDir: dir, from: `${base}/good/` })
      before = sha256(readFileSync(updatedFile(dir)))
    })
    const unchanged = async () => {
      expect(sha256(readFileSync(updatedFile(dir)))).toBe(before)
      expect(await createYtdlp({ ytdlpPath: '', dataDir: dir }).current()).toMatchObject({
        source: 'updated',
        version: '2099.01.01',
      })
      expect(readdirSync(join(dir, 'bin')).sort()).toEqual([UPDATED_NAME, `${UPDATED_NAME}.json`])
    }

    test('a checksum that does not match', async () => {
      expect(await refused(dir, `${base}/badsum/`, 'checksum')).toContain('checksum mismatch')
      await unchanged()
    })
    test('a release whose SHA2-256SUMS is missing', async () => {
      expect(await refused(dir, `${base}/nosums/`, 'download')).toContain('SHA2-256SUMS failed: HTTP 404')
      await unchanged()
    })
    test('garbage bytes (not a program)', async () => {
      expect(await refused(dir, `${base}/garbage/`, 'does-not-run')).toContain('does not run')
      await unchanged()
    })
    test('a zipapp whose --version exits 1', async () => {
      expect(await refused(dir, `${base}/exits1/`, 'does-not-run')).toContain('`--version` exited with 1')
      await unchanged()
    })
    test('a download that never ends stops at the size bound', async () => {
      expect(await refused(dir, `${base}/endless/`, 'download')).toContain('more than the limit of 67108864 bytes')
      await unchanged()
    })
    test('a release older than 2024.07.01, whatever its checksum says', async () => {
      const why = await refused(dir, `${base}/unsafe/`, 'too-old')
      expect(why).toContain('version 2023.03.04 is older than 2024.07.01')
      expect(why).toContain('CVE-2023-46121')
      await unchanged()
    })
    test('a folder that does not exist', async () => {
      expect(await refused(dir, `${base}/nothing/`, 'download')).toContain('HTTP 404')
      await unchanged()
    })
    test('a scheme other than http(s)', async () => {
      expect(await refused(dir, 'ftp://127.0.0.1/yt-dlp', 'source')).toContain('only http and https')
      await unchanged()
    })
  })

  test('a URL naming a file takes that file and its own line in the sums beside it', async () => {
    const dir = dataDir()
    expect(await updateYtdlp({ dataDir: dir, from: `${base}/named/yt-dlp_linux` })).toMatchObject({
      version: '2099.02.02',
    })
  })

  test('a local FILE: checked against a SHA2-256SUMS beside it, or taken as it is when there is none', async () => {
    const folder = join(root, 'local-release')
    mkdirSync(folder)
    writeFileSync(join(folder, 'yt-dlp'), good)
    const dir = dataDir()
    expect(await updateYtdlp({ dataDir: dir, from: join(folder, 'yt-dlp') })).toMatchObject({ version: '2099.01.01' })
    writeFileSync(join(folder, 'SHA2-256SUMS'), sums({ 'yt-dlp': newer }))
    expect(await refused(dir, join(folder, 'yt-dlp'), 'checksum')).toContain('checksum mismatch')
    writeFileSync(join(folder, 'SHA2-256SUMS'), sums({ 'yt-dlp': good }))
    expect(await updateYtdlp({ dataDir: dir, from: join(folder, 'yt-dlp') })).toMatchObject({ version: '2099.01.01' })
    expect(await refused(dir, join(folder, 'missing'), 'source')).toContain('does not exist')
  })
})

describe('which one runs', () => {
  test('media.ytdlp_path wins over everything, even an update', async () => {
    const dir = dataDir()
    await updateYtdlp({ dataDir: dir, from: `${base}/good/` })
    const mine = script(join(root, 'mine'), 'my-yt-dlp', '2001.01.01')
    const choice = await createYtdlp({ ytdlpPath: mine, dataDir: dir }).current()
    expect(choice).toEqual({ argv: [mine], path: mine, source: 'config', version: '2001.01.01' })
    // A configured path that does not exist is still the choice (the admin sees why it fails), not silently another.
    expect(await createYtdlp({ ytdlpPath: '/nonexistent/yt-dlp', dataDir: dir }).current()).toMatchObject({
      source: 'config',
      path: '/nonexistent/yt-dlp',
      version: null,
    })
  })

  test('the bundled one is used; an update older than it is not, a newer one is at once', async () => {
    const dir = dataDir()
    const bundled = zipapp('bundled', '2050.01.01')
    expect(
      await installBundled(dir, new Blob([bundled]), {
        version: '2050.01.01',
        sha256: sha256(bundled),
        source: 'test',
      }),
    ).toBe(true)
    const ytdlp = createYtdlp({ ytdlpPath: '', dataDir: dir })
    const bundledPath = join(dir, 'bin', BUNDLED_NAME)
    expect(await ytdlp.current()).toMatchObject({ source: 'bundled', path: bundledPath, version: '2050.01.01' })

    expect(await updateYtdlp({ dataDir: dir, from: `${base}/older/` })).toMatchObject({ version: '2040.01.01' })
    expect(await ytdlp.current()).toMatchObject({ source: 'bundled', version: '2050.01.01' })

    await updateYtdlp({ dataDir: dir, from: `${base}/good/` })
    expect(await ytdlp.current()).toMatchObject({ source: 'updated', version: '2099.01.01' })
  })

  test('an update too old to run (left by an earlier linkbox) does not hide the bundled one', async () => {
    const dir = dataDir()
    const bundled = zipapp('bundled-safe', '2050.01.01')
    await installBundled(dir, new Blob([bundled]), { version: '2050.01.01', sha256: sha256(bundled), source: 'test' })
    // Put in place by hand, as `ytdlp update` now refuses it: no sidecar, so its --version is asked.
    writeFileSync(updatedFile(dir), unsafe, { mode: 0o755 })
    expect(await createYtdlp({ ytdlpPath: '', dataDir: dir }).current()).toMatchObject({
      source: 'bundled',
      version: '2050.01.01',
    })
  })

  test('extraction of the bundled one: only when missing or different, never from a damaged build', async () => {
    const dir = dataDir()
    const a = zipapp('bundle-a', '2050.01.01')
    const b = zipapp('bundle-b', '2051.01.01')
    const metaA = { version: '2050.01.01', sha256: sha256(a), source: 'test' }
    const path = join(dir, 'bin', BUNDLED_NAME)
    expect(await installBundled(dir, new Blob([a]), metaA)).toBe(true)
    const first = statSync(path)
    expect(first.mode & 0o777).toBe(0o755)
    expect(await installBundled(dir, new Blob([a]), metaA)).toBe(false)
    expect(statSync(path).ino).toBe(first.ino)
    // Another build's: replaced.
    expect(await installBundled(dir, new Blob([b]), { version: '2051.01.01', sha256: sha256(b), source: 'test' })).toBe(
      true,
    )
    expect(sha256(readFileSync(path))).toBe(sha256(b))
    // Removed by hand: put back.
    Bun.spawnSync(['rm', path])
    expect(await installBundled(dir, new Blob([b]), { version: '2051.01.01', sha256: sha256(b), source: 'test' })).toBe(
      true,
    )
    expect(existsSync(path)).toBe(true)
    // Bytes that are not what the build recorded: refused, the installed one stays.
    await expect(
      installBundled(dir, new Blob([a]), { version: '2052.01.01', sha256: '0'.repeat(64), source: 'test' }),
    ).rejects.toThrow('damaged')
    expect(sha256(readFileSync(path))).toBe(sha256(b))
  })

  test("bundledInstalled: true only for the build's own file as its sidecar names it", async () => {
    const dir = dataDir()
    const a = zipapp('installed-a', '2050.01.01')
    const metaA = { version: '2050.01.01', sha256: sha256(a), source: 'test' }
    expect(bundledInstalled(dir, metaA)).toBe(false) // nothing there yet
    await installBundled(dir, new Blob([a]), metaA)
    expect(bundledInstalled(dir, metaA)).toBe(true)
    expect(bundledInstalled(dir, { ...metaA, sha256: '0'.repeat(64) })).toBe(false) // another build's
    writeFileSync(join(dir, 'bin', BUNDLED_NAME), zipapp('installed-b', '2040.04.04')) // changed behind its sidecar
    expect(bundledInstalled(dir, metaA)).toBe(false)
    expect(await installBundled(dir, new Blob([a]), metaA)).toBe(true)
    expect(bundledInstalled(dir, metaA)).toBe(true)
    writeFileSync(join(dir, 'bin', `${BUNDLED_NAME}.json`), '{') // a sidecar cut short
    expect(bundledInstalled(dir, metaA)).toBe(false)
  })

  test('a bundled file replaced behind its sidecar is asked for its version, not trusted', async () => {
    const dir = dataDir()
    const a = zipapp('side-a', '2050.01.01')
    await installBundled(dir, new Blob([a]), { version: '2050.01.01', sha256: sha256(a), source: 'test' })
    writeFileSync(join(dir, 'bin', BUNDLED_NAME), zipapp('side-b', '2040.04.04'))
    expect(await createYtdlp({ ytdlpPath: '', dataDir: dir }).current()).toMatchObject({
      source: 'bundled',
      version: '2040.04.04',
    })
  })

  test('otherwise yt-dlp on PATH; with none anywhere, null', async () => {
    const dir = dataDir()
    const pathDir = join(root, 'on-path')
    const onPath = script(pathDir, 'yt-dlp', '2002.02.02')
    expect(await createYtdlp({ ytdlpPath: '', dataDir: dir, env: { PATH: pathDir } }).current()).toEqual({
      argv: [onPath],
      path: onPath,
      source: 'path',
      version: '2002.02.02',
    })
    expect(
      await createYtdlp({ ytdlpPath: '', dataDir: dir, env: { PATH: join(root, 'empty-path') } }).current(),
    ).toBeNull()
  })

  test('a zipapp cannot run without python3: it is passed over for one on PATH', async () => {
    const dir = dataDir()
    await updateYtdlp({ dataDir: dir, from: `${base}/good/` })
    const pathDir = join(root, 'on-path-only')
    const onPath = script(pathDir, 'yt-dlp', '2003.03.03')
    expect(await createYtdlp({ ytdlpPath: '', dataDir: dir, env: { PATH: pathDir } }).current()).toMatchObject({
      source: 'path',
      path: onPath,
    })
  })
})

describe('linkbox ytdlp update (the CLI)', () => {
  const c = writeConfig(tempDir('linkbox-ytdlp-cli-'))
  afterAll(() => removeDir(c.dir))

  test('installs a good build and prints its version', async () => {
    const r = await runCli(['ytdlp', 'update', '--from', `${base}/good/`, '--config', c.configPath])
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect(r.stdout).toContain(`yt-dlp 2099.01.01 installed at ${join(c.dataDir, 'bin', UPDATED_NAME)}`)
    expect(sha256(readFileSync(join(c.dataDir, 'bin', UPDATED_NAME)))).toBe(sha256(good))
  })

  test('a bad checksum: exit 1, the reason named, the old one kept', async () => {
    const r = await runCli(['ytdlp', 'update', '--from', `${base}/badsum/`, '--config', c.configPath])
    expect(r.code).toBe(1)
    expect(r.stderr).toStartWith('linkbox: ytdlp update refused: checksum mismatch: yt-dlp has SHA-256 ')
    expect(r.stderr).toContain('the yt-dlp in use is unchanged')
    expect(r.stderr).not.toContain('    at ')
    expect(sha256(readFileSync(join(c.dataDir, 'bin', UPDATED_NAME)))).toBe(sha256(good))
  })

  test('a file that does not run: exit 1, the old one kept', async () => {
    const r = await runCli(['ytdlp', 'update', '--from', `${base}/exits1/`, '--config', c.configPath])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('refused: does not run: `--version` exited with 1')
    expect(sha256(readFileSync(join(c.dataDir, 'bin', UPDATED_NAME)))).toBe(sha256(good))
  })

  test('an update older than the bundled one is installed, and the command says the bundled one stays in use', async () => {
    const c2 = writeConfig(tempDir('linkbox-ytdlp-cli-'))
    try {
      const bundled = zipapp('cli-bundled', '2050.01.01')
      await installBundled(c2.dataDir, new Blob([bundled]), {
        version: '2050.01.01',
        sha256: sha256(bundled),
        source: 'test',
      })
      const r = await runCli(['ytdlp', 'update', '--from', `${base}/older/`, '--config', c2.configPath])
      expect(r.code).toBe(0)
      expect(r.stdout).toContain('yt-dlp 2040.01.01 installed')
      expect(r.stdout).toContain(
        `note: the service uses the bundled one instead (${join(c2.dataDir, 'bin', BUNDLED_NAME)}, 2050.01.01)`,
      )
    } finally {
      removeDir(c2.dir)
    }
  })

  test('a release older than 2024.07.01: exit 1, the version and the reason named, the old one kept', async () => {
    const r = await runCli(['ytdlp', 'update', '--from', `${base}/unsafe/`, '--config', c.configPath])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('refused: version 2023.03.04 is older than 2024.07.01')
    expect(r.stderr).toContain('the yt-dlp in use is unchanged')
    expect(sha256(readFileSync(join(c.dataDir, 'bin', UPDATED_NAME)))).toBe(sha256(good))
  })

  test('a wrong sub-command is a usage error', async () => {
    const r = await runCli(['ytdlp', 'upgrade', '--config', c.configPath])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('usage: linkbox ytdlp update [--from URL|FILE]')
  })
})
