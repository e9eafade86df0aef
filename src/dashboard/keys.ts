// The dashboard's API section (placeholder until it is built).
import { Elysia } from 'elysia'
import type { DashboardDeps } from './index'

export function createKeysSection({ shell }: DashboardDeps) {
  return new Elysia({ name: 'dashboard-keys' }).get('/dashboard/keys', ({ request }) => {
    const s = shell.require(request)
    if (s instanceof Response) return s
    return shell.render(request, s, { section: 'keys', title: 'API', content: '<h1>API</h1><p class="empty">Coming soon.</p>' })
  })
}
