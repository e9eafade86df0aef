#!/usr/bin/env bun
// `bun run bench [filter]`: the compiled binary under wrk (and, for mail, under the bench's own SMTP
// client; for media, curl), each figure beside a baseline measured in the same run and against its target from issue 7, 8, 9, 10, 21 or 39
// (the machine is shared and noisy: ratios, not absolutes). Needs wrk (Debian package `wrk`), curl for media, the `postgresql` package for postgres (a throwaway server), and npm for mail's anchor, maildev (bench/maildev, installed on first use). A full run (no filter) writes bench/RESULTS.md, with the "before"
// figures of bench/before.json beside this run's; the hot-code and 1,000-code rows also give their ratio to the committed RESULTS.md's (the regression guard).
//
//   bun run bench                      every section; writes bench/RESULTS.md
//   bun run bench links                only the sections whose name (or title) matches
//   LINKBOX_BENCH_BINARY=/tmp/linkbox-before LINKBOX_BENCH_LABEL='commit 8e060d8' bun run bench -- --save bench/before.json
//                                      another binary; its figures go to the file, RESULTS.md is left alone
// LINKBOX_BENCH_SECONDS and LINKBOX_BENCH_ROUNDS shorten a run while working on the bench (default 4 s, 3);
// the redirect and spread sections run LINKBOX_BENCH_HEAD_ROUNDS rounds (default 2 more), their figures being the noisiest.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { migrations } from '../src/db/sqlite/migrations'
import { benchBinary, ROOT } from './bench/binary'
import { benchBlocklist } from './bench/blocklist'
import { removeScratch, type BenchContext } from './bench/context'
import { benchCreate } from './bench/create'
import { benchDistinctUa } from './bench/distinct-ua'
import { benchImport } from './bench/import'
import { benchLists } from './bench/lists'
import { benchMail } from './bench/mail'
import { benchMedia } from './bench/media'
import { benchPostgres } from './bench/postgres'
import { applyGuard, previousFigures } from './bench/previous'
import { benchQr } from './bench/qr'
import { benchRedirect } from './bench/redirect'
import { machine, resultsMarkdown, resultsTable, withoutMachinePaths, type Run } from './bench/results'
import { benchSpread } from './bench/spread'
import { benchStartup } from './bench/startup'
import { benchStats } from './bench/stats'
import { benchUnwritable } from './bench/unwritable'
import { benchWebhooks } from './bench/webhooks'
import { hasWrk } from './bench/wrk'

if (!hasWrk()) {
  console.error('bench: wrk is not installed (apt-get install -y wrk)')
  process.exit(2)
}
const { values, positionals } = parseArgs({
  args: Bun.argv.slice(2),
  allowPositionals: true,
  options: { save: { type: 'string' } },
})
const started = performance.now()
const binary = await benchBinary()
if (binary.schema !== migrations.length) {
  console.error(
    `bench: ${binary.path} makes databases of schema ${binary.schema}, this checkout's loader makes schema ${migrations.length}; ` +
      'bench that binary from a checkout of its own schema (bench/before.json keeps figures measured that way)',
  )
  process.exit(2)
}
const ctx: BenchContext = {
  binary,
  cacheDir: join(ROOT, 'bench/data'),
  rounds: Number(process.env.LINKBOX_BENCH_ROUNDS ?? 3),
  seconds: Number(process.env.LINKBOX_BENCH_SECONDS ?? 4),
  figures: [],
  commands: [],
}
const opts = { rounds: ctx.rounds, seconds: ctx.seconds, command: [binary.path] }
// Issue 39's first rows: more rounds, for a steadier median and range.
const headRounds = Number(process.env.LINKBOX_BENCH_HEAD_ROUNDS ?? ctx.rounds + 2)
// The committed RESULTS.md, read before a full run overwrites it: the regression guard's previous values.
const resultsPath = join(ROOT, 'bench/RESULTS.md')
const previous = existsSync(resultsPath) ? previousFigures(readFileSync(resultsPath, 'utf8')) : null

