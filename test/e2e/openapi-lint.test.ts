// The OpenAPI document as served, linted by an independent tool: Redocly's CLI with its `recommended`
// rules (issue 36 item 9). Any error or warning fails, with and without the marketplace route (which adds
// security schemes). The generator makes every entry (methods, webhook events), so new ones are held too.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir, testConfig, sqliteLinkbox, type SqliteLinkbox } from '../support/app'

const REDOCLY = join(import.meta.dir, '../..', 'node_modules', '.bin', 'redocly')
// A public base URL as a real box has: the document's `servers` entry is it (the recommended rules warn of
// example.com and localhost there, rightly for a published document).
const BASE_URL = 'https://lnk.family-box.net'
let dir: string
const boxes: SqliteLinkbox[] = []

beforeAll(() => {
  dir = tempDir()
})
afterAll(async () => {
  for (const b of boxes) await b.close()
  rmSync(dir, { recursive: true, force: true })
})

/** The document served on a real socket by an app with `overrides`, written to a file. */
async function served(name: string, overrides: Record<string, unknown>): Promise<string> {
  const box = sqliteLinkbox(
    testConfig(join(dir, name), { server: { host: '127.0.0.1', port: 0, base_url: BASE_URL }, ...overrides }),
  )
  boxes.push(box)
  const r = await fetch(`http://127.0.0.1:${box.listen().port}/api/docs/openapi.json`)
  expect(r.status).toBe(200)
  const file = join(dir, `${name}.json`)
  writeFileSync(file, await r.text())
  return file
}

async function lint(file: string) {
  // No config file: exactly the `recommended` ruleset; no telemetry, no update check (no network here).
  const proc = Bun.spawn([REDOCLY, 'lint', '--extends', 'recommended', '--format', 'stylish', file], {
    cwd: dir,
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ])
  return { code, text: `${out}\n${err}` }
}

for (const [name, overrides] of [
  ['plain', {}],
  ['marketplace', { marketplace: { proxy_secret: 'mp-secret' } }],
] as const) {
  test(`redocly lint --extends recommended: the served document (${name}) has no error and no warning`, async () => {
    const file = await served(name, overrides)
    const { code, text } = await lint(file)
    expect(text).not.toMatch(/\b(error|warning)s?\b.*\b(security-defined|no-required-schema-properties-undefined)\b/)
    expect(text).toContain('Woohoo! Your API description is valid.')
    expect(text).not.toMatch(/You have \d+ warnings?/)
    expect(code).toBe(0)
  }, 60_000)
}
