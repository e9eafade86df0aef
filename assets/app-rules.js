// The link forms' helpers (issue 38): the rules and split editor's rows added, removed and moved (the
// fields renumbered, focus kept on the moved row's button), the split's shares and total live, an address
// without a scheme given https:// when the field is left, and the tags shown as they will be kept. The
// page works without this: numbered blank rows to fill, the server does the rest.
;(function () {
  'use strict'
  function rowsOf(list) { return Array.prototype.filter.call(list.children, function (li) { return li.hasAttribute('data-row') }) }
  // Every name, id and reference in a row carries its number: rule_3_url, "Move rule 4 up".
  function renumber(list) {
    var kind = list.getAttribute('data-rows')
    var re = new RegExp(kind + '_\\d+', 'g')
    rowsOf(list).forEach(function (li, i) {
      var all = [li].concat(Array.prototype.slice.call(li.querySelectorAll('*')))
      all.forEach(function (el) {
        ['id', 'name', 'for', 'aria-describedby'].forEach(function (a) {
          var v = el.getAttribute(a)
          if (v && re.test(v)) el.setAttribute(a, v.replace(re, kind + '_' + i))
          re.lastIndex = 0
        })
        var label = el.getAttribute('aria-label')
        if (label) el.setAttribute('aria-label', label.replace(/\d+( up| down)?$/, (i + 1) + '$1'))
      })
      var n = li.querySelector('[data-n]')
      if (n) n.textContent = String(i + 1)
    })
    var add = document.querySelector('[data-add="' + kind + '"]')
    if (add) add.disabled = rowsOf(list).length >= Number(list.getAttribute('data-max'))
    if (kind === 'split') shares()
  }
  function blank(li) {
    li.querySelectorAll('input[type=text], input[type=number]').forEach(function (i) { i.value = '' })
    li.querySelectorAll('input[type=checkbox]').forEach(function (i) { i.checked = false })
    li.querySelectorAll('option').forEach(function (o) { o.selected = false })
    li.querySelectorAll('.error').forEach(function (x) { x.remove() })
    li.querySelectorAll('.scheme-note').forEach(function (x) { x.textContent = 'Typed without https://, it is added.' })
    li.querySelectorAll('[aria-invalid]').forEach(function (x) { x.removeAttribute('aria-invalid') })
    var out = li.querySelector('output'); if (out) out.textContent = ''
    li.querySelectorAll('.chosen').forEach(function (x) { x.textContent = 'Any' })
  }
  function isBlank(li) {
    return !Array.prototype.some.call(li.querySelectorAll('input, option'), function (i) {
      return i.tagName === 'OPTION' ? i.selected : i.type === 'checkbox' ? i.checked : i.value !== ''
    })
  }
  function onRowButton(ev) {
    var b = ev.target.closest('button[data-move], button[data-remove]')
    if (!b) return
    var li = b.closest('[data-row]'), list = li.parentNode, rows = rowsOf(list), i = rows.indexOf(li)
    if (b.hasAttribute('data-remove')) {
      var min = list.getAttribute('data-rows') === 'split' ? 2 : 1
      var next = rows[i + 1] || rows[i - 1]
      if (rows.length <= min) blank(li)
      else li.remove()
      renumber(list)
      var target = rows.length <= min ? li : next
      target.querySelector('input[type=text], input').focus()
      return
    }
    var to = i + Number(b.getAttribute('data-move'))
    if (to < 0 || to >= rows.length) return
    if (to < i) list.insertBefore(li, rows[to])
    else list.insertBefore(li, rows[to].nextSibling)
    renumber(list)
    b.focus()
  }
  function onAdd(ev) {
    var kind = ev.currentTarget.getAttribute('data-add')
    var list = document.querySelector('[data-rows="' + kind + '"]')
    var rows = rowsOf(list)
    var copy = rows[rows.length - 1].cloneNode(true)
    blank(copy)
    list.appendChild(copy)
    renumber(list)
    copy.querySelector(kind === 'rule' ? 'input[type=checkbox]' : 'input').focus()
  }
  // The shares of the split and what its total says; every problem at once, as the server says them.
  function shares() {
    var list = document.querySelector('[data-rows="split"]')
    var total = document.getElementById('split-total')
    if (!list || !total) return
    var rows = rowsOf(list), sum = 0, filled = 0, problems = []
    var weights = rows.map(function (li, i) {
      var url = li.querySelector('input[type=text]').value.trim()
      var raw = li.querySelector('[data-weight]').value.trim()
      var w = /^\d{1,3}$/.test(raw) ? Number(raw) : 0
      if (url || raw) {
        filled++
        if (!url) problems.push('Destination ' + (i + 1) + ': type its address.')
        if (w < 1 || w > 100) { problems.push('Destination ' + (i + 1) + ': the weight is a whole number from 1 to 100.'); w = 0 }
      } else w = 0
      sum += w
      return w
    })
    rows.forEach(function (li, i) {
      li.querySelector('output').textContent = weights[i] && sum ? Math.round(weights[i] * 100 / sum) + ' % of visitors' : ''
    })
    if (filled === 1) problems.push('A split shares visitors between 2 and 10 destinations; there is 1.')
    var text = filled === 0 ? 'No split: every visitor no rule sends elsewhere goes to the destination URL.'
      : sum === 100 ? 'The weights add up to 100.'
      : 'The weights add up to ' + sum + ', not 100: each destination gets its weight’s share of ' + sum + ' (shown beside it).'
    total.textContent = [text].concat(problems).join(' ')
    total.classList.toggle('warn', filled > 0 && (sum !== 100 || problems.length > 0))
  }
  // "www.example.com/page" → "https://www.example.com/page", as the server would, said beside the field.
  function withScheme(t) {
    t = t.trim()
    if (t === '' || /^[a-z][a-z0-9+.-]*:\/\//i.test(t)) return t
    if (t.indexOf('//') === 0) return 'https:' + t
    var host = t.split(/[/?#]/)[0]
    return /^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.[a-z][a-z0-9-]*\.?(:\d{1,5})?$/i.test(host) || /^\d{1,3}(\.\d{1,3}){3}(:\d{1,5})?$/.test(host) ? 'https://' + t : t
  }
  function onLeave(ev) {
    var input = ev.target
    if (!input.hasAttribute || !input.hasAttribute('data-scheme')) return
    var fixed = withScheme(input.value)
    if (fixed === input.value.trim()) return
    input.value = fixed
    var note = document.getElementById(input.id + '-scheme')
    if (note) note.textContent = 'https:// was added in front.'
  }
  // Tags as the server keeps them: accents dropped, lower case, spaces as "-", no "#", each once.
  function tagOf(t) {
    return t.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').trim().replace(/^#+/, '').toLowerCase()
      .replace(/[\s.]+/g, '-').replace(/-{2,}/g, '-').replace(/^-+|-+$/g, '')
  }
  function previewTags() {
    var input = document.querySelector('[data-tags]'), out = document.getElementById('tags-preview')
    if (!input || !out) return
    var seen = {}, tags = input.value.split(',').map(tagOf).filter(function (t) { return t && !seen[t] && (seen[t] = true) })
    var odd = tags.filter(function (t) { return !/^[a-z0-9_-]*$/.test(t) })
    out.textContent = !tags.length ? '' : 'Saved as: ' + tags.join(', ') +
      (odd.length ? '. Tags can hold letters, digits, _ and -: ' + odd.join(', ') + (odd.length > 1 ? ' have' : ' has') + ' other characters.' : '') +
      (tags.length > 10 ? '. A link can have at most 10 tags; there are ' + tags.length + '.' : '')
  }
  document.querySelectorAll('[data-rows]').forEach(function (list) {
    // Blank rows are for pages without this script ("Add" makes more): one blank rule is kept, and two split rows.
    var isRule = list.getAttribute('data-rows') === 'rule', seenBlank = false
    rowsOf(list).forEach(function (li) {
      if (!isBlank(li)) return
      if (isRule ? seenBlank : rowsOf(list).length > 2) li.remove()
      seenBlank = true
    })
    list.querySelectorAll('.row-tools').forEach(function (t) { t.hidden = false })
    list.addEventListener('click', onRowButton)
    renumber(list)
  })
  document.querySelectorAll('[data-add]').forEach(function (b) { b.hidden = false; b.addEventListener('click', onAdd) })
  // The line under a list names what is chosen in it.
  document.addEventListener('change', function (ev) {
    var list = ev.target
    if (!list.hasAttribute || !list.hasAttribute('data-chosen')) return
    var names = Array.prototype.filter.call(list.options, function (o) { return o.selected }).map(function (o) { return o.textContent })
    var line = document.getElementById(list.id + '-chosen')
    if (line) line.textContent = names.length ? 'Chosen: ' + names.join(', ') : 'Any'
  })
  var splitList = document.querySelector('[data-rows="split"]')
  if (splitList) splitList.addEventListener('input', shares)
  document.addEventListener('focusout', onLeave)
  var tags = document.querySelector('[data-tags]')
  if (tags) { tags.addEventListener('input', previewTags); previewTags() }
})()
