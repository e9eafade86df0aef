// Start-up (issue 7): a command loads only what it uses. `linkbox version` or `key list` must not pay for
// the HTTP app (Elysia, the QR encoder, the schemas), which took most of its 54 ms. Checked by the modules
// a child process has loaded after running the command (require.cache lists ES modules in Bun too).
import { expect, test } from 'bun:test'
import { REPO_ROOT, removeDir, writeConfig } from '../support/server'

async function loadedBy(args: string[]): Promise<string[]> {
  const script = `
    const { main } = await import(${JSON.stringify(`${REPO_ROOT}/src/main.ts`)})
    const code = await main(${JSON.stringify(args)})
    console.error(JSON.stringify({ code, loaded: Object.keys(require.cache) }))
  `
  const proc = Bun.spawn([process.execPath, '-e', script], { cwd: REPO_ROOT, stdout: 'pipe', stderr: 'pipe' })
  const [stderr, exit] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
  expect(exit).toBe(0)
  const report = JSON.parse(stderr.trim().split('\n').at(-1)!) as { code: number; loaded: string[] }
  expect(report.code).toBe(0)
  return report.loaded.map((p) => p.replace(`${REPO_ROOT}/`, ''))
}

const HEAVY = /src\/app\/app\.ts|node_modules\/(elysia|qrcode|@sinclair\/typebox|ua-parser-js|isbot)\//

test('`linkbox version` loads neither the app nor the database, nor even the config', async () => {
  const loaded = await loadedBy(['version'])
  expect(loaded.filter((p) => p.startsWith('src/')).sort()).toEqual([
    'src/kernel/errors.ts',
    'src/kernel/version.ts',
    'src/main.ts',
  ])
  expect(loaded.filter((p) => HEAVY.test(p))).toEqual([])
})

test('`linkbox key list` opens the database but does not load the HTTP app', async () => {
  const config = writeConfig()
  try {
    const loaded = await loadedBy(['key', 'list', '--config', config.configPath])
    expect(loaded).toContain('src/db/sqlite/index.ts')
    expect(loaded).toContain('src/accounts/service.ts')
    expect(loaded.filter((p) => HEAVY.test(p))).toEqual([])
  } finally {
    removeDir(config.dir)
  }
})

test('the app does not load the QR encoder before a QR code is drawn, and QR codes still work', async () => {
  const script = `
    const { makeBox } = await import(${JSON.stringify(`${REPO_ROOT}/test/support/app.ts`)})
    const box = await makeBox()
    const before = Object.keys(require.cache).some((p) => p.includes('node_modules/qrcode/'))
    const key = await box.account('qr')
    const r = await box.get('/api/qr.json', { data: 'hello', size: '64' }, { 'x-api-key': key })
    const after = Object.keys(require.cache).some((p) => p.includes('node_modules/qrcode/'))
    await box.cleanup()
    console.error(JSON.stringify({ before, status: r.status, after }))
  `
  const proc = Bun.spawn([process.execPath, '-e', script], { cwd: REPO_ROOT, stdout: 'pipe', stderr: 'pipe' })
  const [stderr, exit] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
  expect(exit).toBe(0)
  // Drawing happens in a render worker, which loads it there; this thread may never need it.
  expect(JSON.parse(stderr.trim().split('\n').at(-1)!)).toMatchObject({ before: false, status: 200 })
})
