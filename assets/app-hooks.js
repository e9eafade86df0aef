// A webhook's live delivery log (assets/app.js draws it again from log.json): each event's number links to its
// delivery's page, as in the table the server renders. Without JavaScript the server's links are there already.
;(function () {
  'use strict'
  var box = document.querySelector('[data-live-log][data-endpoint]')
  if (!box || !window.MutationObserver) return
  var endpoint = String(box.getAttribute('data-endpoint')).replace(/[^0-9]/g, '')
  function link() {
    var cells = box.querySelectorAll('td[data-label="Event"]')
    for (var i = 0; i < cells.length; i++) {
      var cell = cells[i]
      if (cell.querySelector('a')) continue
      var id = cell.textContent.replace(/[^0-9]/g, '')
      if (!id) continue
      var a = document.createElement('a')
      a.href = '/dashboard/webhooks/' + endpoint + '/deliveries/' + id
      a.setAttribute('aria-label', 'Event ' + id + ': its delivery in detail')
      a.textContent = id
      cell.replaceChildren(a)
    }
  }
  new MutationObserver(link).observe(box, { childList: true, subtree: true })
  link()
})()
