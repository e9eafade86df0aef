// The counts of issue 37's "How it is checked", from the tree as it is: `bun scripts/house-count.ts`
// (`--all` lists every item instead of the first 15 of each). The rules themselves are in scripts/house-rules.ts.
import {
  anys,
  engineAnys,
  cruise,
  databaseUrlOutsideApp,
  edgesOf,
  FEATURES,
  fileCycles,
  folderCycles,
  folderOf,
  lineCount,
  longFiles,
  PASS_THROUGH_HEURISTIC,
  passThroughs,
  sqlOutsideStorage,
} from './house-rules'

const all = process.argv.includes('--all')
const features = new Set(FEATURES)
const isIndex = (path: string) => /\/src\/[^/]+\/index\.ts$|^src\/[^/]+\/index\.ts$/.test(path)

function section(title: string, items: string[], note = '', count = items.length): void {
  console.log(`\n${title}: ${count}${note ? ` (${note})` : ''}`)
  for (const item of all ? items : items.slice(0, 15)) console.log(`  ${item}`)
  if (!all && items.length > 15) console.log(`  … ${items.length - 15} more (--all)`)
}

const graph = await cruise(['src'])
const edges = edgesOf(graph)
const line = (e: { from: string; to: string }) => `${e.from} → ${e.to}`

console.log('House counts (issue 37) for src/: bun scripts/house-count.ts')
console.log(`${graph.modules.filter((m) => folderOf(m.source)).length} modules, ${edges.length} imports between them`)

const runtime = fileCycles(graph, true)
const withTypes = fileCycles(graph, false)
section(
  'Import cycles, file level (run time)',
  runtime.map((c) => c.join(' ↔ ')),
  'strongly connected sets of files; type-only imports left out',
)
section(
  'Import cycles, file level (with type-only imports)',
  withTypes.map((c) => c.join(' ↔ ')),
)
section('Import cycles, folder level', folderCycles(graph), 'all imports, type-only included')

section(
  'Imports from kernel/, db/, web/ into features',
  edges
    .filter((e) => ['kernel', 'db', 'web'].includes(folderOf(e.from) ?? '') && features.has(folderOf(e.to) ?? ''))
    .map(line),
)
section(
  'Imports from kernel/, db/, web/ into app/ or cli/',
  edges
    .filter(
      (e) =>
        ['kernel', 'db', 'web'].includes(folderOf(e.from) ?? '') &&
        ['app', 'cli', 'main'].includes(folderOf(e.to) ?? ''),
    )
    .map(line),
)

const crossing = edges.filter((e) => {
  const a = folderOf(e.from) ?? ''
  const b = folderOf(e.to) ?? ''
  return features.has(a) && features.has(b) && a !== b && !isIndex(e.to)
})
section('Cross-feature imports not through index.ts', crossing.map(line))
section(
  'app/, cli/, main.ts into feature internals (app → feature.ts, storage/sqlite*.ts, storage/postgres*.ts allowed)',
  edges
    .filter((e) => {
      const a = folderOf(e.from) ?? ''
      if (!['app', 'cli', 'main'].includes(a) || !features.has(folderOf(e.to) ?? '') || isIndex(e.to)) return false
      return !(a === 'app' && /\/(feature|storage\/(sqlite|postgres)[-a-z0-9]*)\.ts$/.test(e.to))
    })
    .map(line),
)

console.log(`\nmain.ts: ${lineCount('src/main.ts')} lines`)
section('Files over 500 lines', longFiles('src', 500))
section('Files over 400 lines', longFiles('src', 400))

const passing = passThroughs('src')
const perFile = new Map<string, number>()
for (const p of passing) {
  const file = p.slice(0, p.indexOf(':'))
  perFile.set(file, (perFile.get(file) ?? 0) + 1)
}
section(
  'Pass-through storage methods',
  [...perFile].map(([file, n]) => `${file}: ${n}`),
  `per file below; heuristic: ${PASS_THROUGH_HEURISTIC}`,
  passing.length,
)
const engine = engineAnys('src')
section('Engine `any`', engine, 'Storages<any>-like type arguments, and `: any` in storage files')
section(
  '`any` elsewhere in src',
  anys('src').filter((l) => !engine.includes(l)),
  'for information',
)

const byRule = new Map<string, number>()
for (const v of graph.summary.violations) byRule.set(v.rule.name, (byRule.get(v.rule.name) ?? 0) + 1)
section(
  'dependency-cruiser rule violations (.dependency-cruiser.cjs)',
  [...byRule].sort((a, b) => b[1] - a[1]).map(([rule, n]) => `${rule}: ${n}`),
  'by rule',
  graph.summary.violations.length,
)
section('Files with SQL outside storage/ and db/', sqlOutsideStorage('src'))
section('database.url read outside app/', databaseUrlOutsideApp('src'))
