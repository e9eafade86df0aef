// The social preview's parameters of getLink.json and update.json, its image file and its fields in the record.
import { Type } from '@sinclair/typebox'
import type { ApiParam } from '../web/schema'
import type { ApiFile } from '../web/api'
import { named } from './api-params'
import { OG_IMAGE_BOX, OG_IMAGE_MAX_BYTES, OG_IMAGE_MAX_SIDE } from './og-image'
import { MAX_OG_DESCRIPTION_LENGTH, MAX_OG_TITLE_LENGTH } from './preview'

const CONTROLS = '^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*$'
const CRAWLERS =
  'Slack, Discord, Facebook, X, LinkedIn, WhatsApp, Telegram, Mastodon, iMessage and the bots isbot knows'

function previewText(name: string, max: number, what: string, example: string, onCreate: boolean): ApiParam {
  return {
    name,
    absent: onCreate ? ['', null] : [null],
    schema: Type.String({
      maxLength: max,
      pattern: CONTROLS,
      description: `${what} of the link's social preview: 0 to ${max} characters; ${onCreate ? 'none by default' : '"" removes it'}. A link-preview crawler (${CRAWLERS}) visiting a link with a preview gets a page of Open Graph and Twitter card tags instead of the redirect; people still get the redirect`,
      examples: [example],
    }),
    error: {
      code: 'invalid_parameter',
      messages: {
        type: `${named(name)} must be a string.`,
        maxLength: `${named(name)} is invalid: at most ${max} characters.`,
        default: `${named(name)} is invalid: it must not contain control characters.`,
      },
    },
  }
}

export const ogTitleParam = (onCreate: boolean) =>
  previewText('og_title', MAX_OG_TITLE_LENGTH, 'The title', 'Spring sale: everything half price', onCreate)
export const ogDescriptionParam = (onCreate: boolean) =>
  previewText('og_description', MAX_OG_DESCRIPTION_LENGTH, 'The description', 'Until Sunday, in every shop.', onCreate)

export function ogImageFile(onCreate: boolean): ApiFile {
  return {
    name: 'og_image',
    maxBytes: OG_IMAGE_MAX_BYTES,
    types: ['image/png', 'image/jpeg', 'image/webp'],
    blankKept: !onCreate,
    description:
      `The image of the link's social preview: a PNG, JPEG or WebP file of at most 1 MiB and ${OG_IMAGE_MAX_SIDE}×${OG_IMAGE_MAX_SIDE} pixels, ` +
      `recognised by its bytes; it is decoded and stored anew (a JPEG, or a PNG when it has transparency), fitted in ` +
      `${OG_IMAGE_BOX.width}×${OG_IMAGE_BOX.height} pixels without its metadata, and served from the short domain at the record's og_image` +
      (onCreate ? '' : '. An empty og_image= removes it'),
  }
}

/** The record's preview fields (api-answers.ts). */
export const previewRecordFields = {
  og_title: Type.String({ maxLength: MAX_OG_TITLE_LENGTH, description: 'Its social preview\'s title ("" without)' }),
  og_description: Type.String({
    maxLength: MAX_OG_DESCRIPTION_LENGTH,
    description: 'Its social preview\'s description ("" without)',
  }),
  og_image: Type.Union([Type.String({ format: 'uri' }), Type.Null()], {
    description: "The absolute address of its social preview's image (it changes with the image), or null",
  }),
}
