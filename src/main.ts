#!/usr/bin/env bun
// The command line: serve, account, key, import, doctor, backup, restore, migrate, ytdlp update, webhook, audit, version. Each command builds what it needs from the config.
// Every change a command makes is written to the audit log as the actor "cli" (audit/service.ts CLI).
//
// Only what every command needs is imported here. The rest is loaded by the command that uses it
// (`await import(...)`): the HTTP app alone (Elysia, the QR encoder) takes tens of milliseconds to load,
// which `linkbox version`, `key list` or a script's `account create` should not pay.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from './config'
import { AppError, ConfigError } from './errors'
import { VERSION } from './version'

const BLOCKLIST_TOPIC = 'blocklist'

const USAGE = `linkbox ${VERSION} — short links, QR codes, media download and temporary mail

Usage:
  linkbox serve                                   run the service
  linkbox account create NAME [--admin] [--password PASS|-]
                                                  create an account; prints its first API key last
  linkbox account list                            accounts: role, state, last sign-in, what they own
  linkbox account disable|enable NAME             its keys and sessions stop (or work again) at once
  linkbox account delete NAME [--with-links]      with its keys, mailboxes and webhooks; its links
                                                  stay, owned by nobody, unless --with-links
  linkbox account password NAME --password PASS|-
                                                  a new dashboard password; its sessions end
  linkbox key create ACCOUNT [--scopes a,b] [--label TEXT]
  linkbox key list [ACCOUNT]
  linkbox key revoke ID|PREFIX
  linkbox import FILE --account NAME [--format F]
                                                  links from a file into an account: linkbox's CSV
                                                  export, or shlink, kutt, yourls, bitly
  linkbox doctor                                  check config, data directory, ports and helper programs
  linkbox backup FILE                             one archive (tar) of the database, the secrets and
                                                  the mail store, consistent while the service runs
  linkbox restore FILE [--force]                  put a backup into data_dir (the service stopped);
                                                  --force moves what is there to before-restore-<time>/
  linkbox migrate --to URL                        copy this data_dir (the service stopped) into an
                                                  empty PostgreSQL database, and check the copy
  linkbox ytdlp update [--from URL|FILE]          install a newer yt-dlp into data_dir/bin; the service
                                                  switches to it at its next extraction, no restart.
                                                  Default: the official release, checked against its
                                                  SHA2-256SUMS. A URL ending in / is a release folder
                                                  (yt-dlp and SHA2-256SUMS in it); another URL names the
                                                  file, with SHA2-256SUMS beside it. A FILE is checked
                                                  against a SHA2-256SUMS beside it, if there is one.
                                                  Kept only when it runs --version.
  linkbox webhook create ACCOUNT URL [--events a,b]
                                                  a webhook endpoint; prints its secret last.
                                                  Events: link.created, link.updated, link.deleted,
                                                  link.clicked, mail.received (default: all but
                                                  link.clicked)
  linkbox webhook list [ACCOUNT]                  endpoints, their state and delivery counts
  linkbox webhook log ID                          the delivery log of an endpoint, newest first
  linkbox webhook delete ID
  linkbox webhook test ID                         queue a webhook.test event for that endpoint;
                                                  the running service delivers it
  linkbox audit [--since DATE] [--json]           the audit log, oldest first: who changed what
  linkbox version

Every command takes --config FILE (or the LINKBOX_CONFIG environment variable).
Scopes: links, qr, media, mail, webhooks (default: all).
linkbox COMMAND --help (or linkbox help COMMAND) tells more about one command.`

const CONFIG_OPTION = `  --config FILE, -c FILE  the config file (default: the LINKBOX_CONFIG environment variable, else the
                          built-in defaults)`

