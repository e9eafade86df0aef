// The preview-image thread (og-image-pool.ts): an upload in, the re-encoded image or the error's fields out.
import { AppError, internalError } from '../kernel/errors'
import { reencode } from './og-image-decode'
import type { OgJob, OgReply } from './og-image-pool'

declare var self: Worker

self.onmessage = async ({ data: { id, upload } }: MessageEvent<OgJob>) => {
  try {
    const image = await reencode(upload)
    self.postMessage({ id, image } satisfies OgReply)
  } catch (err) {
    if (!(err instanceof AppError)) console.error('links: a preview image could not be re-encoded:', err)
    const { status, code, message } = err instanceof AppError ? err : internalError()
    self.postMessage({ id, error: { status, code, message } } satisfies OgReply)
  }
}
