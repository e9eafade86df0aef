// SIGHUP's config reload (app.ts reload()): which changed keys take effect at once and which need a restart.
import type { Config } from './config'
import type { Logger } from './log'

/** What reload() did: the keys it applied, and the changed ones that only a restart applies. */
export interface ReloadOutcome {
  applied: string[]
  restart: string[]
}

// Keys whose new value takes effect at once: read from `config` on every use (rate.*), held by reference
// (links.blocked_domains, in the URL rules of the link service), or the log's own settings.
const RELOADABLE = new Set([
  'rate.anon_per_minute',
  'rate.anon_per_day',
  'rate.key_per_minute',
  'links.blocked_domains',
  'links.anonymous',
  'links.blocklist_files',
  'links.fetch_metadata',
  'log.level',
  'log.requests',
  'log.format',
  'audit.keep_days',
  'webhooks.rotation_overlap',
])

/** "section.key" → its value as JSON, for every key of a config. */
function flatten(config: Config): Map<string, string> {
  const out = new Map<string, string>()
  for (const [key, value] of Object.entries(config)) {
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
      for (const [sub, v] of Object.entries(value)) out.set(`${key}.${sub}`, JSON.stringify(v))
    else out.set(key, JSON.stringify(value))
  }
  return out
}

/**
 * Applies a newly loaded config to the running one, in place: the keys in RELOADABLE take effect at once;
 * the other changed keys are listed as needing a restart and left as they were.
 */
export function reloadConfig(config: Config, next: Config, logger: Logger): ReloadOutcome {
  const before = flatten(config)
  const after = flatten(next)
  const applied: string[] = []
  const restart: string[] = []
  for (const [key, value] of after) if (before.get(key) !== value) (RELOADABLE.has(key) ? applied : restart).push(key)
  if (applied.length > 0) {
    config.rate.anon_per_minute = next.rate.anon_per_minute
    config.rate.anon_per_day = next.rate.anon_per_day
    config.rate.key_per_minute = next.rate.key_per_minute
    config.links.anonymous = next.links.anonymous
    // Read at each creation and by the title fetcher before each claim.
    config.links.fetch_metadata = next.links.fetch_metadata
    // Read again by abuse.reloadBlocklist(), which SIGHUP runs after this.
    config.links.blocklist_files = [...next.links.blocklist_files]
    // In place: the link service's URL rules hold this very array.
    config.links.blocked_domains.splice(0, config.links.blocked_domains.length, ...next.links.blocked_domains)
    config.log = { ...next.log }
    // Read by the audit log's hourly sweep.
    config.audit.keep_days = next.audit.keep_days
    // Read by each rotation of a webhook's secret.
    config.webhooks.rotation_overlap = next.webhooks.rotation_overlap
    logger.configure(next.log)
  }
  return { applied, restart }
}