/** `linkbox COMMAND --help` and `linkbox help COMMAND`: that command's synopsis, options and what it does. */
const COMMAND_HELP: Record<string, string> = {
  serve: `Usage: linkbox serve [--config FILE]

Runs the service: HTTP on server.host:server.port, SMTP on mail.smtp_host:mail.smtp_port (0: no SMTP), the
webhook deliverer and the sweeps. SIGTERM finishes open requests and stops; SIGHUP re-reads the config file.

Options:
${CONFIG_OPTION}`,
  account: `Usage:
  linkbox account create NAME [--admin] [--password PASS|-]
                                                  an account and its first API key (all scopes), shown
                                                  once, alone on the last line of stdout
  linkbox account list                            every account: role, state, created, last sign-in,
                                                  links, active keys, mailboxes
  linkbox account disable NAME                    its API keys are refused and its sessions end at once
  linkbox account enable NAME                     its keys work again and it can sign in
  linkbox account delete NAME [--with-links]      deletes it with its keys, sessions, mailboxes and
                                                  webhooks; its links stay, owned by nobody
  linkbox account password NAME --password PASS|-
                                                  sets its dashboard password; its sessions end

NAME: 1-64 letters, digits, . _ @ -, starting with a letter or digit. The last active administrator is
neither disabled nor deleted. Each change is written to the audit log (actor "cli").

Options:
  --admin                 create: the account is an admin (dashboard: Admin)
  --password PASS         create, password: the dashboard password; - reads it from stdin (kept out of
                          the process list)
  --with-links            delete: its links go too (refused while the service runs: it keeps visited
                          links in memory; delete them from the dashboard, or stop it first)
${CONFIG_OPTION}`,
  audit: `Usage: linkbox audit [--since DATE] [--json]

Prints the audit log, oldest first: every change to accounts, keys, webhooks and settings, every sign-in
(failed ones too) and every admin action, with its time, actor, action, target and client address. Rows
are kept audit.keep_days days (default 365).

Options:
  --since DATE            from this day (YYYY-MM-DD, UTC) or time (ISO 8601, such as
                          2026-11-25T14:00:00Z) on; default: every row kept
  --json                  one JSON object per line instead of the table
${CONFIG_OPTION}`,
  key: `Usage:
  linkbox key create ACCOUNT [--scopes a,b] [--label TEXT]
                                                  a new API key for ACCOUNT, shown once on the last line
  linkbox key list [ACCOUNT]                      keys (prefix, scopes, times, label), never the keys
  linkbox key revoke ID|PREFIX                    the key stops working at once

Options:
  --scopes a,b            create: of links, qr, media, mail, webhooks (default: all)
  --label TEXT            create: a note shown by key list and the dashboard
${CONFIG_OPTION}`,
  import: `Usage: linkbox import FILE --account NAME [--format F]

Makes links for the account NAME from FILE (UTF-8, at most 10 MiB), as POST /api/import.json does: each
link passes the rules of a new link, a code is kept when it is free and valid here, and a row whose code is
taken or reserved is skipped, never overwritten; each link keeps the file's creation date and title.
Prints how many were made, then one line per skipped row (line, code, reason, message; tab-separated).
Exit 1 when the file is refused as a whole (too large, more than links.import_max_rows rows, not of the
format, another import of the account under way), 2 on a usage error; skipped rows do not change the exit
code. One links.imported webhook event is queued for the running service to deliver.

Options:
  --account NAME          the account that owns the new links
  --format F              csv (linkbox's own export; the default), shlink (the web client's CSV export),
                          kutt (the answer of GET /api/v2/links), yourls (the yourls_url table as CSV),
                          bitly (the links export)
${CONFIG_OPTION}`,
  doctor: `Usage: linkbox doctor [--config FILE]

Checks the config, the data directory and the database, free disk, the ports, yt-dlp and ffmpeg, the
clock, the mail domains' MX records and STARTTLS files; one line per check (ok, warn, FAIL or skip).
With database.url: the PostgreSQL connection (the password shown as ***), the server's version (14 or
newer) and the schema, changing nothing. Exit 1 when a check fails.

Options:
${CONFIG_OPTION}`,
  backup: `Usage: linkbox backup FILE

Writes one archive (tar, mode 0600) of the database, the secrets and the mail store, consistent while the
service runs. FILE must not exist yet. With database.url: the same archive, its database copied from one
snapshot of PostgreSQL into a SQLite file, so that it restores into either engine.

Options:
${CONFIG_OPTION}`,
  restore: `Usage: linkbox restore FILE [--force]

Puts a backup into data_dir, with the service stopped. The whole archive is checked before anything is
written. With database.url: into that database, which must be empty (as linkbox migrate --to copies), from
a backup of either engine.

Options:
  --force                 data_dir is not empty: move what is there to data_dir/before-restore-<time>/
${CONFIG_OPTION}`,
  migrate: `Usage: linkbox migrate --to URL [--config FILE]

Copies the data_dir of the config (SQLite) into an empty PostgreSQL database: every table with its ids, the
mail (its bytes go into the database) and the signing secret (signed links keep working), in one transaction,
then compares the rows of every table and the sha256 of every message's bytes on both sides. Prints one line
per table with its rows, and a last line with the totals and the time taken. Refused while a service runs on
the data_dir and when the database holds any linkbox row; a failure, or any difference, leaves the database
without a row (exit 1), and migrate can be run again. The data_dir stays as it was. Then set [database] url
to the same URL and start the service (or any number of nodes) on PostgreSQL.

Options:
  --to URL                postgres://user:password@host:port/database (?sslmode=… allowed); - reads it
                          from stdin (kept out of the process list); default: the config's database.url
${CONFIG_OPTION}`,
  ytdlp: `Usage: linkbox ytdlp update [--from URL|FILE]

Installs a newer yt-dlp into data_dir/bin; the service switches to it at its next extraction, no restart.
Kept only when it runs --version.

Options:
  --from URL|FILE         default: the official release, checked against its SHA2-256SUMS. A URL ending
                          in / is a release folder (yt-dlp and SHA2-256SUMS in it); another URL names the
                          file, with SHA2-256SUMS beside it. A FILE is checked against a SHA2-256SUMS
                          beside it, if there is one.
${CONFIG_OPTION}`,
  webhook: `Usage:
  linkbox webhook create ACCOUNT URL [--events a,b]
                                                  a webhook endpoint; prints its secret last (shown once)
  linkbox webhook list [ACCOUNT]                  endpoints, their state and delivery counts
  linkbox webhook log ID                          the delivery log of an endpoint, newest first
  linkbox webhook delete ID
  linkbox webhook test ID                         queue a webhook.test event for that endpoint;
                                                  the running service delivers it

Options:
  --events a,b            create: of link.created, link.updated, link.deleted, link.clicked,
                          link.reported, links.imported, mail.received (default: all but link.clicked)
${CONFIG_OPTION}`,
  version: `Usage: linkbox version

Prints the version of linkbox.`,
}

