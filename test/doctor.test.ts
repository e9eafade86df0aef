// `linkbox doctor` as an operator runs it: findings on stdout, exit 1 only when something fails.
import { afterAll, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { removeDir, runCli, tempDir, writeConfig } from './support/server'

const dirs: string[] = []
afterAll(() => dirs.forEach(removeDir))
const config = (overrides = {}) => {
  const c = writeConfig(tempDir(), overrides)
  dirs.push(c.dir)
  return c
}

test('a good setup: every check ok or warn, exit 0, the database created', async () => {
  const c = config()
  const r = await runCli(['doctor', '--config', c.configPath])
  expect(r.code).toBe(0)
  expect(r.stdout).toMatch(/^ok\s+config\s+.*linkbox\.toml$/m)
  expect(r.stdout).toMatch(/^ok\s+data_dir\s+.* is writable$/m)
  expect(r.stdout).toMatch(/^ok\s+database\s+.*schema \d+\/\d+, quick_check ok$/m)
  expect(r.stdout).toMatch(/^ok\s+server\.port\s+port 0/m)
  expect(r.stdout).toMatch(/^(ok|warn)\s+yt-dlp\s/m)
  expect(r.stdout).toMatch(/^(ok|warn)\s+ffmpeg\s/m)
  expect(r.stdout).not.toContain('FAIL')
})

test('a data_dir that is a file fails, exit 1, naming it', async () => {
  const dir = tempDir()
  dirs.push(dir)
  const file = join(dir, 'not-a-dir')
  writeFileSync(file, 'x')
  const c = config({ data_dir: file })
  const r = await runCli(['doctor', '--config', c.configPath])
  expect(r.code).toBe(1)
  expect(r.stdout).toMatch(/^FAIL\s+data_dir\s+.*not-a-dir is not a directory$/m)
})

test('a port in use is a warning that suggests linkbox is already running', async () => {
  const holder = createServer().listen(0, '127.0.0.1')
  await new Promise((r) => holder.once('listening', r))
  const port = (holder.address() as { port: number }).port
  try {
    const c = config({ server: { host: '127.0.0.1', port } })
    const r = await runCli(['doctor', '--config', c.configPath])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(new RegExp(`^warn\\s+server\\.port\\s+127\\.0\\.0\\.1:${port} cannot be bound \\(EADDRINUSE\\): is linkbox already running\\?$`, 'm'))
  } finally {
    holder.close()
  }
})

test('a yt-dlp path that does not exist is a warning naming what it is for', async () => {
  const c = config({ media: { ytdlp_path: '/nonexistent/yt-dlp' } })
  const r = await runCli(['doctor', '--config', c.configPath])
  expect(r.stdout).toMatch(/^warn\s+yt-dlp\s+\/nonexistent\/yt-dlp not found: needed for media download$/m)
})
