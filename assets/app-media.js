// The dashboard's Download page (src/dashboard/media.ts, #dl-page). Without this script a format's link
// records the download and goes to its signed /dl link, which answers once the file is ready. With it, the link
// is asked for JSON (the same record; the /dl link and its progress stream back), the progress of a merged or
// extracted format is shown while it is prepared (an EventSource: step, bar, bytes, speed), and the download
// starts when it is ready. Announced sparingly (aria-live): a new step, each quarter, ready, failed.
;(function () {
  'use strict'
  var root = document.getElementById('dl-page')
  var box = document.getElementById('dl-progress')
  if (!root || !box || !window.EventSource || !window.fetch) return
  var bar = document.getElementById('dl-bar')
  var text = document.getElementById('dl-progress-text')
  var live = document.getElementById('dl-live')
  var failed = document.getElementById('dl-failed')
  var nameEl = document.getElementById('dl-progress-name')
  var STEPS = { queued: 'Waiting for its turn', downloading: 'Downloading', converting: 'Converting' }
  var source = null
  var events = 0

  function size(n) {
    var units = ['bytes', 'KiB', 'MiB', 'GiB']
    var u = 0
    while (n >= 1024 && u < units.length - 1) { n /= 1024; u++ }
    return u === 0 ? Math.round(n) + ' bytes' : (n < 10 ? n.toFixed(1) : Math.round(n)) + ' ' + units[u]
  }
  function state(name) { box.setAttribute('data-state', name) }
  function stop() {
    if (source) source.close()
    source = null
  }
  function fail(message) {
    stop()
    state('failed')
    text.textContent = ''
    failed.textContent = message
  }

  function begin(link) {
    stop()
    events = 0
    var name = link.getAttribute('data-dl-name') || 'the download'
    box.hidden = false
    box.setAttribute('data-events', '0')
    state('starting')
    nameEl.textContent = name
    bar.removeAttribute('value')
    text.textContent = 'Starting…'
    failed.textContent = ''
    live.textContent = 'Preparing ' + name + '.'
    box.focus()
    fetch(link.href, { headers: { accept: 'application/json' }, credentials: 'same-origin' })
      .then(function (r) {
        // Not JSON (the session ended: the sign-in page): the link itself, as without the script.
        if ((r.headers.get('content-type') || '').indexOf('application/json') < 0) throw new Error('not json')
        return r.json().then(function (body) { return { ok: r.ok, body: body || {} } })
      })
      .then(function (a) {
        if (!a.ok) return fail(String(a.body.message || 'The download could not be started.'))
        var file = String(a.body.file || '')
        var progress = String(a.body.progress || '')
        // Paths of this origin only.
        if (file.indexOf('/dl/') !== 0 || progress.indexOf('/dl/') !== 0) return fail('The download could not be started.')
        watch(file, progress, name)
      }, function () { window.location.href = link.href })
  }

  function watch(file, progress, name) {
    var lastStep = ''
    var lastQuarter = -1
    source = new EventSource(progress)
    source.addEventListener('progress', function (e) {
      var p
      try { p = JSON.parse(e.data) } catch (err) { return }
      events++
      box.setAttribute('data-events', String(events))
      state('progress')
      var parts = [STEPS[p.step] || 'Preparing']
      var percent = typeof p.percent === 'number' && p.percent >= 0 ? Math.min(100, p.percent) : null
      if (percent !== null) { bar.value = percent; parts.push(Math.floor(percent) + '%') } else bar.removeAttribute('value')
      if (p.bytes > 0) parts.push(size(p.bytes) + (p.total > 0 ? ' of ' + size(p.total) : ''))
      if (p.speed > 0) parts.push(size(p.speed) + '/s')
      text.textContent = parts.join(' · ')
      var quarter = percent === null ? -1 : Math.floor(percent / 25)
      if (p.step !== lastStep || quarter > lastQuarter) live.textContent = parts.slice(0, 2).join(', ')
      lastStep = p.step
      lastQuarter = Math.max(lastQuarter, quarter)
    })
    source.addEventListener('ready', function () {
      stop()
      state('ready')
      bar.value = 100
      text.textContent = 'Ready: the download starts. If it does not, '
      var again = document.createElement('a')
      again.href = file
      again.textContent = 'download it here'
      text.appendChild(again)
      text.appendChild(document.createTextNode('.'))
      live.textContent = name + ' is ready: the download starts.'
      window.location.href = file
    })
    source.addEventListener('failed', function (e) {
      var d = {}
      try { d = JSON.parse(e.data) || {} } catch (err) {}
      fail(String(d.message || 'The file could not be prepared.'))
    })
    source.onerror = function () {
      // Refused (a 4xx) or gone for good; a dropped connection is retried by the browser itself.
      if (source && source.readyState === 2) fail('The progress could not be followed: the link below still works.')
    }
  }

  document.addEventListener('click', function (e) {
    var link = e.target && e.target.closest ? e.target.closest('a[data-dl-start]') : null
    if (!link || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return
    e.preventDefault()
    begin(link)
  })
  window.addEventListener('pagehide', stop)
})()
