// `linkbox serve`: the service's lifecycle around the app (app.ts): start-up checks, listening, the signals
// (SIGTERM/SIGINT shut down, SIGHUP re-reads the config and the blocklists, announced to the other nodes).
import type { Config } from '../kernel/config'
import { ConfigError } from '../kernel/errors'
import { VERSION } from '../kernel/version'
import type { Invocation } from './args'
import { context, type Context } from './context'
import { prepareYtdlp } from './ytdlp'

const BLOCKLIST_TOPIC = 'blocklist'

export async function run(invocation: Invocation): Promise<number> {
  await serve(context(invocation))
  return -1 // keeps running
}

async function serve({ config, configPath, overrides, linkbox: openLinkbox }: Context) {
  // The app is loaded alongside (most of the start-up); context.linkbox() then finds it loaded.
  const [{ probeWrite, storageReason }, { ClicksNotWritten }, { log }, { loadConfig }] = await Promise.all([
    import('../db/sqlite'),
    import('../clicks'),
    import('../kernel/log'),
    import('../kernel/config'),
    import('../app/app'),
  ])
  // The service's lines go through the log ([log] in the config: level, format, request lines).
  log.configure(config.log)
  // Start-up safety: refuse a data_dir anyone can write to (see backup.ts), before anything is read from it.
  const [{ Refusal }, { checkDataDirMode, holdLock }] = await Promise.all([
    import('../app/archive'),
    import('../app/lock'),
  ])
  const unsafe = checkDataDirMode(config.data_dir)
  if (unsafe) throw new Refusal(unsafe)
  await prepareYtdlp(config, (line) => log.warn(line))
  // On PostgreSQL: connected, the schema brought up to date (once, whichever node is first) and listening
  // to the other nodes' changes before anything is answered.
  const box = await openLinkbox()
  const { auditRow, CLI } = await import('../audit')
  // The blocklists hold before the first visit is answered (a million hosts load in about a second).
  if (config.links.blocklist_files.length) logBlocklist(log, 'start', await box.abuse.reloadBlocklist())
  const server = box.listen()
  // `linkbox restore` checks this pid file; removed again when the service stops.
  const releaseLock = holdLock(config.data_dir)
  process.on('exit', releaseLock)
  // The handlers go in as soon as the service runs (the webhook deliverer starts sending in listen()): a
  // SIGTERM during the rest of the start-up must shut down cleanly, not kill the process mid-request.
  let closing = false
  const shutdown = async (signal: string) => {
    if (closing) {
      // A second signal means "now": keep the clicks, skip the wait for open requests.
      log.info(`${signal} again: exiting at once`)
      try {
        await box.recorder.flush()
      } catch (err) {
        log.error(`linkbox: ${box.recorder.pending} clicks could not be written: ${storageReason(err)}`)
      }
      log.flush()
      process.exit(1)
    }
    closing = true
    log.info(`${signal}: finishing requests, flushing clicks, closing the database`)
    try {
      await box.close()
      log.flush()
      process.exit(0)
    } catch (err) {
      // One line for the operator: what is lost and why (a full disk, say), never a stack trace.
      // The last line before exit 1, plain like the CLI's own errors (scripts and tests match it whole).
      log.flush()
      console.error(
        err instanceof ClicksNotWritten ? `linkbox: ${err.message}` : `linkbox: shutdown failed: ${storageReason(err)}`,
      )
      process.exit(1)
    }
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
  // Announced once the handlers are in: a script that sends SIGTERM on seeing this line gets a clean stop.
  // An IPv6 address goes in brackets, so that the line carries a URL scripts can use as is.
  const host = server.hostname?.includes(':') ? `[${server.hostname}]` : server.hostname
  log.info(
    `linkbox ${VERSION} listening on http://${host}:${server.port} (base_url ${config.server.base_url}, data ${config.data_dir})`,
  )
  // Blocklist files are each node's own: a reload on one node has every other node read its own files again
  // within a second (SPEC §11), so one SIGHUP is enough where the nodes' files are kept alike.
  const nodeId = crypto.randomUUID()
  const reloadLists = (when: string) =>
    box.abuse.reloadBlocklist().then(
      (r) => (logBlocklist(log, when, r), true),
      (err) => (log.error(`${when}: blocklists not reloaded: ${(err as Error).message}`), false),
    )
  box.changes.subscribe(
    BLOCKLIST_TOPIC,
    (nodes) => {
      if (!closing && config.links.blocklist_files.length && nodes.some((n) => n !== nodeId))
        void reloadLists('another node reloaded its blocklists')
    },
    () => {},
  )
  // SIGHUP re-reads the config file and applies what can change without a restart (app.ts reload()); a
  // file that does not load now is one error line, and the running config stays as it is.
  process.on('SIGHUP', () => {
    if (closing) return
    if (!configPath) {
      log.warn('SIGHUP: there is no config file to re-read (serve runs on the defaults)')
      return
    }
    let next: Config
    try {
      // --port, --host and --data still hold: the file is re-read under them.
      next = loadConfig(configPath, overrides)
    } catch (err) {
      log.error(`SIGHUP: ${err instanceof ConfigError ? err.message : String(err)}; the running config is kept`)
      return
    }
    const { applied, restart } = box.reload(next)
    const what = applied.length ? `applied ${applied.join(', ')}` : 'nothing to apply'
    log.info(
      `SIGHUP: config ${configPath} re-read: ${what}${restart.length ? `; changed but needs a restart: ${restart.join(', ')}` : ''}`,
      { applied, restart },
    )
    // A change of settings is in the audit log, by whoever can signal the service on the machine ("cli").
    if (applied.length > 0)
      box.storages.audit
        .insertAlone(
          auditRow(
            CLI,
            { action: 'settings.reload', target: `config ${configPath}`, detail: `applied ${applied.join(', ')}` },
            Date.now(),
          ),
        )
        .catch((err: unknown) =>
          log.error(`SIGHUP: the audit row of the reload could not be written: ${storageReason(err)}`),
        )
    // The list files are read again whether or not the config changed: their owner edits the files.
    if (config.links.blocklist_files.length || applied.includes('links.blocklist_files'))
      void reloadLists('SIGHUP').then((ok) => ok && box.changes.publish(BLOCKLIST_TOPIC, [nodeId]))
  })
  try {
    const smtp = await box.startSmtp()
    if (smtp) log.info(`linkbox: SMTP on ${config.mail.smtp_host}:${smtp.port} for ${config.mail.domains.join(', ')}`)
  } catch (err) {
    await box.close({ graceMs: 0 }).catch(() => {})
    if (err instanceof ConfigError) throw err
    const code = (err as NodeJS.ErrnoException).code
    throw new ConfigError(
      code === 'EADDRINUSE'
        ? `config: "mail.smtp_port" ${config.mail.smtp_port} on ${config.mail.smtp_host} is in use by another program (0 turns SMTP off)`
        : `config: "mail.smtp_port": cannot listen on ${config.mail.smtp_host}:${config.mail.smtp_port}: ${(err as Error).message}`,
    )
  }
  // Reads still work on a database that cannot be written, so the service runs; but say so at once.
  const unwritable = box.db ? probeWrite(box.db) : null
  if (unwritable)
    log.warn(
      `linkbox: warning: the database cannot be written (${unwritable}); new links fail with 503 and clicks wait in memory until it can`,
    )
}

/** One line on what the blocklists hold and catch; a file that could not be read is a warning of its own. */
function logBlocklist(
  log: { info(line: string, fields?: Record<string, unknown>): void; warn(line: string): void },
  when: string,
  r: {
    hosts: number
    files: {
      path: string
      hosts: number
      error?: string
      skipped: number
      skippedLines: { line: number; text: string }[]
    }[]
    ms: number
    caught: number
  },
) {
  for (const f of r.files)
    if (f.error) log.warn(`${when}: blocklist ${f.path} could not be read (${f.error}); the other lists still hold`)
  // Lines that name no host (a typo, a format not understood): counted, and the first few named (JSON-quoted).
  const skipped = r.files.reduce((n, f) => n + f.skipped, 0)
  const named = r.files.flatMap((f) => f.skippedLines.map((l) => `${f.path}:${l.line} ${JSON.stringify(l.text)}`))
  log.info(
    `${when}: blocklists: ${r.hosts} hosts from ${r.files.filter((f) => !f.error).length} of ${r.files.length} files in ${Math.round(r.ms)} ms; ${r.caught} existing links are on them and answer 451` +
      (skipped
        ? `; ${skipped} line${skipped === 1 ? '' : 's'} skipped, not hosts: ${named.join(', ')}${skipped > named.length ? ', …' : ''}`
        : ''),
    { hosts: r.hosts, caught: r.caught, skipped },
  )
}
