// The link forms' UTM builder (issue 40): the destination as it will be saved, shown live under the five
// fields; fields not typed in follow the URL field (its own utm_ values read back into them). The server does
// the same merge (src/links/utm.ts), so the page works without this: a field changed from what the page showed
// is set in the destination's query, an emptied one removes it.
;(function () {
  'use strict'
  var builder = document.querySelector('[data-utm-builder]')
  var out = document.getElementById('utm-result')
  var form = builder && builder.closest('form')
  var url = form && form.querySelector('#url')
  if (!builder || !out || !url) return
  var NAMES = ['utm_source', 'utm_medium', 'utm_campaign', 'utm_term', 'utm_content']
  var fields = Array.prototype.slice.call(builder.querySelectorAll('[data-utm]'))

  function decode(p) {
    p = p.replace(/\+/g, ' ')
    try { return decodeURIComponent(p) } catch (e) { return p }
  }
  function encode(v) { return encodeURIComponent(v).replace(/'/g, '%27') }
  function nameOf(piece) { var eq = piece.indexOf('='); return decode(eq < 0 ? piece : piece.slice(0, eq)) }
  // What comes before the query, the query's pieces and the fragment, as src/links/utm.ts cuts them.
  function cut(u) {
    var hash = u.indexOf('#'), fragment = hash < 0 ? '' : u.slice(hash), rest = hash < 0 ? u : u.slice(0, hash)
    var q = rest.indexOf('?')
    if (q < 0) return { head: rest, pieces: [], fragment: fragment, hadQuery: false }
    var query = rest.slice(q + 1)
    return { head: rest.slice(0, q), pieces: query === '' ? [] : query.split('&'), fragment: fragment, hadQuery: true }
  }
  function merge(u, values) {
    var c = cut(u), placed = {}, kept = []
    c.pieces.forEach(function (piece) {
      var name = nameOf(piece)
      if (!Object.prototype.hasOwnProperty.call(values, name)) return kept.push(piece)
      if (values[name] === '' || placed[name]) return
      placed[name] = true
      kept.push(name + '=' + encode(values[name]))
    })
    NAMES.forEach(function (name) {
      if (Object.prototype.hasOwnProperty.call(values, name) && values[name] !== '' && !placed[name])
        kept.push(name + '=' + encode(values[name]))
    })
    return c.head + (kept.length ? '?' + kept.join('&') : c.hadQuery && !c.pieces.length ? '?' : '') + c.fragment
  }
  function valuesOf(u) {
    var found = {}
    cut(u).pieces.forEach(function (piece) {
      var name = nameOf(piece), eq = piece.indexOf('=')
      if (NAMES.indexOf(name) < 0 || Object.prototype.hasOwnProperty.call(found, name)) return
      found[name] = eq < 0 ? '' : decode(piece.slice(eq + 1))
    })
    return found
  }
  // "www.example.com" → "https://www.example.com", as the server reads the URL field.
  function withScheme(t) {
    t = t.trim()
    if (t === '' || /^[a-z][a-z0-9+.-]*:\/\//i.test(t)) return t
    if (t.indexOf('//') === 0) return 'https:' + t
    var host = t.split(/[/?#]/)[0]
    return /^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.[a-z][a-z0-9-]*\.?(:\d{1,5})?$/i.test(host) || /^\d{1,3}(\.\d{1,3}){3}(:\d{1,5})?$/.test(host) ? 'https://' + t : t
  }
  function show() {
    var changed = {}
    fields.forEach(function (f) { if (f.value !== f.getAttribute('data-shown')) changed[f.name] = f.value })
    var u = withScheme(url.value)
    out.textContent = u ? merge(u, changed) : ''
  }
  function follow() {
    var read = valuesOf(withScheme(url.value))
    fields.forEach(function (f) { if (!f.hasAttribute('data-touched')) f.value = read[f.name] || '' })
  }
  url.addEventListener('input', function () { follow(); show() })
  fields.forEach(function (f) {
    f.addEventListener('input', function () { f.setAttribute('data-touched', ''); show() })
  })
  show()
})()