/** What each option that takes a value needs, in words (a parse error names it instead of the parser's words). */
const OPTION_VALUES: Record<string, string> = {
  config: 'a config file',
  password: 'a password, or - to read it from stdin',
  scopes: 'a comma-separated list of scopes (links, qr, media, mail, webhooks)',
  label: 'a text',
  from: 'a URL or a file',
  events: 'a comma-separated list of event types',
  account: 'an account name',
  format: 'a format (csv, shlink, kutt, yourls, bitly)',
  since: 'a date (YYYY-MM-DD) or a time (ISO 8601)',
  to: 'a postgres:// URL, or - to read it from stdin',
}

/**
 * node:util's parse errors in plain words: "--from needs a URL or a file", not "Option '--from <value>'
 * argument missing". Anything else keeps the parser's message.
 */
function argumentError(err: Error & { code?: string }, argv: string[]): ConfigError {
  const command = argv.find((a) => Object.hasOwn(COMMAND_HELP, a))
  const help = command ? `linkbox ${command} --help` : 'linkbox --help'
  const named = /'(?:-[a-z], )?(--?[a-z-]+)/i.exec(err.message)?.[1]
  const option = named?.replace(/^--/, '')
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && named) return new ConfigError(`unknown option ${named}; ${help} lists the options`)
  if (err.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option) {
    if (/does not take an argument/.test(err.message)) return new ConfigError(`--${option} takes no value; ${help} lists the options`)
    const needs = Object.hasOwn(OPTION_VALUES, option) ? OPTION_VALUES[option] : undefined
    if (needs) {
      // "Ambiguous": the next word starts with a dash (another option, most likely).
      const dash = /ambiguous/.test(err.message) ? ` (one that starts with - is written --${option}=-…)` : ''
      return new ConfigError(`--${option} needs ${needs}${dash}; ${help} lists the options`)
    }
  }
  return new ConfigError(err.message)
}

async function readStdin(): Promise<string> {
  return (await Bun.stdin.text()).replace(/\r?\n$/, '')
}

/** The account service and the audit rows for a CLI command, on the database of the config; close() when done. */
async function openAccounts(config: Config) {
  if (config.database.url) {
    const [{ openPostgres }, { postgresAccountStorage }, { postgresAuditRows }, { createAccountService }] = await Promise.all([
      import('./db/postgres'),
      import('./accounts/storage-postgres'),
      import('./audit/storage-postgres'),
      import('./accounts/service'),
    ])
    // On stderr: stdout is the command's answer (a key, a list) that scripts read.
    const pg = await openPostgres(config.database.url, { max: 2, onUpgrade: (note) => console.error(`linkbox: ${note}`) })
    const audit = postgresAuditRows(pg.sql)
    return { db: null, audit, accounts: createAccountService({ accounts: postgresAccountStorage(pg.sql), audit }), close: () => pg.close() }
  }
  // Only the stores the account commands use: db/storages.ts would load every feature's (the click
  // classifier's user-agent parser among them) into a command that lists keys.
  const [{ openDatabase }, { sqliteAccountStorage }, { sqliteAuditRows }, { createAccountService }] = await Promise.all([
    import('./db'),
    import('./accounts/storage'),
    import('./audit/storage'),
    import('./accounts/service'),
  ])
  mkdirSync(config.data_dir, { recursive: true, mode: 0o700 })
  const db = openDatabase(join(config.data_dir, 'linkbox.db'), { onUpgrade: (note) => console.error(`linkbox: ${note}`) })
  const audit = sqliteAuditRows(db)
  return { db, audit, accounts: createAccountService({ accounts: sqliteAccountStorage(db), audit }), close: async () => db.close() }
}

/** The webhook service for a CLI command, on the database of the config; close() when done. */
async function openWebhooks(config: Config) {
  const [{ createOutbox, createQueueOutbox }, { createWebhookService }] = await Promise.all([import('./webhooks/outbox'), import('./webhooks/service')])
  if (config.database.url) {
    const [{ openPostgres }, { postgresStorages }, { postgresChangeFeed }] = await Promise.all([
      import('./db/postgres'),
      import('./db/postgres/storages'),
      import('./db/postgres/changes'),
    ])
    const pg = await openPostgres(config.database.url, { max: 2, onUpgrade: (note) => console.error(`linkbox: ${note}`) })
    // The feed tells the running nodes at once: an endpoint made or deleted, an event to deliver.
    const changes = await postgresChangeFeed(pg.sql)
    const { endpoints, queue, audit } = postgresStorages(pg.sql)
    const outbox = createQueueOutbox({ queue, changes })
    return {
      webhooks: createWebhookService({ config, outbox, endpoints, queue, audit }),
      async close() {
        outbox.close()
        await changes.close()
        await pg.close()
      },
    }
  }
  const [{ openDatabase }, { sqliteEndpointRows }, { sqliteWebhookQueue }, { sqliteAuditRows }] = await Promise.all([
    import('./db'),
    import('./webhooks/endpoints'),
    import('./webhooks/queue'),
    import('./audit/storage'),
  ])
  mkdirSync(config.data_dir, { recursive: true, mode: 0o700 })
  const db = openDatabase(join(config.data_dir, 'linkbox.db'), { onUpgrade: (note) => console.error(`linkbox: ${note}`) })
  return {
    webhooks: createWebhookService({ db, config, outbox: createOutbox(db), endpoints: sqliteEndpointRows(db), queue: sqliteWebhookQueue(db), audit: sqliteAuditRows(db) }),
    close: async () => db.close(),
  }
}

