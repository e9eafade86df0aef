// linkbox's one script: small improvements over pages that work without it. No framework, no
// third-party request; served from the binary at /assets/app.js under a CSP of script-src 'self'.
//
// Copy buttons: <button type="button" class="copy" data-copy="ID" hidden>Copy</button> copies the value
// (an input) or the text of the element #ID. They are hidden until this script shows them, since without
// it they could not work; the text stays selectable by hand.
;(function () {
  'use strict'
  function say(button, text) {
    var old = button.getAttribute('data-label') || button.textContent
    button.setAttribute('data-label', old)
    button.textContent = text
    setTimeout(function () { button.textContent = old }, 1500)
  }
  function copyFrom(button) {
    var target = document.getElementById(button.getAttribute('data-copy'))
    if (!target) return
    var text = 'value' in target && target.tagName !== 'BUTTON' ? target.value : target.textContent
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { say(button, 'Copied') }, function () { fallback(target, button) })
    } else fallback(target, button)
  }
  // Plain-http origins (http://nas:8080) have no clipboard API: select the text and use execCommand.
  function fallback(target, button) {
    try {
      // A value kept in a hidden input (a whole destination): copied through a textarea of its own.
      if (target.type === 'hidden') {
        var area = document.createElement('textarea')
        area.value = target.value
        area.setAttribute('readonly', '')
        area.className = 'visually-hidden'
        document.body.appendChild(area)
        area.select()
        var done = document.execCommand('copy')
        document.body.removeChild(area)
        say(button, done ? 'Copied' : 'Press Ctrl+C')
        return
      }
      if (target.select) target.select()
      else {
        var range = document.createRange()
        range.selectNodeContents(target)
        var sel = window.getSelection()
        sel.removeAllRanges()
        sel.addRange(range)
      }
      say(button, document.execCommand('copy') ? 'Copied' : 'Press Ctrl+C')
    } catch (e) {
      say(button, 'Press Ctrl+C')
    }
  }
  function init(root) {
    var buttons = root.querySelectorAll('button[data-copy]')
    for (var i = 0; i < buttons.length; i++) buttons[i].hidden = false
  }
  document.addEventListener('click', function (e) {
    var button = e.target && e.target.closest ? e.target.closest('button[data-copy]') : null
    if (button) copyFrom(button)
  })

  // The home page's shorten form (#shorten): sent where it posts without this script (/, form-encoded, with
  // its hidden fields: the session's CSRF token when signed in, so the link is the account's, and its
  // one-time token), asking for JSON, and answered in place. The result and the errors use the markup the
  // server renders for the same form without this script (src/pages/home.ts): built with DOM methods and
  // textContent only, so nothing from the answer is ever parsed as HTML.
  var LABELS = { url: 'The URL', alias: 'The alias', mode: 'The mode', expire: 'The expiry', password: 'The password' }
  var FIELDS = ['url', 'alias', 'mode', 'expire', 'password']
  function fieldOf(code, message) {
    if (code === 'invalid_url') return 'url'
    if (code === 'invalid_alias' || code === 'alias_taken' || code === 'alias_reserved') return 'alias'
    if (code === 'invalid_mode') return 'mode'
    if (code === 'invalid_expire') return 'expire'
    var m = /^The parameter "(\w+)"/.exec(message || '')
    return m && FIELDS.indexOf(m[1]) >= 0 ? m[1] : null
  }
  function human(message) {
    return String(message || '').replace(/^The parameter "(\w+)"/, function (whole, name) { return LABELS[name] || whole })
  }
  function el(tag, attrs, children) {
    var node = document.createElement(tag)
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) node.setAttribute(k, attrs[k])
    for (var i = 0; children && i < children.length; i++)
      node.appendChild(typeof children[i] === 'string' ? document.createTextNode(children[i]) : children[i])
    return node
  }
  function clearErrors(form) {
    for (var i = 0; i < FIELDS.length; i++) {
      var input = form.elements[FIELDS[i]]
      if (input) input.removeAttribute('aria-invalid')
      var note = document.getElementById(FIELDS[i] + '-error')
      if (note) note.textContent = ''
    }
    var general = document.getElementById('form-error')
    if (general) general.textContent = ''
  }
  function showError(form, code, message) {
    var name = fieldOf(code, message)
    var text = human(message) || 'The link could not be created.'
    var input = name && form.elements[name]
    var note = name && document.getElementById(name + '-error')
    if (input && note) {
      note.textContent = text
      input.setAttribute('aria-invalid', 'true')
      if (name !== 'url') { var details = form.querySelector('details'); if (details) details.open = true }
      input.focus()
    } else {
      document.getElementById('form-error').textContent = text
    }
  }
  function showResult(box, rec, owned) {
    var code = String(rec.hex)
    var facts = [
      el('dt', {}, ['Goes to']), el('dd', {}, [String(rec.long_url || '')]),
      el('dt', {}, ['Statistics']), el('dd', {}, [el('a', { href: '/' + code + '+' }, [String(rec.stats || '')])]),
    ]
    if (rec.expires) facts.push(el('dt', {}, ['Expires']), el('dd', {}, [String(rec.expires).slice(0, 16).replace('T', ' ') + ' UTC']))
    facts.push(el('dt', {}, ['QR code']), el('dd', { 'class': 'actions' }, [
      el('a', { 'class': 'button secondary small', href: '/qr/' + code + '.png', download: code + '-qr.png' }, ['PNG']),
      el('a', { 'class': 'button secondary small', href: '/qr/' + code + '.svg', download: code + '-qr.svg' }, ['SVG']),
    ]))
    var short = el('input', { id: 'short', type: 'text', readonly: '' })
    short.value = String(rec.url)
    var copy = el('button', { type: 'button', 'class': 'copy', 'data-copy': 'short', hidden: '' }, ['Copy'])
    var section = el('section', { 'class': 'result', 'aria-labelledby': 'result-title' }, [
      el('h2', { id: 'result-title' }, ['Your short link is ready']),
      el('label', { 'class': 'visually-hidden', 'for': 'short' }, ['Short link']),
      el('div', { 'class': 'inline' }, [short, copy]),
      el('div', { 'class': 'result-body' }, [
        el('img', { 'class': 'qr', src: '/qr/' + code + '.svg', alt: 'QR code of ' + String(rec.url), width: '144', height: '144' }),
        el('dl', { 'class': 'facts' }, facts),
      ]),
    ])
    if (owned)
      section.appendChild(el('p', { 'class': 'owned' }, [
        'It is in ', el('a', { href: '/dashboard?new=' + encodeURIComponent(code) }, ['your dashboard']),
        ', where you can ', el('a', { href: '/dashboard/links/' + encodeURIComponent(code) }, ['change']), ' or delete it.',
      ]))
    box.replaceChildren(section)
    init(box)
    short.focus()
    short.select()
  }
  function shorten(form) {
    var box = document.getElementById('result')
    var button = form.querySelector('button[type=submit]')
    var body = new URLSearchParams()
    var hidden = form.querySelectorAll('input[type=hidden]')
    for (var h = 0; h < hidden.length; h++) body.append(hidden[h].name, hidden[h].value)
    for (var i = 0; i < FIELDS.length; i++) {
      var input = form.elements[FIELDS[i]]
      if (input && input.value !== '') body.append(FIELDS[i], input.value)
    }
    var owned = !!form.elements['_csrf']
    clearErrors(form)
    button.disabled = true
    form.setAttribute('aria-busy', 'true')
    fetch(form.getAttribute('action') || '/', { method: 'POST', body: body, headers: { accept: 'application/json' }, credentials: 'same-origin' })
      .then(function (r) { return r.json() })
      .then(function (answer) {
        // The one-time token was used: the next link gets the new one.
        if (answer && answer.form_token && form.elements['_once']) form.elements['_once'].value = answer.form_token
        if (answer && answer.status === 'success') {
          // Ready for the next link (not form.reset(): that would bring back what a server-rendered error kept).
          for (var j = 0; j < FIELDS.length; j++) {
            var f = form.elements[FIELDS[j]]
            if (f) f.value = f.tagName === 'SELECT' ? f.options[0].value : ''
          }
          showResult(box, answer['return'], owned)
        } else {
          if (box) box.replaceChildren()
          showError(form, answer && answer.code, answer && answer.message)
        }
      }, function () {
        showError(form, null, 'The link could not be created: the server did not answer. Try again.')
      })
      .then(function () {
        button.disabled = false
        form.removeAttribute('aria-busy')
      })
  }
  var shortenForm = document.getElementById('shorten')
  if (shortenForm && window.fetch && window.URLSearchParams)
    shortenForm.addEventListener('submit', function (e) {
      e.preventDefault()
      shorten(shortenForm)
    })

  // ---- Live inbox (src/dashboard/mail.ts) — begin ---------------------------------------------------
  // A mailbox page (#mail-live) hears of new mail while it is open, over Server-Sent Events from its own
  // origin (data-events; the browser reconnects by itself, sending the last id it saw). Each new message
  // comes as the row the server renders for the same list (messageRow(), escaped there: a subject is text
  // in it, never markup) and goes on top; the count, the unread count in the title and a status line for
  // screen readers follow. Without this script the page is the same, and a reload shows new mail.
  function liveInbox(live) {
    var rows = document.getElementById('mail-rows')
    if (!rows || !window.EventSource) return
    var list = document.getElementById('mail-select')
    var empty = document.getElementById('mail-empty')
    var count = document.getElementById('mb-count')
    var status = document.getElementById('mail-live-status')
    var title = String(live.getAttribute('data-title') || '') + ' · linkbox'
    var url = live.getAttribute('data-events') + '?after=' + encodeURIComponent(live.getAttribute('data-after') || '0')
    var source = new EventSource(url)
    source.addEventListener('mail', function (e) {
      var data
      try { data = JSON.parse(e.data) } catch (err) { return }
      var added = 0
      // Newest first in the event: the oldest goes on top first, so the newest ends up first.
      for (var i = data.messages.length - 1; i >= 0; i--) {
        var id = Number(data.messages[i].id)
        if (rows.querySelector('input[name="id"][value="' + id + '"]')) continue
        var t = document.createElement('template')
        t.innerHTML = String(data.messages[i].html)
        var row = t.content.firstElementChild
        if (!row || row.tagName !== 'TR') continue
        rows.insertBefore(row, rows.firstChild)
        added++
      }
      if (list) list.hidden = false
      if (empty) empty.hidden = true
      var n = Number(data.count)
      if (count && n >= 0) count.textContent = n + ' message' + (n === 1 ? '' : 's')
      var unread = Number(data.unread) || 0
      document.title = (unread > 0 ? '(' + unread + ') ' : '') + title
      if (status && added) status.textContent = added === 1 ? 'A new message arrived.' : added + ' new messages arrived.'
    })
    source.addEventListener('gone', function () {
      source.close()
      var note = el('p', { 'class': 'notice warn', role: 'status' }, ['This mailbox was deleted or has expired: no more mail arrives here.'])
      live.parentNode.insertBefore(note, live)
    })
  }
  var live = document.getElementById('mail-live')
  if (live) liveInbox(live)
  // "Select all" (hidden without this script) ticks every row's checkbox of the selection form, rows that
  // arrived live included.
  var pickAll = document.getElementById('mail-pick-all')
  if (pickAll) {
    pickAll.parentNode.hidden = false
    pickAll.addEventListener('change', function () {
      var boxes = document.querySelectorAll('#mail-rows input[name="id"]')
      for (var i = 0; i < boxes.length; i++) boxes[i].checked = pickAll.checked
    })
  }
  // ---- Live inbox — end -------------------------------------------------------------------------------

  // --- A link's QR code section (src/dashboard/link-qr.ts) ------------------------------------------------
  // Without this script the form is a GET form: Preview loads the page with the settings in its URL. With
  // it, the preview image and the download links follow the fields as they change (a quarter second after
  // the last change), and the page's URL too (replaceState: a reload shows the same, Back leaves the page).
  // A value the server refuses (the image answers 400 with the reason as text) is said under the preview.
  // The logo form (a POST whose answer is a download) sends the same settings in its hidden fields.
  var qrForm = document.querySelector('form[data-qr-image]')
  if (qrForm && window.URLSearchParams && window.history && history.replaceState) (function () {
    var image = qrForm.getAttribute('data-qr-image')
    var preview = document.getElementById('qr-preview')
    var status = document.getElementById('qr-status')
    var png = document.getElementById('qr-png')
    var svg = document.getElementById('qr-svg')
    var NAMES = ['fg', 'bg', 'size', 'ecc', 'margin']
    var timer = null
    function settings() {
      var q = new URLSearchParams()
      for (var i = 0; i < NAMES.length; i++) {
        var input = qrForm.elements[NAMES[i]]
        if (input) q.set(NAMES[i], String(input.value).replace(/^#/, ''))
      }
      return q
    }
    function say(text, isError) {
      status.textContent = text
      status.className = isError ? 'error' : ''
    }
    function update() {
      if (!qrForm.checkValidity()) {
        say('Size must be 64–2048 pixels and margin 0–16 modules.', true)
        return
      }
      var q = settings()
      var query = q.toString()
      var copies = document.querySelectorAll('input[data-qr-copy]')
      for (var i = 0; i < copies.length; i++) copies[i].value = q.get(copies[i].getAttribute('data-qr-copy'))
      if (preview.getAttribute('src') === image + '.png?' + query) return
      preview.src = image + '.png?' + query
      q.set('download', '1')
      png.href = image + '.png?' + q.toString()
      svg.href = image + '.svg?' + q.toString()
      history.replaceState(history.state, '', location.pathname + '?' + query + '#qr-style')
    }
    function soon() {
      clearTimeout(timer)
      timer = setTimeout(update, 250)
    }
    qrForm.addEventListener('input', soon)
    qrForm.addEventListener('change', soon)
    preview.addEventListener('load', function () {
      var q = settings()
      say(q.get('size') + ' × ' + q.get('size') + ' pixels, error correction ' + q.get('ecc'), false)
    })
    preview.addEventListener('error', function () {
      var src = preview.src
      fetch(src, { credentials: 'same-origin' }).then(function (r) { return r.ok ? '' : r.text() }).then(function (text) {
        if (preview.src === src) say(text || 'The preview could not be made. Try again.', true)
      }, function () { say('The preview could not be loaded: the server did not answer.', true) })
    })
  })()
  // --- end of the QR code section ---------------------------------------------------------------------------

  // ---- Live pages (issue 24, webhooks and admin health) -----------------------------------------------
  // A page that marks an element with data-live-log (a webhook's delivery log) or data-live-health (the
  // admin's health page) is kept up to date by polling that small JSON address with the session's cookie:
  // one request at a time per page, none while the tab is hidden, and none once the answer says the
  // session ended (401) or the page is gone (403, 404). No stream is held open, so a server that shuts
  // down has nothing to close. What arrives is put in place with DOM methods and textContent only.
  // Without this script the pages show what they showed when loaded, and their Reload link does the rest.
  function livePoll(url, apply) {
    var timer = null
    var busy = false
    var stopped = false
    function tick() {
      timer = null
      if (stopped || busy || document.hidden) return
      busy = true
      var wait = 5000
      fetch(url, { credentials: 'same-origin', cache: 'no-store', headers: { accept: 'application/json' } })
        .then(function (r) {
          if (r.status === 401 || r.status === 403 || r.status === 404) {
            stopped = true
            apply(null, r.status)
            return null
          }
          return r.ok ? r.json() : null
        })
        .then(function (data) { if (data) wait = apply(data) || wait }, function () { wait = 15000 })
        .then(function () {
          busy = false
          schedule(wait)
        })
    }
    function schedule(ms) {
      if (!stopped && !timer && !document.hidden) timer = setTimeout(tick, ms)
    }
    document.addEventListener('visibilitychange', function () {
      if (document.hidden) { clearTimeout(timer); timer = null } else if (!timer) tick()
    })
    schedule(1000)
  }
  function liveTime() {
    return new Date().toTimeString().slice(0, 8)
  }
  var TONES = { good: 1, bad: 1, warn: 1, wait: 1, danger: 1 }
  function tone(t) { return TONES[t] ? t : '' }

  // The delivery log of one webhook (src/dashboard/webhooks.ts renders the same markup on the server).
  function logRow(d, endpoint, csrf) {
    var form = el('form', { method: 'post', action: '/dashboard/webhooks/' + endpoint + '/redeliver' }, [
      el('input', { type: 'hidden', name: '_csrf', value: csrf }),
      el('input', { type: 'hidden', name: 'event', value: String(d.event_id) }),
      el('button', { type: 'submit', 'class': 'secondary small', 'aria-label': 'Redeliver event ' + d.event_id }, ['Redeliver']),
    ])
    return el('tr', {}, [
      el('td', { 'class': 'n', 'data-label': 'Event' }, [String(d.event_id)]),
      el('td', { 'data-label': 'Type' }, [el('code', {}, [String(d.type)])]),
      el('td', { 'data-label': 'State' }, [el('span', { 'class': 'state ' + tone(d.tone) }, [String(d.state)])]),
      el('td', { 'class': 'n', 'data-label': 'Attempts' }, [String(d.attempts)]),
      el('td', { 'class': 'n', 'data-label': 'Status' }, [String(d.status)]),
      el('td', { 'class': 'wh-error', 'data-label': 'Last error' }, [String(d.error)]),
      el('td', { 'class': 'n', 'data-label': 'Time' }, [String(d.time)]),
      el('td', { 'data-label': 'When' }, d.at ? [d.due ? 'due ' : '', el('time', { datetime: String(d.at) }, [String(d.when).replace(/^due /, '')])] : [String(d.when)]),
      el('td', { 'class': 'wide' }, [form]),
    ])
  }
  function logTable(data, endpoint, csrf) {
    if (!data.deliveries.length) return [el('p', { 'class': 'empty' }, ['Nothing sent yet. Send a test event to see a delivery here.'])]
    var heads = [['Event', 'n'], ['Type'], ['State'], ['Attempts', 'n'], ['Status', 'n'], ['Last error'], ['Time', 'n'], ['When']].map(function (c) {
      return el('th', c[1] ? { scope: 'col', 'class': c[1] } : { scope: 'col' }, [c[0]])
    })
    heads.push(el('th', { scope: 'col' }, [el('span', { 'class': 'visually-hidden' }, ['Actions'])]))
    var rows = data.deliveries.map(function (d) { return logRow(d, endpoint, csrf) })
    var out = [el('div', { 'class': 'table-wrap' }, [el('table', { 'class': 'wh-log stack' }, [
      el('caption', { 'class': 'visually-hidden' }, ['Deliveries to this endpoint, newest event first']),
      el('thead', {}, [el('tr', {}, heads)]),
      el('tbody', {}, rows),
    ])])]
    if (data.deliveries.length >= data.more) out.push(el('p', { 'class': 'muted' }, ['The newest ' + data.more + ' deliveries.']))
    return out
  }
  function liveLog(box) {
    var endpoint = box.getAttribute('data-endpoint')
    var note = document.getElementById('wh-log-live')
    var csrfInput = document.querySelector('input[name=_csrf]')
    var csrf = csrfInput ? csrfInput.value : ''
    var seen = null
    livePoll(box.getAttribute('data-live-log'), function (data, status) {
      if (!data) {
        if (note) note.textContent = status === 401 ? 'Your session ended: the log is no longer updated. Reload to sign in again.' : 'This endpoint is gone.'
        return
      }
      var pending = data.counts.pending > 0
      var now = JSON.stringify(data)
      if (now === seen) return pending ? 2000 : 10000
      var first = seen === null
      seen = now
      // Focus stays on the Redeliver button of the same event when the table is drawn again.
      var active = document.activeElement
      var focused = active && box.contains(active) && active.form && active.form.elements['event'] ? active.form.elements['event'].value : null
      box.replaceChildren.apply(box, logTable(data, endpoint, csrf))
      if (focused) {
        var again = box.querySelector('input[name=event][value="' + focused.replace(/[^0-9]/g, '') + '"]')
        if (again) again.form.querySelector('button').focus()
      }
      var state = document.getElementById('wh-state')
      if (state) {
        var parts = [el('span', { 'class': 'state ' + tone(data.state.tone) }, [String(data.state.label)])]
        if (data.state.note) parts.push(el('div', { 'class': 'muted' }, [String(data.state.note)]))
        state.replaceChildren.apply(state, parts)
      }
      var counts = document.getElementById('wh-counts')
      if (counts) counts.replaceChildren(el('span', { 'class': 'wh-counts' }, [
        el('span', { title: 'Delivered' }, [data.counts.ok + ' ok']), ' · ',
        el('span', { title: 'Failed' }, [data.counts.failed + ' failed']), ' · ',
        el('span', { title: 'Pending' }, [data.counts.pending + ' pending']),
      ]))
      if (note && !first) note.textContent = 'The log changed at ' + liveTime() + '.'
      return 2000
    })
  }

  // The admin's health page: each figure (data-stat), each bar table (data-bars), the status card.
  var SVG = 'http://www.w3.org/2000/svg'
  function svgBar(row) {
    var svg = document.createElementNS(SVG, 'svg')
    var attrs = { viewBox: '0 0 100 10', preserveAspectRatio: 'none', 'aria-hidden': 'true', focusable: 'false' }
    for (var k in attrs) svg.setAttribute(k, attrs[k])
    var shapes = [['track', '100'], ['fill' + (tone(row.tone) ? ' ' + tone(row.tone) : ''), String(Number(row.width) || 0)]]
    for (var i = 0; i < shapes.length; i++) {
      var rect = document.createElementNS(SVG, 'rect')
      rect.setAttribute('class', shapes[i][0])
      rect.setAttribute('x', '0')
      rect.setAttribute('y', '0')
      rect.setAttribute('width', shapes[i][1])
      rect.setAttribute('height', '10')
      svg.appendChild(rect)
    }
    return svg
  }
  function barBlock(b) {
    if (!b.rows.length)
      return el('div', { 'class': 'metric-bars-empty' }, [el('p', { 'class': 'metric-bars-caption' }, [String(b.caption)]), el('p', { 'class': 'empty' }, ['Nothing counted yet.'])])
    return el('table', { 'class': 'metric-bars' }, [
      el('caption', {}, [String(b.caption)]),
      el('thead', { 'class': 'visually-hidden' }, [el('tr', {}, [el('th', { scope: 'col' }, [String(b.head)]), el('th', { scope: 'col' }, ['Share of the largest']), el('th', { scope: 'col' }, ['Count'])])]),
      el('tbody', {}, b.rows.map(function (r) {
        return el('tr', {}, [el('th', { scope: 'row' }, [String(r.label)]), el('td', { 'class': 'bar-cell' }, [svgBar(r)]), el('td', { 'class': 'n' }, [String(r.count)])])
      })),
    ])
  }
  function liveHealth(read) {
    var at = document.getElementById('health-read-at')
    var how = document.getElementById('health-read-how')
    if (how) how.textContent = '; updated every few seconds while this page is open'
    livePoll(read.getAttribute('data-live-health'), function (data, status) {
      if (!data) {
        if (how) how.textContent = status === 401 ? '; your session ended, reload to sign in again' : '; no longer updated'
        return
      }
      if (at) at.replaceChildren(data.read_at ? el('time', { datetime: String(data.read_at) }, [String(data.read)]) : String(data.read))
      for (var i = 0; i < data.stats.length; i++) {
        var s = data.stats[i]
        var box = document.querySelector('[data-stat="' + String(s.key).replace(/[^a-z0-9-]/g, '') + '"]')
        if (!box) continue
        box.className = 'stat' + (tone(s.tone) ? ' ' + tone(s.tone) : '')
        var dd = box.querySelector('dd')
        var parts = [el('span', { 'class': 'stat-value' }, [String(s.value)])]
        if (s.note) parts.push(el('span', { 'class': 'stat-note' }, [String(s.note)]))
        dd.replaceChildren.apply(dd, parts)
      }
      for (var j = 0; j < data.bars.length; j++) {
        var holder = document.querySelector('[data-bars="' + String(data.bars[j].key).replace(/[^a-z0-9-]/g, '') + '"]')
        if (holder) holder.replaceChildren(barBlock(data.bars[j]))
      }
      var card = document.querySelector('[data-health-status]')
      if (card) {
        var ok = data.problem === null
        card.className = 'card health-status ' + (ok ? 'ok' : 'degraded')
        var h2 = card.querySelector('h2')
        h2.replaceChildren(el('span', { 'class': 'dot', 'aria-hidden': 'true' }, []), ok ? 'Working' : 'Degraded')
        var p = card.querySelector('p')
        p.replaceChildren.apply(p, ok
          ? ['The database can be written: ', el('code', {}, ['/healthz']), ' answers ', el('code', {}, ['ok']), '.']
          : ['The database cannot be written: ' + String(data.problem) + '. Visits and reads still work; ', el('code', {}, ['/healthz']), ' answers 503.'])
      }
      return 5000
    })
  }
  if (window.fetch && document.replaceChildren !== undefined) {
    var logBox = document.querySelector('[data-live-log]')
    if (logBox) liveLog(logBox)
    var healthRead = document.querySelector('[data-live-health]')
    if (healthRead) liveHealth(healthRead)
  }
  // ---- end of live pages --------------------------------------------------------------------------------

  // == Daily use (issue 24): the theme switch, and keyboard shortcuts on the dashboard ==
  // The theme: "light" or "dark" kept in this browser's localStorage and set as data-theme on <html>
  // (style.css); "system" (the default) removes both. The switch (.theme-switch, hidden without this script)
  // is shown and kept in step. localStorage may be refused (privacy settings): the system theme applies.
  var THEME_KEY = 'linkbox-theme'
  function storedTheme() {
    try { var t = window.localStorage.getItem(THEME_KEY); return t === 'light' || t === 'dark' ? t : 'system' } catch (e) { return 'system' }
  }
  function applyTheme(theme) {
    if (theme === 'light' || theme === 'dark') document.documentElement.setAttribute('data-theme', theme)
    else document.documentElement.removeAttribute('data-theme')
  }
  applyTheme(storedTheme())
  function initThemeSwitch() {
    var selects = document.querySelectorAll('select[data-theme-switch]')
    for (var i = 0; i < selects.length; i++) {
      selects[i].value = storedTheme()
      selects[i].closest('.theme-switch').hidden = false
      selects[i].addEventListener('change', function (e) {
        var theme = e.target.value
        try {
          if (theme === 'light' || theme === 'dark') window.localStorage.setItem(THEME_KEY, theme)
          else window.localStorage.removeItem(THEME_KEY)
        } catch (err) {}
        applyTheme(theme)
      })
    }
  }

  // The dashboard's keyboard shortcuts are in assets/app-front.js.

  initThemeSwitch()
  // == end of daily use ==

  window.linkbox = { init: init }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', function () { init(document) })
  else init(document)
})()
