// A link of the signed-in account as the Links pages find it: by its name in their paths (its code, or
// code@host on another short domain), or a 404 page that says so for anything else.
import { AppError } from '../kernel/errors'
import type { LinkRecord } from '../links'
import { escapeHtml as e } from '../web/render'
import type { DashboardDeps } from './deps'
import { parseRef, refOf } from './links-view'
import type { Session } from './sessions'

export function createOwnedLinks(shell: DashboardDeps['shell'], links: DashboardDeps['links']) {
  // A link's name in these pages' paths: its code, with "@host" on another short domain (links-view.ts).
  const home = links.domains.defaultHost
  const ref = (r: LinkRecord) => refOf(r, home)
  function notFoundPage(request: Request, s: Session, code: string) {
    return shell.render(request, s, {
      section: 'links',
      title: 'Link not found',
      status: 404,
      content: `<div class="links-page"><h1>Link not found</h1><div class="card"><p>Your account has no link with the code <code>${e(code.slice(0, 64))}</code>. It may have been deleted.</p><p><a href="/dashboard">Back to your links</a></p></div></div>`,
    })
  }

  /** The caller's link, or null (unknown, another account's, or not a code at all: all answered 404). */
  async function ownedLink(ref: string, s: Session): Promise<LinkRecord | null> {
    const named = parseRef(ref)
    if (!named) return null
    try {
      return await links.get(named, s.caller)
    } catch (err) {
      if (err instanceof AppError && (err.status === 404 || err.code === 'not_owner' || err.status === 400)) return null
      throw err
    }
  }

  return { home, ref, ownedLink, notFoundPage }
}
