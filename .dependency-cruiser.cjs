// The house rules over the import graph (issue 37): layers kernel < db < web < features < app < cli, no cycles,
// features reached only through their index.ts, and the feature DAG. Paths are matched as `(^|/)src/...` so that
// the planted-violation fixture (test/fixtures/house/src/...) is judged by the same rules as the real tree.
// Run: npm run lint (or bun node_modules/dependency-cruiser/bin/dependency-cruiser.mjs -c .dependency-cruiser.cjs src).
// Folder-level cycles are checked by scripts/house-rules.ts (the house test), which reads this graph.

const FEATURES = [
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

// What each feature may import from other features (their index.ts): the DAG of the issue, closed downward.
const BELOW = {
  audit: [],
  clicks: [],
  accounts: ['audit'],
  oidc: ['accounts', 'audit'],
  webhooks: ['accounts', 'audit'],
  mail: ['accounts', 'audit'],
  links: ['accounts', 'audit', 'clicks'],
  qr: ['links', 'accounts', 'audit', 'clicks'],
  media: ['links', 'accounts', 'audit', 'clicks'],
  abuse: ['links', 'accounts', 'audit', 'clicks'],
  dashboard: FEATURES.filter((f) => f !== 'dashboard' && f !== 'pages'),
  pages: FEATURES.filter((f) => f !== 'pages'),
}

const F = FEATURES.join('|')
const at = (folders) => `(^|/)src/(${folders})/`
const MAIN = '(^|/)src/main\\.ts$'
const INDEX = '(^|/)src/[^/]+/index\\.ts$'

const dagRules = FEATURES.map((feature) => {
  const above = FEATURES.filter((f) => f !== feature && !BELOW[feature].includes(f))
  return {
    name: `feature-dag-${feature}`,
    comment: `${feature} may import only ${BELOW[feature].join(', ') || 'no other feature'}: what goes upward is passed in by app/`,
    severity: 'error',
    from: { path: at(feature) },
    to: { path: at(above.join('|')) },
  }
}).filter((rule) => !rule.to.path.endsWith('src/()/'))

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycle at file level (type-only imports vanish at run time and do not count)',
      severity: 'error',
      from: { path: '(^|/)src/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'layer-kernel',
      comment: 'kernel/ is the bottom layer: it imports nothing of db, web, the features, app or cli',
      severity: 'error',
      from: { path: at('kernel') },
      to: { path: [at(`db|web|${F}|app|cli`), MAIN] },
    },
    {
      name: 'layer-db',
      comment: 'db/ imports only kernel/',
      severity: 'error',
      from: { path: at('db') },
      to: { path: [at(`web|${F}|app|cli`), MAIN] },
    },
    {
      name: 'layer-web',
      comment: 'web/ imports only kernel/ and db/',
      severity: 'error',
      from: { path: at('web') },
      to: { path: [at(`${F}|app|cli`), MAIN] },
    },
    {
      name: 'layer-feature',
      comment: 'A feature imports kernel/, db/, web/ and features below it, never app/ or cli/',
      severity: 'error',
      from: { path: at(F) },
      to: { path: [at('app|cli'), MAIN] },
    },
    {
      name: 'layer-app',
      comment: 'app/ wires the features; cli/ sits above it',
      severity: 'error',
      from: { path: at('app') },
      to: { path: [at('cli'), MAIN] },
    },
    {
      name: 'feature-public-face',
      comment: 'A feature reaches another feature only through its index.ts',
      severity: 'error',
      from: { path: at(F) },
      to: { path: at(F), pathNot: ['(^|/)src/$2/', INDEX] },
    },
    {
      name: 'app-public-face',
      comment: 'app/ reaches a feature through its index.ts, its feature.ts (to wire it), or its storage/sqlite.ts / storage/postgres.ts (or one per store: sqlite-endpoints.ts)',
      severity: 'error',
      from: { path: at('app') },
      to: { path: at(F), pathNot: [INDEX, `${at(F)}feature\\.ts$`, `${at(F)}storage/(sqlite|postgres)[-a-z0-9]*\\.ts$`] },
    },
    {
      name: 'cli-public-face',
      comment: 'cli/ and main.ts reach a feature only through its index.ts (engines are opened by app/)',
      severity: 'error',
      from: { path: [at('cli'), MAIN] },
      to: { path: at(F), pathNot: INDEX },
    },
    {
      name: 'index-not-postgres',
      comment: "A feature's index.ts loads no PostgreSQL code, so a SQLite start never does (app imports it lazily)",
      severity: 'error',
      from: { path: `(^|/)src/(${F})/index\\.ts$` },
      to: {
        path: ['(^|/)src/[^/]+/storage/postgres[^/]*\\.ts$', '(^|/)src/db/postgres/'],
        dependencyTypesNot: ['type-only', 'dynamic-import'],
      },
    },
    ...dagRules,
    {
      name: 'not-to-test',
      comment: 'Code does not import from test/',
      severity: 'error',
      from: { path: '(^|/)src/' },
      to: { path: '(^|/)test/', pathNot: '^test/fixtures/house/' },
    },
    {
      name: 'not-unresolvable',
      comment: 'Every relative import resolves to a file',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true, pathNot: '^(bun|bun:.*|node:.*)$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['bun', 'import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.json', '.d.ts'],
    },
    builtInModules: { add: ['bun', 'bun:sqlite', 'bun:test', 'bun:ffi', 'bun:jsc'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
}
