// Builds the real app (real SQLite file in a fresh temporary data directory) and small request helpers.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Database } from 'bun:sqlite'
import { createLinkbox, type AppOptions, type Linkbox } from '../../src/app/app'
import { buildConfig, type Config } from '../../src/kernel/config'
import { createLogger, type Logger } from '../../src/kernel/log'

export const BASE = 'http://localhost:8080'
/**
 * server.metrics_token of every makeBox() (unless the test sets its own): a request sent through the app, not
 * a socket, has no client address, so /metrics answers it only with the token (web/metrics-access.ts).
 */
export const METRICS_TOKEN = 'test-metrics-token-0123456789'

export interface TestBox extends Linkbox {
  /** The SQLite connection (makeBox's apps run on SQLite). */
  db: Database
  dir: string
  /** Sends a request through the app (no socket); paths are relative to the base URL. */
  request(path: string, init?: RequestInit): Promise<Response>
  /** GET /metrics through the app, with the box's metrics token. */
  readMetrics(): Promise<Response>
  /** POST form-encoded to an /api method and return status, headers and the parsed JSON. */
  post(path: string, fields: Record<string, string>, headers?: Record<string, string>): Promise<ApiAnswer>
  get(path: string, query?: Record<string, string>, headers?: Record<string, string>): Promise<ApiAnswer>
  /** Creates an account and returns its first key. */
  account(name: string, opts?: { admin?: boolean }): Promise<string>
  cleanup(): Promise<void>
}

export interface ApiAnswer {
  status: number
  headers: Headers
  body: any
}

/** Status, headers and the body parsed as JSON (or the text, when it is not JSON). */
export async function readAnswer(res: Response): Promise<ApiAnswer> {
  const text = await res.text()
  let body: any = text
  try {
    body = JSON.parse(text)
  } catch {}
  return { status: res.status, headers: res.headers, body }
}

export function tempDir(prefix = 'linkbox-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

export function testConfig(dir: string, overrides: Record<string, unknown> = {}): Config {
  const doc: Record<string, any> = { data_dir: dir, rate: { anon_per_minute: 0, key_per_minute: 0 } }
  for (const [k, v] of Object.entries(overrides)) {
    doc[k] = typeof v === 'object' && v !== null && !Array.isArray(v) ? { ...(doc[k] ?? {}), ...v } : v
  }
  return buildConfig(doc)
}

/**
 * A log of the test's own for createLinkbox's `logger` option: `errors` gets the message of every line at
 * level warn or error, in order (a fault's message without its stack); nothing is written anywhere.
 */
export function capturedLog(): { logger: Logger; errors: string[] } {
  const errors: string[] = []
  const logger = createLogger({
    format: 'json',
    tty: false,
    requests: false,
    write: (text, level) => {
      if (level !== 'warn' && level !== 'error') return
      for (const line of text.split('\n')) if (line) errors.push(JSON.parse(line).msg)
    },
  })
  return { logger, errors }
}

export async function makeBox(overrides: Record<string, unknown> = {}, opts: AppOptions = {}): Promise<TestBox> {
  const dir = tempDir()
  const config = testConfig(dir, overrides)
  config.server.metrics_token ||= METRICS_TOKEN
  const box = createLinkbox(config, opts)
  const request = (path: string, init?: RequestInit) => box.app.handle(new Request(`${BASE}${path}`, init))
  let closed = false
  if (!box.db) throw new Error('makeBox: the app runs on SQLite (no database.url)')
  return Object.assign(box, {
    db: box.db,
    dir,
    request,
    readMetrics: () => request('/metrics', { headers: { authorization: `Bearer ${config.server.metrics_token}` } }),
    post: async (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
      readAnswer(
        await request(path, {
          method: 'POST',
          body: new URLSearchParams(fields).toString(),
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        }),
      ),
    get: async (path: string, query: Record<string, string> = {}, headers: Record<string, string> = {}) => {
      const qs = new URLSearchParams(query).toString()
      return readAnswer(await request(qs ? `${path}?${qs}` : path, { headers }))
    },
    account: async (name: string, o: { admin?: boolean } = {}) =>
      (await box.accounts.createAccount({ name, admin: o.admin })).key.key,
    cleanup: async () => {
      if (!closed) await box.close()
      closed = true
      rmSync(dir, { recursive: true, force: true })
    },
  })
}

/** An app on SQLite, its connection typed as such (what createLinkbox makes without a database.url). */
export type SqliteLinkbox = Linkbox & { db: Database }
export function sqliteLinkbox(config: Config, opts: AppOptions = {}): SqliteLinkbox {
  const box = createLinkbox(config, opts)
  if (!box.db) throw new Error('sqliteLinkbox: the config names a PostgreSQL database')
  return box as SqliteLinkbox
}
