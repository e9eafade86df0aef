// The house rules of issue 37 as functions, for test/unit/house.test.ts and scripts/house-count.ts: the import
// graph (dependency-cruiser with .dependency-cruiser.cjs, run by Bun because it refuses Node 20), folder-level
// cycles drawn from that graph, and the rules a graph cannot show (SQL, database.url, file length) by reading text.
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'

export const ROOT = join(import.meta.dir, '..')
export const FEATURES = [
  'links',
  'clicks',
  'qr',
  'mail',
  'media',
  'webhooks',
  'accounts',
  'abuse',
  'audit',
  'oidc',
  'dashboard',
  'pages',
]
const CRUISER = 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs'

export interface Dependency {
  resolved: string
  dependencyTypes: string[]
  coreModule: boolean
  couldNotResolve: boolean
  dynamic: boolean
}
export interface Module {
  source: string
  dependencies: Dependency[]
}
export interface CruiseViolation {
  type: string
  from: string
  to: string
  rule: { name: string; severity: string }
  cycle?: { name: string }[]
}
export interface Graph {
  modules: Module[]
  summary: { violations: CruiseViolation[]; error: number }
}

/** The cruiser's graph and rule violations of `paths` (relative to the repository root), as JSON. */
export async function cruise(paths: string[]): Promise<Graph> {
  const run = await cruiser(['-T', 'json', ...paths])
  if (!run.stdout.trim().startsWith('{')) throw new Error(`dependency-cruiser failed (${run.exitCode}): ${run.stderr}`)
  return JSON.parse(run.stdout) as Graph
}

/** The cruiser as `npm run lint` runs it (text output; the exit code is the number of errors). */
export async function cruiser(args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([process.execPath, CRUISER, '-c', '.dependency-cruiser.cjs', ...args], {
    cwd: ROOT,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ])
  return { exitCode, stdout, stderr }
}

/** One line per rule violation: `rule: from → to`, a cycle as `from → … → from`. */
export function describeViolations(graph: Graph): string[] {
  return graph.summary.violations.map((v) =>
    v.cycle
      ? `${v.rule.name}: ${v.from} → ${v.cycle.map((c) => c.name).join(' → ')}`
      : `${v.rule.name}: ${v.from} → ${v.to}`,
  )
}

/** The top folder under src/ a path is in (`links`, `kernel`…; `main` for src/main.ts), or null outside src/. */
export function folderOf(path: string): string | null {
  return /(?:^|\/)src\/([^/]+?)(?:\/|\.ts$)/.exec(path)?.[1] ?? null
}

export interface Edge {
  from: string
  to: string
  types: string[]
}

/** Every import between two files under src/ (type-only ones too: they are still a dependency of the design). */
export function edgesOf(graph: Graph): Edge[] {
  const edges: Edge[] = []
  for (const m of graph.modules) {
    if (folderOf(m.source) === null) continue
    for (const d of m.dependencies) {
      if (d.coreModule || d.couldNotResolve || folderOf(d.resolved) === null) continue
      edges.push({ from: m.source, to: d.resolved, types: d.dependencyTypes })
    }
  }
  return edges
}

/** Strongly connected components (more than one node) of a directed graph: Tarjan's algorithm. */
export function cycles(nodes: Iterable<string>, next: (node: string) => Iterable<string>): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  let counter = 0
  const visit = (v: string): void => {
    index.set(v, counter)
    low.set(v, counter++)
    stack.push(v)
    onStack.add(v)
    for (const w of next(v)) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0))
    }
    if (low.get(v) !== index.get(v)) return
    const component: string[] = []
    let w: string | undefined
    do {
      w = stack.pop()
      if (w === undefined) break
      onStack.delete(w)
      component.push(w)
    } while (w !== v)
    if (component.length > 1) found.push(component.sort())
  }
  for (const v of nodes) if (!index.has(v)) visit(v)
  return found
}

/** Folder-level import cycles: each as its folders and the imports that close it (one example file each). */
export function folderCycles(graph: Graph): string[] {
  const examples = new Map<string, string>()
  const next = new Map<string, Set<string>>()
  for (const e of edgesOf(graph)) {
    const a = folderOf(e.from) as string
    const b = folderOf(e.to) as string
    if (a === b) continue
    if (!next.has(a)) next.set(a, new Set())
    next.get(a)?.add(b)
    if (!examples.has(`${a}>${b}`)) examples.set(`${a}>${b}`, `${e.from} → ${e.to}`)
  }
  return cycles(next.keys(), (v) => next.get(v) ?? []).map((component) => {
    const inside = component.flatMap((a) =>
      component.filter((b) => next.get(a)?.has(b)).map((b) => `    ${a} → ${b} (${examples.get(`${a}>${b}`)})`),
    )
    return `folder cycle ${component.join(', ')}:\n${inside.join('\n')}`
  })
}

