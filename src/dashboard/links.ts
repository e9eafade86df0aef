// The dashboard's Links section (placeholder until it is built).
import { Elysia } from 'elysia'
import type { DashboardDeps } from './index'

export function createLinksSection({ shell }: DashboardDeps) {
  return new Elysia({ name: 'dashboard-links' }).get('/dashboard', ({ request }) => {
    const s = shell.require(request)
    if (s instanceof Response) return s
    return shell.render(request, s, { section: 'links', title: 'Links', content: '<h1>Links</h1><p class="empty">Coming soon.</p>' })
  })
}