/**
 * Extracts the yt-dlp bundled into the binary into data_dir/bin when it is missing or another build's. A failure
 * (a full disk) costs media download only, so it is a warning; the service then uses one on PATH.
 */
async function prepareYtdlp(config: Config, warn: (line: string) => void = console.error) {
  const { createYtdlp } = await import('./media/ytdlp')
  try {
    await createYtdlp({ ytdlpPath: config.media.ytdlp_path, dataDir: config.data_dir }).prepare()
  } catch (err) {
    warn(`linkbox: warning: the bundled yt-dlp could not be put into ${join(config.data_dir, 'bin')}: ${(err as Error).message}`)
  }
}

async function serve(config: Config, configPath: string | undefined) {
  const [{ openLinkbox }, { probeWrite, storageReason }, { ClicksNotWritten }, { log }, { loadConfig }] = await Promise.all([
    import('./app'),
    import('./db'),
    import('./clicks/recorder'),
    import('./log'),
    import('./config'),
  ])
  // The service's lines go through the log ([log] in the config: level, format, request lines).
  log.configure(config.log)
  // Start-up safety: refuse a data_dir anyone can write to (see backup.ts), before anything is read from it.
  const { Refusal, checkDataDirMode, holdLock } = await import('./backup')
  const unsafe = checkDataDirMode(config.data_dir)
  if (unsafe) throw new Refusal(unsafe)
  await prepareYtdlp(config, (line) => log.warn(line))
  // On PostgreSQL: connected, the schema brought up to date (once, whichever node is first) and listening
  // to the other nodes' changes before anything is answered.
  const box = await openLinkbox(config)
  const { auditRow, CLI } = await import('./audit/service')
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
      console.error(err instanceof ClicksNotWritten ? `linkbox: ${err.message}` : `linkbox: shutdown failed: ${storageReason(err)}`)
      process.exit(1)
    }
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
  // Announced once the handlers are in: a script that sends SIGTERM on seeing this line gets a clean stop.
  // An IPv6 address goes in brackets, so that the line carries a URL scripts can use as is.
  const host = server.hostname?.includes(':') ? `[${server.hostname}]` : server.hostname
  log.info(`linkbox ${VERSION} listening on http://${host}:${server.port} (base_url ${config.server.base_url}, data ${config.data_dir})`)
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
      if (!closing && config.links.blocklist_files.length && nodes.some((n) => n !== nodeId)) void reloadLists('another node reloaded its blocklists')
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
      next = loadConfig(configPath)
    } catch (err) {
      log.error(`SIGHUP: ${err instanceof ConfigError ? err.message : String(err)}; the running config is kept`)
      return
    }
    const { applied, restart } = box.reload(next)
    const what = applied.length ? `applied ${applied.join(', ')}` : 'nothing to apply'
    log.info(`SIGHUP: config ${configPath} re-read: ${what}${restart.length ? `; changed but needs a restart: ${restart.join(', ')}` : ''}`, { applied, restart })
    // A change of settings is in the audit log, by whoever can signal the service on the machine ("cli").
    if (applied.length > 0)
      box.storages.audit
        .insertAlone(auditRow(CLI, { action: 'settings.reload', target: `config ${configPath}`, detail: `applied ${applied.join(', ')}` }, Date.now()))
        .catch((err: unknown) => log.error(`SIGHUP: the audit row of the reload could not be written: ${storageReason(err)}`))
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
  if (unwritable) log.warn(`linkbox: warning: the database cannot be written (${unwritable}); new links fail with 503 and clicks wait in memory until it can`)
}

/** One line on what the blocklists hold and catch; a file that could not be read is a warning of its own. */
function logBlocklist(
  log: { info(line: string, fields?: Record<string, unknown>): void; warn(line: string): void },
  when: string,
  r: { hosts: number; files: { path: string; hosts: number; error?: string; skipped: number; skippedLines: { line: number; text: string }[] }[]; ms: number; caught: number },
) {
  for (const f of r.files) if (f.error) log.warn(`${when}: blocklist ${f.path} could not be read (${f.error}); the other lists still hold`)
  // Lines that name no host (a typo, a format not understood): counted, and the first few named (JSON-quoted).
  const skipped = r.files.reduce((n, f) => n + f.skipped, 0)
  const named = r.files.flatMap((f) => f.skippedLines.map((l) => `${f.path}:${l.line} ${JSON.stringify(l.text)}`))
  log.info(
    `${when}: blocklists: ${r.hosts} hosts from ${r.files.filter((f) => !f.error).length} of ${r.files.length} files in ${Math.round(r.ms)} ms; ${r.caught} existing links are on them and answer 451` +
      (skipped ? `; ${skipped} line${skipped === 1 ? '' : 's'} skipped, not hosts: ${named.join(', ')}${skipped > named.length ? ', …' : ''}` : ''),
    { hosts: r.hosts, caught: r.caught, skipped },
  )
}