/** File-level cycles; `runtimeOnly` leaves out type-only imports (they vanish when the code runs). */
export function fileCycles(graph: Graph, runtimeOnly: boolean): string[][] {
  const next = new Map<string, Set<string>>()
  for (const e of edgesOf(graph)) {
    if (runtimeOnly && e.types.includes('type-only')) continue
    if (!next.has(e.from)) next.set(e.from, new Set())
    next.get(e.from)?.add(e.to)
  }
  return cycles(next.keys(), (v) => next.get(v) ?? [])
}

/** The .ts files under `dir` (relative to the root), sorted. */
export function sourceFiles(dir: string): string[] {
  const entries = readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)))
    .sort()
}

export function lineCount(file: string): number {
  const text = readFileSync(join(ROOT, file), 'utf8')
  return text.length === 0 ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0)
}

/**
 * A file's lines with comments blanked (line numbers kept): block comments that open a line or follow a space,
 * and `//` comments that open a line or follow a space (so `https://` in a string stays). A heuristic, not a parser.
 */
export function codeLines(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8').replace(/(^|\s)\/\*[\s\S]*?\*\//g, (m) =>
    m.replace(/[^\n]/g, ' '),
  )
  return text.split('\n').map((line) => line.replace(/(^|\s)\/\/.*$/, ''))
}

/** SQL in code: statements by their keywords (upper case, as the code writes them), tagged templates, and the
 * query calls of both engines' clients. */
