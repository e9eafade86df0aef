// The links list's bulk selection (issue 38), over a form that works without this script: the rows'
// checkboxes belong to #bulk-form. This adds a shift-click range, "select all on this page" in the table's
// head, the Gmail-like offer to select every link the filter finds, a live count, and the tag field shown
// only for the actions that use it.
;(function () {
  'use strict'
  var form = document.getElementById('bulk-form')
  if (!form) return
  var all = document.getElementById('pick-all')
  var scope = document.getElementById('bulk-scope')
  var count = document.getElementById('bulk-count')
  var banner = document.getElementById('bulk-all')
  var bannerText = document.getElementById('bulk-all-text')
  var bannerButton = document.getElementById('bulk-all-button')
  var action = document.getElementById('bulk-action')
  var tag = document.getElementById('bulk-tag')
  var tagLabel = form.querySelector('.bulk-tag-label')
  var total = Number(form.getAttribute('data-total')) || 0
  var boxes = Array.prototype.slice.call(document.querySelectorAll('input[type=checkbox][form="bulk-form"]'))
  var last = -1
  function n(k, one) { return k.toLocaleString('en-US') + ' ' + one + (k === 1 ? '' : 's') }
  function picked() { return boxes.filter(function (b) { return b.checked }).length }
  function update() {
    var k = picked()
    var everything = scope.value === 'all'
    all.checked = k > 0 && k === boxes.length
    all.indeterminate = k > 0 && k < boxes.length
    form.classList.toggle('has-picks', k > 0)
    count.textContent = everything ? 'All ' + n(total, 'link') + ' that match are selected.'
      : k ? n(k, 'link') + ' selected.' : 'Tick links below, then choose what to do with them.'
    // Every row of this page ticked while the filter finds more: offer them all (or, once taken, the way back).
    var offer = k === boxes.length && total > boxes.length
    banner.hidden = !offer
    if (offer) {
      // Once they are all taken the count above says so: the banner keeps only the way back.
      bannerText.textContent = everything ? '' : 'All ' + n(k, 'link') + ' on this page are selected.'
      bannerButton.textContent = everything ? 'Select only this page' : 'Select all ' + n(total, 'link') + ' that match'
    }
  }
  function showTag() {
    var uses = action.value === 'add-tag' || action.value === 'remove-tag'
    tag.hidden = !uses
    tagLabel.hidden = !uses
    tag.required = uses
  }
  all.hidden = false
  boxes.forEach(function (box, i) {
    box.addEventListener('click', function (ev) {
      // Shift-click: every row between the last one clicked and this one takes this one's state.
      if (ev.shiftKey && last !== -1 && last !== i) {
        var from = Math.min(last, i)
        var to = Math.max(last, i)
        for (var j = from; j <= to; j++) boxes[j].checked = box.checked
      }
      last = i
      if (!box.checked) scope.value = 'page'
      update()
    })
  })
  all.addEventListener('change', function () {
    boxes.forEach(function (b) { b.checked = all.checked })
    if (!all.checked) scope.value = 'page'
    update()
  })
  bannerButton.addEventListener('click', function () {
    scope.value = scope.value === 'all' ? 'page' : 'all'
    update()
    count.focus()
  })
  action.addEventListener('change', showTag)
  count.setAttribute('tabindex', '-1')
  showTag()
  update()
})()
