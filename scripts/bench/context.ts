// What the sections of `bun run bench` share: the binary under test, the data cache, the round length,
// and where each section puts its figures and the commands it ran (for bench/RESULTS.md).
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  apiPost,
  createAccount,
  startServer,
  tempDir,
  writeConfig,
  type RunningServer,
} from '../../test/support/server'
import type { Binary } from './binary'
import type { Figure } from './results'
import { seeded } from './load'
import type { WrkResult } from './wrk'

export interface BenchContext {
  binary: Binary
  /** bench/data: the loader's data sets, kept between runs. */
  cacheDir: string
  rounds: number
  seconds: number
  figures: Figure[]
  commands: string[]
}

/** Remembers a wrk result's command for RESULTS.md and hands the result on. */
export function noted(ctx: BenchContext, r: WrkResult): WrkResult {
  ctx.commands.push(r.command)
  return r
}

// The run's small files (codes, bodies for the Lua scripts), in one temporary directory removed at the end.
let scratch: string | undefined
const scratchFile = (name: string) => join((scratch ??= tempDir('linkbox-bench-')), name)
export function removeScratch(): void {
  if (scratch) rmSync(scratch, { recursive: true, force: true })
  scratch = undefined
}

export const LUA = {
  randomCode: join(import.meta.dir, 'random-code.lua'),
  post: join(import.meta.dir, 'post.lua'),
  forwarded: join(import.meta.dir, 'forwarded.lua'),
}

/**
 * A file of `n` codes from a data set's codes.txt, spread over all of it, in a seeded random order.
 * `offset` picks the codes that many places after (another set of n codes: 1 gives none of offset 0's).
 */
export function codesFile(dataDir: string, n: number, offset = 0): string {
  const all = readFileSync(join(dataDir, 'codes.txt'), 'utf8').trim().split('\n')
  if (all.length < n * (offset + 1))
    throw new Error(`bench: ${dataDir} has ${all.length} codes, ${n * (offset + 1)} needed`)
  const step = all.length / n
  const picked = Array.from({ length: n }, (_, i) => all[Math.floor(i * step) + offset]!)
  const rnd = seeded(n)
  for (let i = picked.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1))
    ;[picked[i], picked[j]] = [picked[j]!, picked[i]!]
  }
  const path = scratchFile(offset ? `codes-${n}-${offset}.txt` : `codes-${n}.txt`)
  writeFileSync(path, picked.join('\n') + '\n')
  return path
}

let bodyFiles = 0
/** A file of form bodies for post.lua, one a line. */
export function bodiesFile(name: string, bodies: Record<string, string>[]): string {
  const path = scratchFile(`${name}-${++bodyFiles}.txt`)
  writeFileSync(path, bodies.map((b) => new URLSearchParams(b).toString()).join('\n') + '\n')
  return path
}

export const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
export const keyHeader = (key: string) => ({ ...FORM, 'x-api-key': key })

/** A day `days` before/after YYYY-MM-DD. */
export const addDays = (day: string, days: number) =>
  new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10)

export const mib = (n: number) => `${n.toFixed(0)} MiB`

/**
 * A baseline in a child process of its own: bare-redirect.ts (a 302), bare-reads.ts (the floor: given a file
 * of codes, it serves them from a Map) or bare-json.ts (a small JSON answer).
 */
export const startBare = (name: 'bare-redirect' | 'bare-reads' | 'bare-json', codes?: string) =>
  startServer({
    command: [process.execPath, join(import.meta.dir, `${name}.ts`)],
    config: writeConfig(),
    env: codes ? { LINKBOX_BENCH_FLOOR_CODES: codes } : {},
  })

/**
 * Three redirect rules of which none matches the bench's visitor (a desktop Chrome on loopback without
 * Accept-Language): every condition is looked at (device, country, language) before the link's own URL.
 */
export const THREE_RULES = JSON.stringify([
  { device: ['mobile', 'tablet'], url: 'https://example.com/bench/mobile' },
  { country: ['JP', 'KR'], url: 'https://example.com/bench/asia' },
  { language: ['fr', 'de'], url: 'https://example.com/bench/eu' },
])

/** An account "bench" on a running linkbox, its key, and one link to visit. */
export async function benchLink(
  box: RunningServer,
  command?: readonly string[],
): Promise<{ key: string; code: string }> {
  const key = await createAccount(box.configPath, 'bench', { command })
  const link = await apiPost(box.url, 'getLink.json', { url: 'https://example.com/bench' }, { 'x-api-key': key })
  return { key, code: link.body.return.hex as string }
}
