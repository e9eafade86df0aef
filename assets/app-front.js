// The home page's recent links and the dashboard's keyboard shortcuts (issue 38): part of the one script
// (assets/app*.js, joined in src/web/render.ts). Pages work without it; nothing here leaves this origin.
;(function () {
  'use strict'
  function el(tag, attrs, children) {
    var node = document.createElement(tag)
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) node.setAttribute(k, attrs[k])
    for (var i = 0; children && i < children.length; i++)
      node.appendChild(typeof children[i] === 'string' ? document.createTextNode(children[i]) : children[i])
    return node
  }

  // == Your recent links (the home page, made without signing in) ==
  // A link made here without an account is listed nowhere on the server: this browser keeps the newest
  // RECENT_MAX in localStorage and lists them under the form, each with its copy button and its public QR
  // image (/qr/<code>.svg, no key needed). They are read from the result the page shows (rendered by the
  // server or by app.js in place), so both paths keep them. "Forget these links" empties the list.
  var RECENT_KEY = 'linkbox-recent'
  var RECENT_MAX = 20
  var CODE = /^[A-Za-z0-9_-]{1,64}$/
  function readRecent() {
    try {
      var list = JSON.parse(window.localStorage.getItem(RECENT_KEY) || '[]')
      if (!Array.isArray(list)) return []
      // Only entries of the expected shape: the list is text anyone at this browser could have edited.
      return list.filter(function (r) {
        return r && CODE.test(String(r.hex)) && /^https?:\/\//.test(String(r.url)) && typeof r.long_url === 'string'
      }).slice(0, RECENT_MAX)
    } catch (e) { return [] }
  }
  function writeRecent(list) {
    try {
      if (list.length) window.localStorage.setItem(RECENT_KEY, JSON.stringify(list.slice(0, RECENT_MAX)))
      else window.localStorage.removeItem(RECENT_KEY)
      return true
    } catch (e) { return false }
  }
  /** The link the result box shows, or null (none, or it is a signed-in person's: their dashboard lists it). */
  function shownLink(box) {
    var section = box.querySelector('section.result')
    var short = document.getElementById('short')
    if (!section || !short || section.querySelector('.owned')) return null
    var url = String(short.value)
    var hex = url.slice(url.lastIndexOf('/') + 1)
    var dd = section.querySelector('dl.facts dd')
    if (!CODE.test(hex) || !/^https?:\/\//.test(url)) return null
    return { hex: hex, url: url, long_url: dd ? String(dd.textContent).slice(0, 4096) : '', made: Date.now() }
  }
  function remember(rec) {
    var list = readRecent().filter(function (r) { return r.hex !== rec.hex })
    list.unshift(rec)
    writeRecent(list)
  }
  function recentItem(r, i) {
    var id = 'recent-' + i
    var qr = '/qr/' + encodeURIComponent(r.hex)
    return el('li', { 'class': 'recent-item' }, [
      el('a', { 'class': 'recent-qr', href: qr + '.png', download: r.hex + '-qr.png' }, [
        el('img', { src: qr + '.svg', alt: 'Download the QR code of ' + r.url, width: '56', height: '56', loading: 'lazy' }, []),
      ]),
      el('div', { 'class': 'recent-text' }, [
        el('a', { id: id, 'class': 'recent-short', href: r.url }, [r.url]),
        el('span', { 'class': 'recent-dest' }, ['to ' + r.long_url]),
        el('span', { 'class': 'recent-actions' }, [
          el('button', { type: 'button', 'class': 'copy small', 'data-copy': id, 'aria-label': 'Copy ' + r.url }, ['Copy']),
          el('a', { href: '/' + encodeURIComponent(r.hex) + '+' }, ['Statistics', el('span', { 'class': 'visually-hidden' }, [' of ' + r.url])]),
        ]),
      ]),
    ])
  }
  function drawRecent(holder, note) {
    var list = readRecent()
    holder.hidden = list.length === 0
    var forget = el('button', { type: 'button', 'class': 'secondary small', id: 'recent-forget' }, ['Forget these links'])
    forget.addEventListener('click', function () {
      writeRecent([])
      drawRecent(holder, 'The list is empty: this browser no longer keeps your links. They keep working.')
      // The button is gone with the list: focus goes back to the form.
      document.getElementById('url').focus()
    })
    holder.replaceChildren(
      el('h2', { id: 'recent-h' }, ['Your recent links']),
      el('p', { 'class': 'muted' }, ['Kept in this browser only (the newest ' + RECENT_MAX + '); nobody else sees this list.']),
      el('ul', { 'class': 'recent-list' }, list.map(recentItem)),
      el('p', { 'class': 'recent-forget' }, [forget])
    )
    var status = document.getElementById('recent-status')
    if (status) status.textContent = note || ''
  }
  var resultBox = document.getElementById('result')
  var shortenForm = document.getElementById('shorten')
  if (resultBox && shortenForm && !shortenForm.elements['_csrf'] && document.replaceChildren !== undefined) {
    var holder = el('section', { id: 'recent', 'class': 'recent', 'aria-labelledby': 'recent-h', hidden: '' }, [])
    var status = el('p', { id: 'recent-status', 'class': 'visually-hidden', role: 'status' }, [])
    resultBox.parentNode.insertBefore(holder, resultBox.nextSibling)
    resultBox.parentNode.insertBefore(status, holder.nextSibling)
    var seen = function () {
      var rec = shownLink(resultBox)
      if (rec) remember(rec)
      drawRecent(holder)
    }
    seen()
    if (window.MutationObserver) new MutationObserver(seen).observe(resultBox, { childList: true })
    // Back to a page kept in memory: the list as this browser has it now (another tab may have added).
    window.addEventListener('pageshow', function (e) { if (e.persisted) drawRecent(holder) })
  }
  // == end of your recent links ==

  // == Keyboard shortcuts (dashboard pages; moved here from app.js, issue 24, and grown in issue 38) ==
  // Never while typing in a field, nor with Ctrl/Alt/Cmd: "/" search, "n" (or "c") a new link, "j"/"k" the
  // next/previous row of the list (Enter opens its page), "g" then a letter a section of the navigation, "?" the
  // list of them in a dialog (Escape closes it). A "Keyboard shortcuts" button in the header opens it too.
  var GO = [['l', '/dashboard', 'Links'], ['a', '/dashboard/keys', 'API keys'], ['m', '/dashboard/mail', 'Mailboxes'],
    ['w', '/dashboard/webhooks', 'Webhooks'], ['t', '/dashboard/tags', 'Tags'], ['i', '/dashboard/import', 'Import'],
    ['d', '/dashboard/admin', 'Admin']]
  /** The "g" targets this page's navigation has (a section the person cannot open is not offered). */
  function goTargets() {
    return GO.filter(function (g) { return !!document.querySelector('nav[aria-label="Dashboard"] a[href="' + g[1] + '"]') })
  }
  function shortcutList() {
    var list = [['/', 'Search your links'], ['n', 'New link (c works too)'], ['j', 'Next row of the list'], ['k', 'Previous row of the list'], ['Enter', 'Open the chosen row']]
    var go = goTargets()
    for (var i = 0; i < go.length; i++) list.push(['g ' + go[i][0], 'Go to ' + go[i][2]])
    list.push(['?', 'Show these shortcuts'], ['Esc', 'Close them'])
    return list
  }
  function typing(target) {
    if (!target || !target.tagName) return false
    var tag = target.tagName
    return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || target.isContentEditable
  }
  var opener = null
  function helpDialog() {
    var dialog = document.getElementById('shortcuts-help')
    if (dialog) return dialog
    var rows = []
    var all = shortcutList()
    for (var i = 0; i < all.length; i++) {
      var keys = all[i][0].split(' ').map(function (k) { return el('kbd', {}, [k]) })
      var dt = el('dt', {}, keys.length > 1 ? [keys[0], ' then ', keys[1]] : keys)
      rows.push(dt, el('dd', {}, [all[i][1]]))
    }
    var close = el('button', { type: 'button', 'class': 'secondary' }, ['Close'])
    dialog = el('dialog', { id: 'shortcuts-help', 'class': 'shortcuts', 'aria-labelledby': 'shortcuts-title' }, [
      el('h2', { id: 'shortcuts-title' }, ['Keyboard shortcuts']),
      el('p', { 'class': 'muted' }, ['Not while typing in a field.']),
      el('dl', {}, rows), close,
    ])
    close.addEventListener('click', function () { dialog.close() })
    // Focus goes back where it was (the button that opened it, or the page).
    dialog.addEventListener('close', function () { if (opener && opener.focus) opener.focus(); opener = null })
    document.body.appendChild(dialog)
    return dialog
  }
  function showHelp() {
    var dialog = helpDialog()
    if (dialog.open) return
    opener = document.activeElement
    dialog.showModal()
  }
  function rowsOfList() {
    return document.querySelectorAll('.dash-main table tbody tr')
  }
  function moveRow(step) {
    var all = rowsOfList()
    if (!all.length) return
    var at = -1
    for (var i = 0; i < all.length; i++) if (all[i].classList.contains('kb-current')) at = i
    var next = at === -1 ? (step > 0 ? 0 : all.length - 1) : Math.max(0, Math.min(all.length - 1, at + step))
    if (at !== -1) all[at].classList.remove('kb-current')
    var row = all[next]
    row.classList.add('kb-current')
    row.setAttribute('tabindex', '-1')
    row.focus()
    if (row.scrollIntoView) row.scrollIntoView({ block: 'nearest' })
  }
  function openRow(row) {
    var link = row.querySelector('a[href^="/dashboard/"]')
    if (link) link.click()
  }
  function newLink() {
    var url = document.querySelector('form[action="/dashboard/links"] input[name=url]')
    if (url) {
      url.focus()
      if (url.scrollIntoView) url.scrollIntoView({ block: 'nearest' })
    } else window.location.href = '/dashboard#new-link'
  }
  var pendingG = 0
  function onKey(e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return
    var dialog = document.getElementById('shortcuts-help')
    if (dialog && dialog.open) return
    // "g" then a letter, within a second and a half.
    if (pendingG && Date.now() - pendingG < 1500) {
      pendingG = 0
      var go = goTargets()
      for (var i = 0; i < go.length; i++) if (go[i][0] === e.key) { e.preventDefault(); window.location.href = go[i][1]; return }
      return
    }
    pendingG = 0
    if (e.key === 'Enter' && e.target && e.target.classList && e.target.classList.contains('kb-current')) { e.preventDefault(); openRow(e.target); return }
    var search = document.getElementById('search')
    if (e.key === '/' && search) { e.preventDefault(); search.focus(); search.select(); return }
    if (e.key === 'c' || e.key === 'n') { e.preventDefault(); newLink(); return }
    if (e.key === 'j' || e.key === 'k') { e.preventDefault(); moveRow(e.key === 'j' ? 1 : -1); return }
    if (e.key === 'g') { e.preventDefault(); pendingG = Date.now(); return }
    if (e.key === '?') { e.preventDefault(); showHelp() }
  }
  if (document.body && document.body.classList.contains('dash')) {
    document.addEventListener('keydown', onKey)
    if (window.location.hash === '#new-link') {
      var fresh = document.querySelector('form[action="/dashboard/links"] input[name=url]')
      if (fresh) fresh.focus()
    }
    // The shortcuts named where people see them (signed in: the header has the navigation).
    var user = document.querySelector('.dash-top .dash-user')
    if (user) {
      var help = el('button', { type: 'button', 'class': 'link kb-help', 'aria-haspopup': 'dialog' }, ['Keyboard shortcuts ', el('kbd', { 'aria-hidden': 'true' }, ['?'])])
      help.addEventListener('click', showHelp)
      user.insertBefore(help, user.firstChild)
    }
  }
  // == end of keyboard shortcuts ==
})()