/** `linkbox account …`: the account service, as the actor "cli". */
async function accountCommand(config: Config, sub: string | undefined, arg: string | undefined, arg2: string | undefined, values: { admin?: boolean; password?: string; 'with-links'?: boolean }) {
  const usage =
    'usage: linkbox account create NAME [--admin] [--password PASS|-] | account list | account disable|enable NAME | account delete NAME [--with-links] | account password NAME --password PASS|-'
  if (arg2 !== undefined || !(sub === 'list' ? arg === undefined : arg)) throw new ConfigError(usage)
  if (values.admin && sub !== 'create') throw new ConfigError(`--admin is for account create; ${usage}`)
  if (values['with-links'] && sub !== 'delete') throw new ConfigError(`--with-links is for account delete; ${usage}`)
  if (values.password !== undefined && sub !== 'create' && sub !== 'password') throw new ConfigError(`--password is for account create and account password; ${usage}`)
  if (sub === 'password' && values.password === undefined) throw new ConfigError('usage: linkbox account password NAME --password PASS|- (- reads it from stdin)')
  if (sub === 'delete' && values['with-links']) {
    // The service keeps visited links in memory and would go on redirecting the deleted ones.
    const { runningService } = await import('./backup')
    const running = await runningService(config)
    if (running) throw new ConfigError(`account delete --with-links: ${running}, which keeps visited links in memory; delete the account from the dashboard (Admin), or stop the service first`)
  }
  const password = values.password === '-' ? await readStdin() : values.password
  const [{ printable }, { CLI }] = await Promise.all([import('./accounts/service'), import('./audit/service')])
  const { accounts, close } = await openAccounts(config)
  try {
    switch (sub) {
      case 'create': {
        const { account, key } = await accounts.createAccount({ name: arg!, admin: !!values.admin, password }, CLI)
        console.log(`account ${account.name} created${account.admin ? ' (admin)' : ''}; its API key (shown once):`)
        console.log(key.key)
        return 0
      }
      case 'list': {
        const fmt = (ms: number | null) => (ms ? new Date(ms).toISOString().slice(0, 19) + 'Z' : '-')
        console.log(['id', 'name', 'role', 'state', 'created', 'last sign-in', 'links', 'keys', 'mailboxes'].join('\t'))
        for (let page = 1, pages = 1; page <= pages; page++) {
          const list = await accounts.listAccounts({ page })
          pages = list.pages
          for (const a of list.accounts)
            console.log([a.id, printable(a.name), a.admin ? 'admin' : 'user', a.disabled === null ? 'active' : `disabled ${fmt(a.disabled)}`, fmt(a.created), fmt(a.lastSignin), a.links, a.keys, a.mailboxes].join('\t'))
        }
        return 0
      }
      case 'disable':
      case 'enable': {
        const done = await accounts.setDisabled(arg!, sub === 'disable', CLI)
        console.log(sub === 'disable' ? `account ${done.name} disabled: its API keys are refused and its sessions ended` : `account ${done.name} enabled`)
        return 0
      }
      case 'delete': {
        const done = await accounts.deleteAccount(arg!, { withLinks: !!values['with-links'] }, CLI)
        const links = `${done.links} link${done.links === 1 ? '' : 's'}`
        console.log(`account ${done.name} deleted with its keys, mailboxes and webhooks; ${values['with-links'] ? `its ${links} deleted too` : `its ${links} kept, owned by nobody`}`)
        return 0
      }
      case 'password': {
        const done = await accounts.setPassword(arg!, password ?? '', CLI)
        console.log(`account ${done.name} has a new dashboard password; ${done.sessionsEnded} session${done.sessionsEnded === 1 ? '' : 's'} ended`)
        return 0
      }
      default:
        throw new ConfigError(usage)
    }
  } finally {
    await close()
  }
}

/** A --since value: a day (YYYY-MM-DD, its start in UTC) or an ISO 8601 time, as unix ms. */
function sinceOf(text: string): number {
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) {
    const ms = Date.parse(`${text}T00:00:00Z`)
    if (!Number.isNaN(ms) && new Date(ms).toISOString().startsWith(text)) return ms
  } else if (/^\d{4}-\d{2}-\d{2}T/.test(text) && !Number.isNaN(Date.parse(text))) return Date.parse(text)
  throw new ConfigError(`--since needs ${OPTION_VALUES.since} (got ${JSON.stringify(text.slice(0, 40))}); linkbox audit --help lists the options`)
}

