// What `linkbox --help`, `linkbox COMMAND --help` and the usage errors print (tests compare it byte for byte).
import { VERSION } from '../kernel/version'

export const USAGE = `linkbox ${VERSION} — short links, QR codes, media download and temporary mail

Usage:
  linkbox serve [--port N] [--host ADDR] [--smtp-port N] [--data DIR]
                                                  run the service (no config file needed)
  linkbox account create NAME [--admin] [--password PASS|-]
                                                  create an account; prints its first API key last
  linkbox account list                            accounts: role, state, last sign-in, what they own
  linkbox account disable|enable NAME             its keys and sessions stop (or work again) at once
  linkbox account delete NAME [--with-links]      with its keys, mailboxes and webhooks; its links
                                                  stay, owned by nobody, unless --with-links
  linkbox account password NAME [--password PASS|-]
                                                  a new dashboard password (asked for at a terminal);
                                                  its sessions end
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
  linkbox media cookies add SITE FILE|-           a cookies file (Netscape format) for a domain and
                                                  its subdomains, or an IP address; stored encrypted,
                                                  given to yt-dlp for that site's URLs only
  linkbox media cookies list [--json]             sites with cookies: count, earliest expiry, last use
  linkbox media cookies remove SITE
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

Every command takes --config FILE (or the LINKBOX_CONFIG environment variable) and --data DIR.
Scopes: links, qr, media, mail, webhooks (default: all).
linkbox COMMAND --help (or linkbox help COMMAND) tells more about one command.`

const CONFIG_OPTION = `  --config FILE, -c FILE  the config file (default: the LINKBOX_CONFIG environment variable, else the
                          built-in defaults)`

/** `linkbox COMMAND --help` and `linkbox help COMMAND`: that command's synopsis, options and what it does. */
export const COMMAND_HELP: Record<string, string> = {
  serve: `Usage: linkbox serve [--config FILE] [--port N] [--host ADDR] [--smtp-port N] [--data DIR]

Runs the service: HTTP on server.host:server.port, SMTP on mail.smtp_host:mail.smtp_port (0: no SMTP), the
webhook deliverer and the sweeps. SIGTERM finishes open requests and stops; SIGHUP re-reads the config file.
No config file is needed: linkbox serve --port 9000 --data ./data runs on the defaults otherwise.

Options:
${CONFIG_OPTION}
  --port N, -p N          server.port (default 8080); without server.base_url the short links'
                          address follows it: http://localhost:N
  --host ADDR             server.host, the address to listen on (default 0.0.0.0: every address)
  --smtp-port N           mail.smtp_port (default 2525; 0: no SMTP)
  --data DIR              data_dir, relative to the working directory (default ./data)`,
  account: `Usage:
  linkbox account create NAME [--admin] [--password PASS|-]
                                                  an account and its first API key (all scopes), shown
                                                  once, alone on the last line of stdout; at a terminal
                                                  without --password, its dashboard password is asked for
  linkbox account list                            every account: role, state, created, last sign-in,
                                                  links, active keys, mailboxes
  linkbox account disable NAME                    its API keys are refused and its sessions end at once
  linkbox account enable NAME                     its keys work again and it can sign in
  linkbox account delete NAME [--with-links]      deletes it with its keys, sessions, mailboxes and
                                                  webhooks; its links stay, owned by nobody
  linkbox account password NAME [--password PASS|-]
                                                  sets its dashboard password (asked for at a terminal);
                                                  its sessions end

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
                          bitly (the links export), auto (recognised from the header row)
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
  media: `Usage:
  linkbox media cookies add SITE FILE|-           stores the cookies of FILE (- reads stdin) for SITE
  linkbox media cookies list [--json]             every site with cookies: how many, the earliest expiry
                                                  (- for session cookies only), last use; never a value
  linkbox media cookies remove SITE               the site's cookies are no longer used

Some sites serve only signed-in users. SITE is a domain, which covers its subdomains (example.com covers
www.example.com), or an IP address (that address only). FILE is a cookies file in the Netscape format, as
yt-dlp and browser exporters write it (at most 1 MiB and 10,000 cookies); only cookies whose domain is SITE
or under it are kept, and expired ones are left out (add says how many). A SITE added again is replaced.
The cookies are stored encrypted with a key derived from the signing secret, never shown again, and given to
yt-dlp (through a file of the service's alone, removed after the run) and to the service's own requests only
for URLs of that site. The running service uses them from its next run, no restart.

Options:
  --json                  list: a JSON array instead of the table
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
export const OPTION_VALUES: Record<string, string> = {
  config: 'a config file',
  password: 'a password, or - to read it from stdin',
  scopes: 'a comma-separated list of scopes (links, qr, media, mail, webhooks)',
  label: 'a text',
  from: 'a URL or a file',
  events: 'a comma-separated list of event types',
  account: 'an account name',
  format: 'a format (csv, shlink, kutt, yourls, bitly, auto)',
  since: 'a date (YYYY-MM-DD) or a time (ISO 8601)',
  to: 'a postgres:// URL, or - to read it from stdin',
  port: 'a port number',
  host: 'an address or a name',
  data: 'a directory',
}
