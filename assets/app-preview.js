// A link's social preview (dashboard, issue 40): the card beside the form is drawn again as the title and
// description are typed and an image is chosen (read as a data: URL, which the page's CSP allows; nothing is sent).
;(function () {
  'use strict'
  var form = document.querySelector('[data-og-form]')
  var card = document.querySelector('[data-og-card]')
  if (!form || !card) return
  var title = card.querySelector('[data-og-card-title]')
  var description = card.querySelector('[data-og-card-description]')
  var image = card.querySelector('[data-og-card-image]')
  var frame = image.parentNode
  var saved = image.getAttribute('src')
  var fields = {
    title: form.querySelector('#og_title'),
    description: form.querySelector('#og_description'),
    file: form.querySelector('#og_image'),
    remove: form.querySelector('#og_remove'),
  }
  function text() {
    title.textContent = fields.title.value.trim() || title.getAttribute('data-fallback')
    description.textContent = fields.description.value.trim()
  }
  function showImage(src) {
    if (src) image.setAttribute('src', src)
    frame.hidden = !src
  }
  function picture() {
    var file = fields.file.files && fields.file.files[0]
    if (file && window.FileReader) {
      var reader = new FileReader()
      reader.onload = function () {
        showImage(String(reader.result))
      }
      reader.readAsDataURL(file)
      return
    }
    showImage(fields.remove && fields.remove.checked ? '' : saved)
  }
  fields.title.addEventListener('input', text)
  fields.description.addEventListener('input', text)
  fields.file.addEventListener('change', picture)
  if (fields.remove) fields.remove.addEventListener('change', picture)
})()