/** `linkbox audit`: the log from --since on, oldest first, read in pages; a table, or JSON lines. */
async function auditCommand(config: Config, sub: string | undefined, since: string | undefined, json: boolean) {
  if (sub !== undefined) throw new ConfigError('usage: linkbox audit [--since DATE] [--json]')
  const from = since === undefined ? 0 : sinceOf(since)
  const [{ printable }, { actorText, auditJson, AUDIT_PAGE_MAX }] = await Promise.all([import('./accounts/service'), import('./audit/service')])
  const { audit, close } = await openAccounts(config)
  try {
    if (!json) console.log(['time', 'actor', 'action', 'target', 'address', 'detail'].join('\t'))
    for (let after = 0; ; ) {
      const rows = await audit.since(from, after, AUDIT_PAGE_MAX)
      for (const r of rows) {
        if (json) console.log(JSON.stringify(auditJson(r)))
        else console.log([new Date(r.at).toISOString(), printable(actorText(r)), r.action, printable(r.target), printable(r.address), printable(r.detail)].join('\t'))
      }
      if (rows.length === 0) break
      after = rows[rows.length - 1]!.id
    }
  } finally {
    await close()
  }
  return 0
}

/** `linkbox webhook …`: the same service as POST /api/webhooks.json, for any account. */
async function webhookCommand(config: Config, sub: string | undefined, arg: string | undefined, arg2: string | undefined, events: string | undefined) {
  const usage = 'usage: linkbox webhook create ACCOUNT URL [--events a,b] | webhook list [ACCOUNT] | webhook log ID | webhook delete ID | webhook test ID'
  const idOf = (text: string | undefined) => {
    if (!text || !/^[1-9][0-9]{0,14}$/.test(text)) throw new ConfigError(usage)
    return Number(text)
  }
  const [{ printable }, { CLI }] = await Promise.all([import('./accounts/service'), import('./audit/service')])
  const { webhooks, close } = await openWebhooks(config)
  try {
    if (sub === 'create' && arg && arg2) {
      const made = await webhooks.createFor(await webhooks.accountId(arg), { url: arg2, events }, {}, CLI)
      console.log(`webhook ${made.id} for ${arg}: ${made.url} (${made.events}); its signing secret (shown once):`)
      console.log(made.secret)
    } else if (sub === 'list' && !arg2) {
      const rows = arg ? (await webhooks.listFor(await webhooks.accountId(arg))).webhooks.map((w) => ({ ...w, account: arg })) : await Promise.all((await webhooks.listAll()).map(async (r) => ({
        id: r.id, url: r.url, events: r.events, enabled: r.enabled === 1, failing: r.failing === 1, disabled_reason: r.disabled_reason,
        account: r.account_name, deliveries: (await webhooks.listFor(r.account_id)).webhooks.find((w) => w.id === r.id)?.deliveries,
      })))
      console.log(['id', 'account', 'state', 'ok', 'failed', 'pending', 'events', 'url'].join('\t'))
      for (const w of rows) {
        const state = !w.enabled ? `disabled (${printable(w.disabled_reason ?? '')})` : w.failing ? 'failing' : 'enabled'
        const d = w.deliveries ?? { ok: 0, failed: 0, pending: 0 }
        console.log([w.id, printable(w.account), state, d.ok, d.failed, d.pending, w.events, printable(w.url)].join('\t'))
      }
    } else if (sub === 'log' && arg && !arg2) {
      // Read first: an unknown endpoint is its error alone on stderr, with no table header before it.
      const deliveries = (await webhooks.deliveriesById(idOf(arg), 200)).deliveries
      console.log(['webhook-id', 'type', 'state', 'attempts', 'status', 'ms', 'last attempt', 'next', 'error'].join('\t'))
      for (const d of deliveries)
        console.log([d.webhook_id, d.type, d.state, d.attempts, d.last_status ?? '-', d.last_ms ?? '-', d.last_at ?? '-', d.state === 'pending' ? d.next_at : '-', printable(d.last_error ?? '')].join('\t'))
    } else if (sub === 'delete' && arg && !arg2) {
      await webhooks.deleteById(idOf(arg), CLI)
      console.log(`webhook ${arg} deleted`)
    } else if (sub === 'test' && arg && !arg2) {
      const t = await webhooks.test(idOf(arg))
      console.log(`webhook.test queued for webhook ${arg}; the running service delivers it (linkbox webhook log ${arg} shows the outcome)${t.enabled ? '' : '; note: this endpoint is disabled'}`)
      console.log(t.webhook_id)
    } else throw new ConfigError(usage)
  } finally {
    await close()
  }
  return 0
}

