// The dashboard's Admin section (placeholder until it is built).
import { Elysia } from 'elysia'
import type { DashboardDeps } from './index'

export function createAdminSection({ shell }: DashboardDeps) {
  return new Elysia({ name: 'dashboard-admin' }).get('/dashboard/admin', ({ request }) => {
    const s = shell.requireAdmin(request)
    if (s instanceof Response) return s
    return shell.render(request, s, { section: 'admin', title: 'Admin', content: '<h1>Admin</h1><p class="empty">Coming soon.</p>' })
  })
}
