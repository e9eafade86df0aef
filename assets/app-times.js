// Times in the viewer's zone (issue 38). The server writes every time as <time datetime="ISO">2026-12-07 05:26
// UTC</time> (src/web/render.ts timeHtml), which reads well without the script. Here each is shown in this
// browser's zone: relative within a week ("3 minutes ago", "in 2 days"), else a local date and time with the zone
// named; the exact local time is its title (hover) and, outside tables (where it would add a tab stop a row), it
// takes focus and shows it then too.
;(function () {
  'use strict'
  if (!window.Intl || !Intl.DateTimeFormat) return
  var WEEK = 7 * 864e5
  var UNITS = [
    ['second', 1e3, 45e3],
    ['minute', 6e4, 45 * 6e4],
    ['hour', 36e5, 22 * 36e5],
    ['day', 864e5, Infinity],
  ]
  var relative = Intl.RelativeTimeFormat ? new Intl.RelativeTimeFormat('en', { numeric: 'auto' }) : null
  var parts = new Intl.DateTimeFormat('en-US', {
    year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
    hourCycle: 'h23', timeZoneName: 'short',
  })
  var exact = new Intl.DateTimeFormat('en-GB', {
    weekday: 'long', year: 'numeric', month: 'long', day: 'numeric',
    hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZoneName: 'long',
  })

  // "2026-12-07 00:26 EST": the server's order, in this browser's zone.
  function local(date) {
    var p = {}
    parts.formatToParts(date).forEach(function (x) { p[x.type] = x.value })
    return p.year + '-' + p.month + '-' + p.day + ' ' + p.hour + ':' + p.minute + ' ' + p.timeZoneName
  }
  function near(ms, now) {
    var diff = ms - now
    if (!relative || Math.abs(diff) >= WEEK) return null
    if (Math.abs(diff) < 45e3) return diff > 0 ? 'in a few seconds' : 'just now'
    for (var i = 1; i < UNITS.length; i++) {
      if (Math.abs(diff) < UNITS[i][2]) return relative.format(Math.round(diff / UNITS[i][1]), UNITS[i][0])
    }
    return null
  }
  function show(node, now) {
    var ms = Date.parse(node.getAttribute('datetime'))
    if (isNaN(ms)) return
    var date = new Date(ms)
    var text = near(ms, now) || local(date)
    var title = exact.format(date) + ' (' + date.toISOString().slice(0, 16).replace('T', ' ') + ' UTC)'
    if (node.textContent !== text) node.textContent = text
    node.setAttribute('title', title)
    node.setAttribute('data-exact', title)
    // Focusable outside tables: a list of many rows would get a tab stop per time (there the title serves).
    // (On the dashboard only: its stylesheet draws the tip on focus.)
    if (!node.closest('table') && document.body.classList.contains('dash')) node.setAttribute('tabindex', '0')
    node.classList.add('local-time')
  }
  function showAll(root) {
    var now = Date.now()
    var list = (root || document).querySelectorAll('time[datetime]')
    for (var i = 0; i < list.length; i++) show(list[i], now)
  }
  function start() {
    showAll(document)
    // Rows added later (the live inbox, the webhook log) get the same; relative times stay true as time passes.
    if (window.MutationObserver) {
      new MutationObserver(function (changes) {
        var now = Date.now()
        changes.forEach(function (c) {
          for (var i = 0; i < c.addedNodes.length; i++) {
            var n = c.addedNodes[i]
            if (n.nodeType !== 1) continue
            if (n.matches('time[datetime]') && !n.classList.contains('local-time')) show(n, now)
            var inner = n.querySelectorAll('time[datetime]:not(.local-time)')
            for (var j = 0; j < inner.length; j++) show(inner[j], now)
          }
        })
      }).observe(document.body, { childList: true, subtree: true })
    }
    setInterval(function () { if (!document.hidden) showAll(document) }, 30e3)
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start)
  else start()
})()
