// `linkbox doctor`: checks what the service needs before (or while) it runs, and says what to fix.
// A skip is a check that could not run because one it depends on failed (no config: no data directory).
import type { Config } from '../kernel/config'
import type { Finding } from './doctor-finding'
import {
  buildTime,
  checkClock,
  checkDatabase,
  checkDataDir,
  checkDisk,
  checkPostgres,
  newestRow,
} from './doctor-storage'
import {
  checkBaseUrl,
  checkBlocklists,
  checkGeo,
  checkMailStore,
  checkMx,
  checkOidc,
  checkPort,
  checkProgram,
  checkTls,
  checkYtdlp,
} from './doctor-services'

export async function runDoctor(config: Config, source: string): Promise<Finding[]> {
  const findings: Finding[] = [{ verdict: 'ok', what: 'config', detail: source }]
  const dataDir = checkDataDir(config.data_dir)
  findings.push(dataDir)
  // On PostgreSQL the data directory still holds the media cache and yt-dlp; the database is the server's.
  const postgres = config.database.url ? await checkPostgres(config.database.url) : null
  if (postgres) findings.push(...postgres.findings)
  else if (dataDir.verdict === 'ok') findings.push(...checkDatabase(config.data_dir))
  else findings.push({ verdict: 'skip', what: 'database', detail: 'the data directory is not usable' })
  findings.push(await checkPort('server.port', config.server.host, config.server.port))
  if (config.mail.smtp_port !== 0)
    findings.push(await checkPort('mail.smtp_port', config.mail.smtp_host, config.mail.smtp_port))
  findings.push(checkTls(config))
  if (postgres) findings.push(postgres.mail)
  else if (dataDir.verdict === 'ok') findings.push(checkMailStore(config.data_dir))
  findings.push(...(await checkMx(config)))
  if (dataDir.verdict === 'ok')
    findings.push(
      checkDisk(config.data_dir),
      checkClock(Date.now(), buildTime(), postgres ? postgres.newest : newestRow(config.data_dir)),
    )
  else
    findings.push(
      { verdict: 'skip', what: 'free disk', detail: 'the data directory is not usable' },
      { verdict: 'skip', what: 'clock', detail: 'the data directory is not usable' },
    )
  findings.push(checkBaseUrl(config))
  findings.push(await checkOidc(config))
  findings.push(checkGeo(config))
  findings.push(...(await checkBlocklists(config)))
  const media = 'needed for media download'
  if (dataDir.verdict === 'ok') findings.push(...(await checkYtdlp(config)))
  else findings.push({ verdict: 'skip', what: 'yt-dlp', detail: 'the data directory is not usable' })
  findings.push(await checkProgram('ffmpeg', ['ffmpeg', '-version'], `${media} (merging formats)`))
  return findings
}

/**
 * The findings when the config itself does not load: that FAIL, the checks that need it skipped, and the
 * one that does not (ffmpeg), so a single run still shows everything it can.
 */
export async function configFailure(path: string, problem: string): Promise<Finding[]> {
  const why = problem.replace(/^config: /, '')
  const skipped = 'needs a config that loads'
  return [
    { verdict: 'FAIL', what: 'config', detail: path && !why.includes(path) ? `${path}: ${why}` : why },
    ...[
      'data_dir',
      'database',
      'server.port',
      'mail.smtp_port',
      'mail.tls',
      'mail store',
      'mail MX',
      'free disk',
      'clock',
      'server.base_url',
      'oidc',
      'blocklists',
      'yt-dlp bundled',
      'yt-dlp',
    ].map((what): Finding => ({ verdict: 'skip', what, detail: skipped })),
    await checkProgram('ffmpeg', ['ffmpeg', '-version'], 'needed for media download (merging formats)'),
    await checkProgram('python3', ['python3', '--version'], 'needed to run a yt-dlp zipapp (the bundled one is)'),
  ]
}

export function formatFindings(findings: Finding[]): string {
  return findings.map((f) => `${f.verdict.padEnd(4)}  ${f.what.padEnd(16)} ${f.detail}`).join('\n')
}
