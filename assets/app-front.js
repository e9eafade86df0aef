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
})()