export const SQL_PATTERNS: RegExp[] = [
  /\bSELECT\b.*\bFROM\b/,
  /\bINSERT (OR \w+ )?INTO\b/,
  /\bUPDATE \w+ SET\b/,
  /\bDELETE FROM\b/,
  /\b(CREATE|ALTER|DROP) (TABLE|INDEX|UNIQUE INDEX|TRIGGER|VIEW|DATABASE)\b/,
  /\bPRAGMA \w+/,
  /\w`\s*(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|ALTER|DROP|BEGIN|COMMIT|LOCK|TRUNCATE|SET)\b/,
  /\b(db|database|sql|tx|client|pool|conn|connection)\.(query|prepare|exec|run|unsafe)\(/,
]

/**
 * Where SQL may be written: the features' storage/ folders and db/. The allow-list holds the whole-database
 * operations of app/, which are no feature's storage: the doctor's integrity checks (doctor*.ts), backup and
 * restore (backup*.ts, archive.ts) and the copy between engines (copy*.ts).
 */
export const SQL_HOMES = /(^|\/)src\/(db\/|[^/]+\/storage\/)/
export const SQL_ALLOWED = /(^|\/)src\/app\/(doctor|backup|archive|copy)[-a-z]*\.ts$/

/** Each file with SQL outside its homes: `file: N lines (line numbers): the first one`. */
export function sqlOutsideStorage(dir: string): string[] {
  const found: string[] = []
  for (const file of sourceFiles(dir)) {
    if (SQL_HOMES.test(file) || SQL_ALLOWED.test(file)) continue
    const hits = codeLines(file)
      .map((line, i) => ({ line, n: i + 1 }))
      .filter(({ line }) => SQL_PATTERNS.some((p) => p.test(line)))
    const first = hits[0]
    if (!first) continue
    const at =
      hits
        .slice(0, 8)
        .map((h) => h.n)
        .join(', ') + (hits.length > 8 ? ', …' : '')
    found.push(`${file}: ${hits.length} SQL lines (${at}): ${first.line.trim().slice(0, 80)}`)
  }
  return found
}

/**
 * Pass-through storage methods (a heuristic): a one-line method whose whole body is a call of another object's
 * method, e.g. `get: async (id) => store.get(id) ?? null,` or `async get(id) { return store.get(id) }` —
 * an async one anywhere under src (an async face over a synchronous call), a plain one in a storage file
 * (a storage/ folder, or *storage*.ts). Calls of SQL clients (db, sql, tx, q…) and of prepared statements
 * (.get, .all, .run, .values, .iterate) are the storage itself, not a pass-through.
 */
export const PASS_THROUGH_HEURISTIC =
  'one-line methods `name: async (…) => obj.m(…)` / `async name(…) { return obj.m(…) }` anywhere in src, ' +
  'and non-async ones in storage/ or *storage*.ts files; SQL clients and prepared-statement calls excluded'

export function passThroughs(dir: string): string[] {
  const arrow =
    /^\s*\w+\s*:\s*(async\s+)?\([^)]*\)\s*(:[^=]+)?=>\s*(await\s+)?(\w+)\.(\w+)\(([^()'"`]*)\)(\s*\?\?\s*null)?\s*,?\s*$/
  const method =
    /^\s*(async\s+)?\w+\s*\([^)]*\)\s*(:[^{]+)?\{\s*return\s+(await\s+)?(\w+)\.(\w+)\(([^()'"`]*)\)(\s*\?\?\s*null)?\s*\}\s*,?\s*$/
  const found: string[] = []
  for (const file of sourceFiles(dir)) {
    const storageFile = /(^|\/)src\/.*(\/storage\/|storage[^/]*\.ts$)/.test(file)
    codeLines(file).forEach((line, i) => {
      const m = arrow.exec(line) ?? method.exec(line)
      if (!m || !(m[1] || storageFile)) return
      if (/^(db|sql|tx|q|client|pool)$/.test(m[4] ?? '') || /^(get|all|run|values|iterate)$/.test(m[5] ?? '')) return
      found.push(`${file}:${i + 1}: ${line.trim().slice(0, 100)}`)
    })
  }
  return found
}

/** `any` as a type in src, outside comments and strings' prose: `<any>`, `Record<string, any>`, `(r: any)`, `any[]`. */
export function anys(dir: string): string[] {
  const found: string[] = []
  for (const file of sourceFiles(dir)) {
    codeLines(file).forEach((line, i) => {
      if (/<any>|<any,|, any>|:\s*any(\[\])?\s*([,)=;>|]|$)/.test(line))
        found.push(`${file}:${i + 1}: ${line.trim().slice(0, 100)}`)
    })
  }
  return found
}

/**
 * The `any` that stands for an engine (a heuristic): a storage, service or backend type given `<any>` for its
 * transaction type (`Storages<any>`, `createLinkService<any>`), and `: any` in storage files (rows from the SQL
 * driver left untyped).
 */
export function engineAnys(dir: string): string[] {
  return anys(dir).filter(
    (l) =>
      /\w*(Storages?|Service|Store|Tx|Backend|Sql|SQL)\w*<any>/.test(l) ||
      (/^[^:]*(\/storage\/|storage[^/:]*\.ts:|-postgres\.ts:)/.test(l) && /:\s*any\b/.test(l)),
  )
}

/** `database.url` is read by app/ only (it chooses the engine); cli/ asks app/. */
export function databaseUrlOutsideApp(dir: string): string[] {
  const found: string[] = []
  for (const file of sourceFiles(dir)) {
    if (/(^|\/)src\/app\//.test(file)) continue
    codeLines(file).forEach((line, i) => {
      if (/\.database\??\.url\b|\[['"]database['"]\]\??\.url\b/.test(line))
        found.push(`${file}:${i + 1}: ${line.trim().slice(0, 100)}`)
    })
  }
  return found
}

/** Files over `limit` lines, longest first, as `file: lines`. */
export function longFiles(dir: string, limit: number): string[] {
  return sourceFiles(dir)
    .map((file) => ({ file, lines: lineCount(file) }))
    .filter((f) => f.lines > limit)
    .sort((a, b) => b.lines - a.lines)
    .map((f) => `${f.file}: ${f.lines}`)
}

/** Biome's verdict on src, test and scripts (format and lint, no fixes): one line per finding, GitHub style. */
export async function biome(): Promise<{ exitCode: number; findings: string[] }> {
  const proc = Bun.spawn(
    [
      'node_modules/.bin/biome',
      'ci',
      '--colors=off',
      '--reporter=github',
      '--max-diagnostics=1000',
      'src',
      'test',
      'scripts',
    ],
    { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' },
  )
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ])
  const findings = `${stdout}\n${stderr}`
    .split('\n')
    .filter((l) => l.startsWith('::'))
    .map((l) => {
      const m = /^::(\w+) title=([^,]+),file=([^,]+),line=(\d+)[^:]*::(.*)$/.exec(l)
      return m ? `${relative(ROOT, m[3] as string)}:${m[4]}: ${m[2]}: ${m[5]}` : l
    })
  if (exitCode !== 0 && findings.length === 0) findings.push(`biome ci failed (${exitCode}): ${stderr.slice(0, 2000)}`)
  return { exitCode, findings }
}
