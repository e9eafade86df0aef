// The house rules of issue 37, checked in every `npm test`: the import graph (layers, cycles, public faces, the
// feature DAG: .dependency-cruiser.cjs), folder-level cycles, SQL only in storage/ and db/, database.url only in
// app/, files of at most 500 lines, and Biome (format and lint). Each failure lists what breaks the rule.
// The planted tree test/fixtures/house/src shows that the same rules fail when broken.
import { describe, expect, test } from 'bun:test'
import {
  biome,
  cruise,
  cruiser,
  databaseUrlOutsideApp,
  describeViolations,
  folderCycles,
  longFiles,
  sqlOutsideStorage,
} from '../../scripts/house-rules'

const SLOW = 60_000 // three child processes on a shared machine; each takes about 3 s of CPU
const FIXTURE = 'test/fixtures/house/src'
const tree = cruise(['src'])
const lint = biome()
const planted = cruise([FIXTURE])
const plantedText = cruiser([FIXTURE])

describe('the house rules hold on src/', () => {
  test(
    'imports keep the layers, the public faces and the feature DAG, with no file-level cycle',
    async () => {
      expect(describeViolations(await tree)).toEqual([])
    },
    SLOW,
  )

  test(
    'no import cycle between folders',
    async () => {
      expect(folderCycles(await tree)).toEqual([])
    },
    SLOW,
  )

  test('SQL only under storage/ and db/', () => {
    expect(sqlOutsideStorage('src')).toEqual([])
  })

  test('database.url is read in app/ only', () => {
    expect(databaseUrlOutsideApp('src')).toEqual([])
  })

  test('no file under src/ over 500 lines', () => {
    expect(longFiles('src', 500)).toEqual([])
  })

  test(
    'Biome: src, test and scripts formatted and lint-clean (fix: biome check --write src test scripts)',
    async () => {
      const { exitCode, findings } = await lint
      expect(findings).toEqual([])
      expect(exitCode).toBe(0)
    },
    SLOW,
  )
})

describe('the house rules fail on planted violations (test/fixtures/house)', () => {
  const at = (path: string) => `${FIXTURE}/${path}`

  test(
    'the cruiser, as npm run lint runs it, exits non-zero and names the rules',
    async () => {
      const { exitCode, stdout } = await plantedText
      expect(exitCode).toBe(7)
      for (const rule of [
        'no-circular',
        'layer-kernel',
        'feature-public-face',
        'feature-dag-clicks',
        'app-public-face',
      ])
        expect(stdout).toContain(`error ${rule}: `)
    },
    SLOW,
  )

  test(
    'exactly the planted imports are caught; imports through index.ts and app → storage/sqlite are not',
    async () => {
      expect(describeViolations(await planted).sort()).toEqual(
        [
          `app-public-face: ${at('app/app.ts')} → ${at('links/cache.ts')}`,
          `feature-dag-clicks: ${at('clicks/counter.ts')} → ${at('links/cache.ts')}`,
          `feature-public-face: ${at('clicks/counter.ts')} → ${at('links/cache.ts')}`,
          `feature-public-face: ${at('links/cache.ts')} → ${at('clicks/counter.ts')}`,
          `index-not-postgres: ${at('links/index.ts')} → ${at('links/storage/postgres.ts')}`,
          `layer-kernel: ${at('kernel/clock.ts')} → ${at('links/cache.ts')}`,
          `no-circular: ${at('clicks/counter.ts')} → ${at('links/cache.ts')} → ${at('clicks/counter.ts')}`,
        ].sort(),
      )
    },
    SLOW,
  )

  test(
    'the folder cycle is found',
    async () => {
      const found = folderCycles(await planted)
      expect(found).toHaveLength(1)
      expect(found[0]).toStartWith('folder cycle clicks, kernel, links:')
    },
    SLOW,
  )

  test('SQL outside storage/ and database.url outside app/ are found; SQL in storage/ is not', () => {
    expect(sqlOutsideStorage(FIXTURE)).toEqual([
      `${at('links/cache.ts')}: 1 SQL lines (8): return config.database.url ? null : db.query('SELECT code FROM links')`,
    ])
    expect(databaseUrlOutsideApp(FIXTURE)).toEqual([
      `${at('links/cache.ts')}:8: return config.database.url ? null : db.query('SELECT code FROM links')`,
    ])
  })
})
