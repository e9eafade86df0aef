// The dashboard's Webhooks section (placeholder until it is built).
import { Elysia } from 'elysia'
import type { DashboardDeps } from './index'

export function createWebhooksSection({ shell }: DashboardDeps) {
  return new Elysia({ name: 'dashboard-webhooks' }).get('/dashboard/webhooks', ({ request }) => {
    const s = shell.require(request)
    if (s instanceof Response) return s
    return shell.render(request, s, { section: 'webhooks', title: 'Webhooks', content: '<h1>Webhooks</h1><p class="empty">Coming soon.</p>' })
  })
}