const sections: { name: string; title: string; run: () => Promise<string[]> }[] = [
  {
    name: 'redirect',
    title:
      'Redirect of one hot code against the floor (a bare Bun.serve reading what a redirect reads) and a bare 302, and with request lines off',
    run: () => benchRedirect({ ...opts, rounds: headRounds, figures: ctx.figures }),
  },
  {
    name: 'blocklist',
    title: 'Blocklist of 1,000,000 hosts: load time, memory, and the redirect with it loaded against without',
    run: () => benchBlocklist({ ...opts, figures: ctx.figures }),
  },
  {
    name: 'spread',
    title:
      'Redirects over 1,000 codes and over 100,000 codes on 1M links, against the floor serving the same codes from a Map, and bare',
    run: () => benchSpread({ ...ctx, rounds: headRounds }),
  },
  {
    name: 'stats',
    title: 'Statistics of a link with 10M clicks: stats.json and /<code>+; redirects while polled',
    run: () => benchStats(ctx),
  },
  {
    name: 'links',
    title: 'links.json at 100,000 links against 100 links, first and deep page',
    run: () => benchLists(ctx),
  },
  { name: 'create', title: 'Creations: getLink.json (keyed) against a bare JSON answer', run: () => benchCreate(ctx) },
  {
    name: 'import',
    title:
      'Imports: 50,000 rows, 10 MiB of junk rows (2.6M, and 50,000), 20 MiB of junk; redirect p99 and memory added meanwhile',
    run: () => benchImport(ctx),
  },
  { name: 'startup', title: 'Start-up: linkbox version, serve to first answer', run: () => benchStartup(ctx) },
  {
    name: 'distinct-ua',
    title: 'Redirect with distinct 1 KB user agents against one repeated user agent',
    run: () => benchDistinctUa(opts),
  },
  {
    name: 'qr',
    title: 'QR: cached public image against the redirect; qr.json renderings (in-process, from source)',
    run: () => benchQr(),
  },
  {
    name: 'unwritable',
    title: 'Redirects while the database cannot be written, against a writable one',
    run: () => benchUnwritable(opts),
  },
  {
    name: 'mail',
    title: 'Mail: small messages ingested end to end (250 received) against maildev',
    run: () =>
      benchMail({
        rounds: ctx.rounds,
        seconds: ctx.seconds,
        command: [binary.path],
        figures: ctx.figures,
        commands: ctx.commands,
      }),
  },
  {
    name: 'media',
    title:
      'Media: download.json against yt-dlp directly, cached, and signed downloads against the file straight from its server',
    run: () =>
      benchMedia({
        rounds: ctx.rounds,
        seconds: ctx.seconds,
        command: [binary.path],
        figures: ctx.figures,
        commands: ctx.commands,
      }),
  },
  {
    name: 'webhooks',
    title: 'Webhooks: redirects with a link.clicked endpoint against none; deliveries/s to a local receiver',
    run: () =>
      benchWebhooks({
        rounds: ctx.rounds,
        seconds: ctx.seconds,
        command: [binary.path],
        figures: ctx.figures,
        commands: ctx.commands,
      }),
  },
  {
    name: 'postgres',
    title: 'PostgreSQL: one node against one on SQLite, and two nodes against one',
    run: () => benchPostgres(ctx),
  },
]
const filter = positionals[0]?.toLowerCase()
const exact = sections.filter((s) => s.name === filter)
const chosen = !filter
  ? sections
  : exact.length
    ? exact
    : sections.filter((s) => s.name.includes(filter) || s.title.toLowerCase().includes(filter))
if (chosen.length === 0) {
  console.error(`bench: no section matches "${filter}"; sections: ${sections.map((s) => s.name).join(', ')}`)
  process.exit(2)
}

console.log(
  `bench: ${binary.label}: ${binary.path}, linkbox ${binary.version}, schema ${binary.schema}; ${ctx.rounds} rounds of ${ctx.seconds} s (${headRounds} for redirect and spread)`,
)
const printed: { title: string; lines: string[] }[] = []
try {
  for (const s of chosen) {
    console.log(`\n## ${s.title}`)
    const measured = ctx.figures.length
    const lines = await s.run()
    for (const f of ctx.figures.slice(measured)) {
      const guard = applyGuard(f, previous)
      if (guard) lines.push(guard)
    }
    for (const line of lines) console.log(line)
    printed.push({ title: s.title, lines })
  }
} finally {
  removeScratch()
}

const git = (...args: string[]) =>
  Bun.spawnSync(['git', ...args], { cwd: ROOT })
    .stdout.toString()
    .trim()
const run: Run = {
  binary: binary.label,
  version: binary.version,
  commit: `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--untracked-files=no') ? ' (with uncommitted changes)' : ''}`,
  date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
  machine: machine(),
  figures: ctx.figures,
}
const beforePath = join(ROOT, 'bench/before.json')
const before: Run | undefined = existsSync(beforePath) ? JSON.parse(readFileSync(beforePath, 'utf8')) : undefined
if (run.figures.length)
  console.log(
    `\n## Figures against the targets of issues 7, 8, 9, 10, 21, 22 and 39\n\n${resultsTable(run.figures, process.env.LINKBOX_BENCH_BINARY ? undefined : before)}`,
  )
if (values.save) {
  writeFileSync(values.save, JSON.stringify(run, null, 2) + '\n')
  console.log(`\nbench: figures saved to ${values.save}`)
} else if (process.env.LINKBOX_BENCH_BINARY) {
  console.log(
    '\nbench: another binary was measured: bench/RESULTS.md is left as it was (--save FILE keeps these figures)',
  )
} else if (filter) {
  console.log('\nbench: a filtered run: bench/RESULTS.md is written by a full run only')
} else {
  mkdirSync(join(ROOT, 'bench'), { recursive: true })
  const totalSeconds = (performance.now() - started) / 1000
  writeFileSync(
    resultsPath,
    withoutMachinePaths(
      resultsMarkdown({
        run,
        before,
        commands: ctx.commands,
        sections: printed,
        seconds: ctx.seconds,
        rounds: ctx.rounds,
        headRounds,
        totalSeconds,
      }),
      ROOT,
    ),
  )
  console.log(`\nbench: wrote bench/RESULTS.md (${Math.round(totalSeconds)} s)`)
}