/** `linkbox import FILE --account NAME`: the same import as POST /api/import.json, into that account. */
async function importCommand(config: Config, file: string, accountName: string, format: string) {
  const { statSync, readFileSync } = await import('node:fs')
  const [{ IMPORT_FORMATS, MAX_IMPORT_BYTES, importLinks }, { printable, SCOPES }, { openLinkbox }] = await Promise.all([
    import('./links/import'),
    import('./accounts/service'),
    import('./app'),
  ])
  if (!(IMPORT_FORMATS as readonly string[]).includes(format)) throw new ConfigError(`--format must be one of: ${IMPORT_FORMATS.join(', ')}`)
  let size: number
  try {
    size = statSync(file).size
  } catch (err) {
    console.error(`linkbox: import refused: ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`)
    return 1
  }
  if (size > MAX_IMPORT_BYTES) {
    console.error(`linkbox: import refused: ${file} is ${size} bytes, over the limit of ${MAX_IMPORT_BYTES} (10 MiB) for "file"`)
    return 1
  }
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(readFileSync(file))
  } catch {
    console.error(`linkbox: import refused: ${file} is not UTF-8 text`)
    return 1
  }
  const box = await openLinkbox(config)
  try {
    const account = await box.accounts.accountByName(accountName)
    if (!account) throw new ConfigError(`no account "${accountName}" (linkbox account create makes one)`)
    if (account.disabled !== null) throw new ConfigError(`the account "${accountName}" is disabled`)
    // The same checks as a link made through the API, blocklists included.
    if (config.links.blocklist_files.length) await box.abuse.reloadBlocklist()
    const caller = { accountId: account.id, accountName, admin: account.admin === 1, scopes: new Set(SCOPES), keyId: null, via: 'dashboard' as const }
    let result
    try {
      result = await importLinks(box.links, caller, text, format as (typeof IMPORT_FORMATS)[number], { maxRows: config.links.import_max_rows })
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err
      console.error(`linkbox: import refused: ${err.message}`)
      return 1
    }
    console.log(`created ${result.created} links for ${accountName}; skipped ${result.skipped_total}`)
    for (const s of result.skipped) console.log([s.line, printable(s.code), s.reason, printable(s.message)].join('\t'))
    if (result.skipped_total > result.skipped.length) console.log(`… and ${result.skipped_total - result.skipped.length} more skipped`)
    return 0
  } finally {
    await box.close()
  }
}

/** `linkbox migrate --to URL`: the data_dir's SQLite database, mail and signing secret into PostgreSQL (db/postgres/copy.ts). */
async function migrateCommand(config: Config, sub: string | undefined, to: string | undefined) {
  if (sub !== undefined) throw new ConfigError('usage: linkbox migrate --to URL')
  const url = to === '-' ? (await readStdin()).trim() : (to ?? config.database.url)
  if (!url) throw new ConfigError('usage: linkbox migrate --to URL (or set [database] url in the config)')
  const [{ databaseUrlProblem }, { copyToPostgres }] = await Promise.all([import('./config'), import('./db/postgres/copy')])
  const problem = databaseUrlProblem(url)
  if (problem) throw new ConfigError(`--to ${problem} (the value is not shown: it may hold a password)`)
  await copyToPostgres(config, url, (line) => console.log(line))
  return 0
}

