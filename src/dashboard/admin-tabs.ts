// The Admin section's pages and the tabs between them (accounts, links, reports, audit log, media cookies, health).
export const ADMIN = '/dashboard/admin'
export const HEALTH = '/dashboard/admin/health'
export const REPORTS = '/dashboard/admin/reports'
export const LINKS = '/dashboard/admin/links'
export const AUDIT = '/dashboard/admin/audit'
export const COOKIES = '/dashboard/admin/cookies'

export function tabs(current: 'accounts' | 'links' | 'health' | 'reports' | 'audit' | 'cookies'): string {
  const tab = (id: string, href: string, label: string) =>
    `<li><a href="${href}"${id === current ? ' aria-current="page"' : ''}>${label}</a></li>`
  return `<nav aria-label="Admin"><ul class="admin-tabs">${tab('accounts', ADMIN, 'Accounts')}${tab('links', LINKS, 'Links')}${tab('reports', REPORTS, 'Reports and bans')}${tab('audit', AUDIT, 'Audit log')}${tab('cookies', COOKIES, 'Media cookies')}${tab('health', HEALTH, 'Health')}</ul></nav>`
}
