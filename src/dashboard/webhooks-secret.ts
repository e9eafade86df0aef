// The Webhooks section's page that shows a signing secret once (a new endpoint's, or a rotation's with until when
// the old one stays valid), and the words for the overlap.
import { escapeHtml as h, isoTimeHtml } from '../web/render'
import type { Session } from './sessions'
import type { Shell } from './shell'
import { type Endpoint, eventList, type NewEndpoint } from './webhooks-view'

/** A number of seconds in words: "24 hours", "90 minutes", "30 seconds". */
export function overlapWords(seconds: number): string {
  const [n, unit] =
    seconds % 3600 === 0
      ? [seconds / 3600, 'hour']
      : seconds % 60 === 0
        ? [seconds / 60, 'minute']
        : [seconds, 'second']
  return `${n} ${unit}${n === 1 ? '' : 's'}`
}

/** After a rotation: until when the old secret still verifies (both sign meanwhile), and the one before it dropped. */
export const overlapNote = (made: NewEndpoint) =>
  `<p id="wh-overlap">${
    made.previousUntil
      ? `<strong>The old secret stays valid until ${isoTimeHtml(made.previousUntil)}.</strong> Until then every delivery, retries included, carries two signatures in <code>webhook-signature</code> (the new secret's, then the old one's), so your receiver verifies with either while you change it; after that, only the new one.`
      : 'Every delivery from now on, retries included, is signed with this secret only: the old one no longer verifies.'
  }${made.dropped ? ' The secret before the old one, still valid after an earlier rotation, no longer verifies: only the newest two are ever valid.' : ''}</p>`

/** The page a creation or a new secret redirects to: the secret, the one time it is shown. */
export function secretPage(
  shell: Shell,
  request: Request,
  s: Session,
  w: Endpoint,
  made: NewEndpoint,
  rotated: boolean,
) {
  const title = rotated ? 'New signing secret' : 'Endpoint added'
  const lost = rotated ? 'make another new one' : 'delete the endpoint and add it again'
  const content = `<p class="crumbs"><a href="/dashboard/webhooks">Webhooks</a> /${rotated ? ` <a href="/dashboard/webhooks/${w.id}">${h(w.url)}</a> /` : ''}</p>
<h1>${title}</h1>
<section class="card" aria-labelledby="secret-h">
<h2 id="secret-h">${rotated ? 'Its new signing secret' : 'Its signing secret'}</h2>
<p class="warn" id="secret-warning"><strong>Copy it now: it is shown only this once.</strong> Your receiver checks each delivery's <code>webhook-signature</code> with it. If you lose it, ${lost}.</p>
${rotated ? overlapNote(made) : ''}
<div class="secret"><input id="wh-secret" readonly value="${h(made.secret)}" aria-label="Signing secret" aria-describedby="secret-warning" spellcheck="false"><button type="button" class="copy" data-copy="wh-secret" hidden>Copy</button></div>
<dl class="wh-meta"><dt>URL</dt><dd>${h(w.url)}</dd><dt>Events</dt><dd>${eventList(w.events)}</dd></dl>
<div class="actions"><a class="button" href="/dashboard/webhooks/${w.id}">Open its delivery log</a><a class="button secondary" href="/dashboard/webhooks">Back to webhooks</a></div>
</section>`
  return shell.render(request, s, { section: 'webhooks', title, content })
}