export async function main(argv: string[]): Promise<number> {
  // Before anything else loads: node:util and node:net (config checks addresses) alone cost ~10 ms.
  if (argv.length === 1 && argv[0] === 'version') {
    console.log(VERSION)
    return 0
  }
  const [{ parseArgs }, { loadConfig }] = await Promise.all([import('node:util'), import('./config')])
  const options = {
    config: { type: 'string', short: 'c' },
    admin: { type: 'boolean' },
    password: { type: 'string' },
    scopes: { type: 'string' },
    label: { type: 'string' },
    from: { type: 'string' },
    events: { type: 'string' },
    account: { type: 'string' },
    format: { type: 'string' },
    force: { type: 'boolean' },
    'with-links': { type: 'boolean' },
    since: { type: 'string' },
    json: { type: 'boolean' },
    to: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  } as const
  const parse = () => parseArgs({ args: argv, allowPositionals: true, strict: true, options })
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse()
  } catch (err) {
    if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) throw argumentError(err as Error, argv)
    throw err
  }
  const { values, positionals } = parsed
  const [command, sub, arg, arg2] = positionals
  // `linkbox help key` and `linkbox key --help` (any subcommand: `linkbox key create -h`) say the same.
  const helpFor = command === 'help' ? sub : values.help ? command : undefined
  if (helpFor !== undefined) {
    if (!Object.hasOwn(COMMAND_HELP, helpFor)) throw new ConfigError(`unknown command "${helpFor}"\n\n${USAGE}`)
    console.log(COMMAND_HELP[helpFor])
    return 0
  }
  if (values.help || !command || command === 'help') {
    console.log(USAGE)
    return command || values.help ? 0 : 2
  }
  if (command === 'version') {
    console.log(VERSION)
    return 0
  }
  const configPath = values.config ?? process.env.LINKBOX_CONFIG
  // doctor reports a config that does not load as a failing check, like any other, instead of stopping.
  if (command === 'doctor') {
    const { configFailure, formatFindings, runDoctor } = await import('./doctor')
    let config: Config
    try {
      config = loadConfig(configPath)
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err
      console.log(formatFindings(await configFailure(configPath ?? '', err.message)))
      return 1
    }
    const findings = await runDoctor(config, configPath ?? 'no file: the defaults')
    console.log(formatFindings(findings))
    return findings.some((f) => f.verdict === 'FAIL') ? 1 : 0
  }
  const config = loadConfig(configPath)
  // migrate reads the SQLite file in data_dir whatever database.url says: it is how data gets to PostgreSQL.
  if (command === 'migrate') return migrateCommand(config, sub, values.to)

  switch (command) {
    case 'serve':
      await serve(config, configPath)
      return -1 // keeps running
    case 'account':
      return accountCommand(config, sub, arg, arg2, values)
    case 'audit':
      return auditCommand(config, sub, values.since, !!values.json)
    case 'key': {
      const [{ parseScopes, printable }, { CLI }] = await Promise.all([import('./accounts/service'), import('./audit/service')])
      const { accounts, close } = await openAccounts(config)
      try {
        if (sub === 'create' && arg) {
          const key = await accounts.createKey({ account: arg, scopes: parseScopes(values.scopes), label: values.label }, CLI)
          console.log(`key ${key.id} for ${arg} with scopes ${key.scopes.join(',')} (shown once):`)
          console.log(key.key)
        } else if (sub === 'list') {
          const rows = await accounts.listKeys({ account: arg })
          const fmt = (ms: number | null) => (ms ? new Date(ms).toISOString().slice(0, 19) + 'Z' : '-')
          console.log(['id', 'prefix', 'account', 'scopes', 'created', 'last used', 'revoked', 'label'].join('\t'))
          for (const r of rows)
            // Labels stored before they were checked may hold tabs or newlines: escaped, they cannot forge lines.
            console.log([r.id, r.prefix, printable(r.account), r.scopes.join(','), fmt(r.created), fmt(r.last_used), fmt(r.revoked), printable(r.label)].join('\t'))
        } else if (sub === 'revoke' && arg) {
          await accounts.revokeKey(arg, CLI)
          console.log(`key ${arg} revoked`)
        } else throw new ConfigError('usage: linkbox key create ACCOUNT | key list [ACCOUNT] | key revoke ID|PREFIX')
      } finally {
        await close()
      }
      return 0
    }
    case 'webhook':
      return webhookCommand(config, sub, arg, arg2, values.events)
    case 'import':
      if (!sub || arg || !values.account) throw new ConfigError('usage: linkbox import FILE --account NAME [--format F]')
      return importCommand(config, sub, values.account, values.format ?? 'csv')
    case 'backup': {
      if (!sub || arg) throw new ConfigError('usage: linkbox backup FILE')
      if (config.database.url) {
        const { writePostgresBackup } = await import('./backup-postgres')
        const manifest = await writePostgresBackup(config, sub)
        console.log(`backup written to ${sub}: linkbox.db (schema ${manifest.schema}, copied from PostgreSQL) and ${manifest.files.length - 1} files`)
        return 0
      }
      const { writeBackup } = await import('./backup')
      const manifest = writeBackup(config, sub)
      console.log(`backup written to ${sub}: linkbox.db (schema ${manifest.schema}) and ${manifest.files.length - 1} files`)
      return 0
    }
    case 'restore': {
      if (!sub || arg) throw new ConfigError('usage: linkbox restore FILE [--force]')
      if (config.database.url) {
        if (values.force) throw new ConfigError('--force moves a data_dir aside; restore into PostgreSQL (database.url) needs an empty database instead')
        const [{ restoreToPostgres }, { redactDatabaseUrl }] = await Promise.all([import('./backup-postgres'), import('./config')])
        const manifest = await restoreToPostgres(config, sub, (line) => console.log(line))
        console.log(`restored ${sub} (made by linkbox ${manifest.version} on ${manifest.created}, schema ${manifest.schema}) into ${redactDatabaseUrl(config.database.url)}`)
        return 0
      }
      const { restoreBackup } = await import('./backup')
      const manifest = await restoreBackup(config, sub, { force: !!values.force })
      console.log(`restored ${sub} (made by linkbox ${manifest.version} on ${manifest.created}, schema ${manifest.schema}) into ${config.data_dir}`)
      return 0
    }
    case 'ytdlp': {
      if (sub !== 'update' || arg) throw new ConfigError('usage: linkbox ytdlp update [--from URL|FILE]')
      const { YtdlpUpdateError, createYtdlp, updateYtdlp } = await import('./media/ytdlp')
      mkdirSync(config.data_dir, { recursive: true, mode: 0o700 })
      await prepareYtdlp(config)
      let installed: { version: string; path: string }
      try {
        installed = await updateYtdlp({ dataDir: config.data_dir, from: values.from, log: (line) => console.log(line) })
      } catch (err) {
        if (!(err instanceof YtdlpUpdateError)) throw err
        console.error(`linkbox: ytdlp update refused: ${err.message}; the yt-dlp in use is unchanged`)
        return 1
      }
      console.log(`yt-dlp ${installed.version} installed at ${installed.path}`)
      // Say what the service will actually run: a newer bundled one, or media.ytdlp_path, still wins.
      const used = await createYtdlp({ ytdlpPath: config.media.ytdlp_path, dataDir: config.data_dir }).current()
      if (used && used.source !== 'updated')
        console.log(`note: the service uses the ${used.source} one instead (${used.path}, ${used.version ?? 'version unknown'})`)
      return 0
    }
    default:
      throw new ConfigError(`unknown command "${command}"\n\n${USAGE}`)
  }
}

if (import.meta.main) {
  main(process.argv.slice(2)).then(
    (code) => {
      if (code >= 0) process.exit(code)
    },
    async (err) => {
      const { DatabaseError } = await import('./db')
      if (err instanceof ConfigError || err instanceof AppError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
        console.error(`linkbox: ${(err as Error).message}`)
        process.exit(2)
      }
      // The database is unusable (not a database, cannot be opened) or a backup cannot be written: the
      // message names the file; a stack trace would not help the operator.
      if (err instanceof DatabaseError || (err as Error)?.name === 'Refusal') {
        console.error(`linkbox: ${err.message}`)
        process.exit(1)
      }
      console.error(err)
      process.exit(1)
    },
  )
}
