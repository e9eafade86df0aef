// The audit log as a feature of the composition root: its page in the dashboard's Admin section and the
// hourly sweep of rows older than audit.keep_days. The rows themselves are written by the services that
// make the changes, each in its change's transaction (service.ts).
import type { Shell } from '../dashboard/shell'
import type { Feature, Shared } from '../web/feature'
import { createAuditPage } from './page'
import { createAuditReader } from './service'

export function createAuditFeature(shared: Shared, deps: { shell: Shell }) {
  const { clock, config } = shared
  const audit = createAuditReader(shared.storages.audit, clock)
  const feature: Feature = {
    routes: createAuditPage({ shell: deps.shell, audit, keepDays: () => config.audit.keep_days }),
    // Read at each run: SIGHUP may change keep_days.
    jobs: [{ name: 'audit sweep', everyMs: 3_600_000, run: () => audit.sweep(config.audit.keep_days) }],
  }
  return { feature, audit }
}
