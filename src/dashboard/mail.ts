// The dashboard's Mailboxes section (placeholder until it is built).
import { Elysia } from 'elysia'
import type { DashboardDeps } from './index'

export function createMailSection({ shell }: DashboardDeps) {
  return new Elysia({ name: 'dashboard-mail' }).get('/dashboard/mail', ({ request }) => {
    const s = shell.require(request)
    if (s instanceof Response) return s
    return shell.render(request, s, { section: 'mail', title: 'Mailboxes', content: '<h1>Mailboxes</h1><p class="empty">Coming soon.</p>' })
  })
}
