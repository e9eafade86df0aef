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
  window.linkbox = { init: init }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', function () { init(document) })
  else init(document)
})()
